"""The report's breakdown section: per-block decode vs verify, the two rulers, every time with its
spread over reps; an estimate (barrier-free, inter-block) whose spread reaches zero reads "below noise"."""

from __future__ import annotations

from typing import Any, Mapping

from specscope.profiler.session.records import Summary
from specscope.profiler.analysis.intervals import RULER_BIAS_NOTE, below_noise, noise_state, not_a_time, spread_text, time_text
from specscope.profiler.analysis.formatting import fmt as f, pct
from specscope.profiler.renderers.html_common import esc, table
from specscope.profiler.analysis.summary import BLOCK_LABELS


def _inter_ratio(dec, ver):
    """The inter-block ratio means something only when both overheads are real (positive, above noise)."""
    a, b = dec.get("inter_block_ms"), ver.get("inter_block_ms")
    if a is None or b is None or a <= 0.02 * (dec.get("whole_ms") or 0) or b <= 0:
        return None
    if any(not_a_time(d["inter_block_ms"], (d.get("spread") or {}).get("inter_block_ms")) for d in (dec, ver)):
        return None
    return b / a


def _cell(value, iv, estimate: bool = False) -> str:
    """A time with its spread over reps (small, beneath); an estimate whose spread reaches zero is below noise."""
    text = time_text(value, iv) if estimate else f(value)
    if iv and text != "—" and noise_state(value, iv) not in ("noise", "bias"):
        text += f' <small class="muted">[{esc(spread_text(iv))}]</small>'
    return text


def breakdown_section(s: Summary, figure_html: str) -> str:
    bd = s.get("breakdown")
    parts = ['<h2 class="pagebreak">Where verify time goes</h2>']
    if not bd:
        parts.append("<p class=\"muted\">No per-block breakdown in this session (run with the breakdown on).</p>")
        return "".join(parts)
    dec, ver = bd["decode"], bd["verify"]
    sd, sv = dec.get("spread") or {}, ver.get("spread") or {}
    pos = ver["positions"]
    parts.append(
        f"<p>Decode cost of one position vs verify cost of {pos} positions, per block, median over cases "
        f"(each block timed with a barrier after it); in brackets the spread over reps. A ratio near 1 means the "
        f"weights were read once for all positions; near {pos} means the work was simply repeated per position.</p>"
    )
    has_est = bool(dec.get("skip_estimates"))
    head = ["Block", "Decode (1 pos), ms", f"Verify ({pos} pos), ms", "Verify / decode"]
    if has_est:
        head += ["Decode w/o barriers*", "Verify w/o barriers*"]
    rows, rc = [], {}
    for c in bd["block_order"]:
        label = (bd.get("labels") or {}).get(c) or BLOCK_LABELS.get(c, c)
        r = [esc(label), _cell(dec["blocks"].get(c), (sd.get("blocks") or {}).get(c)),
             _cell(ver["blocks"].get(c), (sv.get("blocks") or {}).get(c)), f(bd["ratios"].get(c), ".2f", "×")]
        if has_est:
            r += [_cell((dec.get("skip_estimates") or {}).get(c), (sd.get("skip_estimates") or {}).get(c), True),
                  _cell((ver.get("skip_estimates") or {}).get(c), (sv.get("skip_estimates") or {}).get(c), True)]
        rows.append(r)
    blank = [""] * (2 if has_est else 0)
    rc[len(rows)] = "ruler total"
    rows.append(["Sum of blocks (ruler 1: barrier-timed)", _cell(dec["block_sum_ms"], sd.get("block_sum_ms")),
                 _cell(ver["block_sum_ms"], sv.get("block_sum_ms")),
                 f(ver["block_sum_ms"] / dec["block_sum_ms"] if dec["block_sum_ms"] else None, ".2f", "×")] + blank)
    rc[len(rows)] = "ruler total"
    rows.append(["Whole graph (ruler 2: no barriers)", _cell(dec["whole_ms"], sd.get("whole_ms")),
                 _cell(ver["whole_ms"], sv.get("whole_ms")), f(bd["ratios"].get("whole"), ".2f", "×")] + blank)
    rc[len(rows)] = "ruler"
    rows.append([esc(BLOCK_LABELS["inter_block"]) + " (whole − sum of blocks)",
                 _cell(dec["inter_block_ms"], sd.get("inter_block_ms"), True),
                 _cell(ver["inter_block_ms"], sv.get("inter_block_ms"), True), f(_inter_ratio(dec, ver), ".2f", "×")] + blank)
    rc[len(rows)] = "ruler"
    rows.append(["Barrier distortion (instrumented / whole − 1)", pct(dec.get("barrier_distortion")), pct(ver.get("barrier_distortion")), ""] + blank)
    parts.append(table(head, rows, row_classes=rc))
    notes = []
    if any(below_noise(d["inter_block_ms"], (d.get("spread") or {}).get("inter_block_ms")) for d in (dec, ver)):
        notes.append("Below noise: the whole graph and the sum of barrier-timed blocks differ by less than their spread "
                     "over reps. Trust the whole-graph ruler.")
    if any(noise_state(d["inter_block_ms"], (d.get("spread") or {}).get("inter_block_ms")) == "bias" for d in (dec, ver)):
        notes.append(RULER_BIAS_NOTE[0].upper() + RULER_BIAS_NOTE[1:] + " (a measured effect, not noise). "
                     "Trust the whole-graph ruler.")
    if has_est:
        notes.append("* Without-barrier estimates: whole-graph time with the block left out, differenced, rep by rep. "
                     "An estimate whose spread reaches zero is shown as below noise, never as a negative time.")
    ref = whole_graph_figure(s)
    if s.get("block_sum_predicted_speedup") is not None and ref:
        notes.append(f"Predicting with the block-sum ruler for T_decode would give {s['block_sum_predicted_speedup']:.3f}× instead of "
                     f"{ref} — which is why specscope predicts from whole-graph times only.")
    parts += [f'<p class="muted">{esc(n)}</p>' for n in notes]
    parts.append(figure_html)
    parts.append(per_rank_section(bd))
    return "".join(parts)


def whole_graph_figure(s) -> str:
    """The whole-graph figure a block-sum ruler is set against: the prediction, or the ledger where it stands in (said
    as the ledger, never passed off as a prediction); "" where there is neither."""
    if s.get("predicted_speedup") is not None:
        return f"{s['predicted_speedup']:.3f}× predicted"
    if s.get("ledger_speedup") is not None:
        return f"{s['ledger_speedup']:.3f}× from the ledger (the run's own rounds), not a prediction"
    return ""


def _rank_ms(x) -> str:
    return "below noise" if x is not None and x <= 0 else f(x)


def per_rank_section(bd: Mapping[str, Any]) -> str:
    """A distributed breakdown: one row per rank (whole graph, compute, communication) for decode and verify, and
    communication's share on both rulers. Empty for a run on one machine."""
    dist = bd.get("distributed")
    dec, ver = bd["decode"], bd["verify"]
    pd, pv = dec.get("per_rank"), ver.get("per_rank")
    if not dist or not pd or not pv:
        return ""
    hosts = dist.get("hosts") or []
    free = pd.get("communication_ruler") == "barrier_free"
    what = (f", {dist['collectives_per_forward']} per forward" if dist.get("collectives_per_forward") else "")
    parts = ["<h3>Per rank: compute and communication</h3>",
             f"<p>{esc(dist.get('ranks'))} ranks ({esc(dist.get('backend'))}, {esc(dist.get('parallelism', 'tensor'))} "
             f"parallel{esc(what)}), median over cases. "
             + esc("Compute is the forward with local stand-ins for the collectives; communication is whole − compute "
                   "(the barrier-free estimate)." if free else "Communication is barrier-timed; compute is whole − communication.")
             + "</p>"]
    head = ["Rank", "Decode whole, ms", "Decode compute", "Decode communication",
            f"Verify ({ver['positions']} pos) whole, ms", "Verify compute", "Verify communication"]
    rows = []
    for i in range(pd["ranks"]):
        name = f"rank {i}" + (f" ({hosts[i]})" if i < len(hosts) and hosts[i] else "")
        rows.append([esc(name), f(pd["whole_ms"][i]), _rank_ms(pd["compute_ms"][i]), _rank_ms(pd["communication_ms"][i]),
                     f(pv["whole_ms"][i]), _rank_ms(pv["compute_ms"][i]), _rank_ms(pv["communication_ms"][i])])
    parts.append(table(head, rows))
    sd, sv = dec.get("communication_share") or {}, ver.get("communication_share") or {}
    parts.append(f'<p class="muted">Communication\'s share of a forward: decode {pct(sd.get("barrier_free"))} barrier-free '
                 f'({pct(sd.get("barrier"))} barrier-timed), verify {pct(sv.get("barrier_free"))} '
                 f'({pct(sv.get("barrier"))}). It barely grows with positions (verify / decode '
                 f'{f(bd["ratios"].get("communication"), ".2f", "×")} barrier-timed), so the more of a forward it is, the '
                 f'lower the whole verify / decode ratio ({f(bd["ratios"].get("whole"), ".2f", "×")}).</p>')
    return "".join(parts)
