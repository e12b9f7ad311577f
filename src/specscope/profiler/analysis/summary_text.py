"""The plain-text summary table ``specscope run`` prints at the end."""

from __future__ import annotations

from typing import Any, Mapping

from specscope.profiler.session.records import DraftParts, Summary, drafter_label
from specscope.profiler.analysis.drift import drift_phrase, drift_warning
from specscope.profiler.analysis.energy import energy_text
from specscope.profiler.analysis.formatting import fmt, rate, scaled
from specscope.profiler.analysis.intervals import draft_time_text, not_a_time, spread_text, time_text
from specscope.profiler.session.session import Session
from specscope.profiler.analysis.prediction import for_session, prediction_text
from specscope.profiler.analysis.summary import BLOCK_LABELS, summarize
from specscope.profiler.analysis.tree_text import budget_what_if_lines, tree_lines
from specscope.profiler.analysis.verdict import (
    ONE_RUN_NOTE,
    SAMPLED_NOTE,
    tail_text,
    acceptance_phrase,
    break_even_text,
    ledger_text,
    prediction_short,
    model_formula,
    rollback_term_text,
    divergence_note,
    engine_fault_line,
    instrumentation_cost_text,
    prediction_error_text,
    verdict,
)


def _components_cost(session) -> str:
    """What timing the prediction's components apart cost the run (engine_adapter.measure.components)."""
    ms = [c["components"]["wall_ms"] for c in session.cases if (c.get("components") or {}).get("wall_ms") is not None]
    return f"; cost {sum(ms) / 1000:.1f} s over {len(ms)} cases" if ms else ""


def _spread(iv, spec: str = ".1f") -> str:
    return f" (repeats {spread_text(iv, spec)})" if iv else ""


def _cell(value, iv, estimate: bool = False, width: int = 22) -> str:
    """A breakdown time with its spread over reps; an estimate whose spread reaches zero is "below noise"."""
    if estimate:
        text = time_text(value, iv)
        if text != "—" and iv and not not_a_time(value, iv):
            text += f" [{spread_text(iv)}]"
    else:
        text = fmt(value) + (f" [{spread_text(iv)}]" if iv else "")
    return f"{text:>{width}}"


def protocol_lines(session: Session, s: Summary) -> list[str]:
    """How the run guarded against drift: order, repeats, discards, cooldown, the probe, the sensors."""
    cfg = session.config
    env = session.data.get("environment", {})
    reps = cfg.get("repeats", 1) or 1
    bits = [f"{reps} repeat{'s' if reps != 1 else ''} per case" + (", plain and speculative in ABBA order" if reps > 1 else "")]
    if s.get("cases_discarded"):
        bits.append(f"first {s['cases_discarded']} case{'s' if s['cases_discarded'] != 1 else ''} discarded (kept, not summarized)")
    cool = session.data.get("cooldowns") or []
    if cfg.get("cooldown"):
        missed = sum(1 for c in cool if not c.get("reached"))
        bits.append(f"cooldown before each case ({sum(c.get('waited_s') or 0 for c in cool):.0f} s waited"
                    + (f", {missed} timed out" if missed else "") + ")")
    lines = ["  protocol          " + "; ".join(bits)]
    if not drift_warning(s.get("probe")):  # a warning is printed under the verdict already
        lines.append("  " + drift_phrase(s.get("probe")))
    sensors = env.get("sensors") or {}
    lines += energy_text(s["energy"], s.get("measured_speedup"))
    if sensors.get("thermal"):
        lines.append(f"  thermal limits    {sensors['thermal'] if not session.data.get('thermal') else _thermal(session)}")
    return lines


def _thermal(session: Session) -> str:
    limited = [t for t in session.data.get("thermal") or [] if any(v < 100 for k, v in (t.get("limits") or {}).items()
                                                                     if k.endswith("Limit"))]
    if not limited:
        return f"pmset -g therm: no limit in force ({len(session.data.get('thermal') or [])} readings)"
    t = limited[0]
    return f"pmset -g therm: limited at case {t.get('case')} ({t.get('when')}): " + ", ".join(
        f"{k} = {v}" for k, v in t["limits"].items())



def format_summary(session: Session) -> str:
    from specscope.profiler.analysis.by_block import opened_lines

    s = summarize(session)
    lines = _header_lines(session, s) + _figure_lines(session, s) + _output_check_lines(s)
    lines += budget_what_if_lines(session, s)
    lines += protocol_lines(session, s)
    lines += by_content_lines(session, s)
    lines += _breakdown_lines(s)
    lines += opened_lines(session)  # another engine's own forwards by block (analysis.by_block)
    return "\n".join(lines)


def by_content_lines(session: Session, s: Summary) -> list[str]:
    """Per content class: acceptance and tokens per round with their intervals, and the speedup the class would get
    (each class its own summary: ``by_content``); the classes that differ. ``specscope content`` puts drafters side
    by side."""
    if not s["acceptance_by_content_class"] or session.data.get("sweep"):
        return []
    from specscope.profiler.analysis.by_content import content_table
    from specscope.profiler.analysis.formatting import ci

    t = content_table([session], ["this run"])
    lines = ["  by content        (each class its own summary; `specscope content` puts drafters side by side)"]
    for r in t["rows"]:
        iv = r["tokens_per_round_ci95"]
        p = "" if s.get("tree") else f"p {fmt(r['p'], '.1%')} ({ci(r['p_ci95'])})   "  # a tree's acceptance is E
        lines.append(f"    {r['content_class']:<6} {p}E {fmt(r['tokens_per_round'])}"
                     f" ({'–'.join(format(x, '.2f') for x in iv) if iv else '—'})   predicted "
                     f"{fmt(r['predicted_speedup'], '.3f', '×')}   measured {fmt(r['measured_speedup'], '.3f', '×')}"
                     f"   {_sample(s, r)} over {r['cases']} case{'s' if r['cases'] != 1 else ''}")
    differ = t["drafters"][0]["differ"]
    lines.append("    classes differ: " + ", ".join(f"{a} vs {b}" for a, b in differ) if differ else
                 "    no two classes differ: their tokens-per-round intervals overlap")
    return lines


def _sample(s: Summary, r) -> str:
    """A content row's sample: drafted tokens (a chain), rounds (a tree: its drafted count is depth × rounds)."""
    return f"{r['drafted'] // max(s['k'], 1)} tree rounds" if s.get("tree") else f"{r['drafted']} drafted"


def draft_parts_text(parts: DraftParts) -> str:
    """A draft timed alone, by part: DFlash2's forward (with its top K) and the candidate selector's walk."""
    fwd, walk = parts.get("forward"), parts.get("walk")
    total = (fwd or 0.0) + (walk or 0.0)
    share = f" ({walk / total:.0%} of the draft)" if walk is not None and total > 0 else ""
    return (f"forward {fmt(fwd, '.3f')} ms + selector walk {fmt(walk, '.3f')} ms{share}, a draft timed alone; "
            "the walk picks one position after another")


def _header_lines(session: Session, s: Summary) -> list[str]:
    """Which model, on what, with which drafter and engine; the demo's and the cast's caveats."""
    cfg = session.config
    env = session.data.get("environment", {})
    model = session.data.get("model", {})
    lines = [
        f"specscope — {model.get('name', '?')}{' @ ' + model['revision'][:7] if model.get('revision') else ''} on {env.get('device_name', '?')} ({env.get('chip', '')}), mlx {env.get('mlx', '?')}",
        f"drafter {drafter_label(cfg)}, k={s['k']}{', tree budget ' + str(cfg['tree_budget']) if cfg.get('tree_budget') else ''}, {s['regime']}, {s['cases_measured']} cases"
        f"{' (+' + str(s['cases_discarded']) + ' discarded)' if s.get('cases_discarded') else ''} × {cfg.get('max_tokens')} tokens, status {session.status}",
    ]
    if (model.get("demo")):
        from specscope.demo_labels import TRAINED_NOTE, demo_kind

        lines.append(TRAINED_NOTE if demo_kind(model["demo"]) == "trained"
                     else "synthetic demo model: timings are real; text and acceptance are not meaningful")
    if model.get("compute_dtype"):  # --dtype: what was measured is not the checkpoint's own arithmetic
        lines.append(f"compute dtype {model['compute_dtype']}: floating parameters cast on load (--dtype); the timings "
                     "are this cast's, not necessarily the checkpoint's own dtype's")
    line = engine_line(cfg)
    if line:
        lines.append(line)
    comp = cfg.get("compatibility") or {}
    if comp.get("class") and comp["class"] != "supported":
        lines.append(f"compatibility: {comp['class']} — " + "; ".join(comp.get("reasons") or []))
    return lines


def _figure_lines(session: Session, s: Summary) -> list[str]:
    """The verdict (an engine fault fenced), then the speeds, the division's terms, acceptance, the speedup and the
    prediction, break-even and the ledger."""
    cfg = session.config
    bar = ["!" * 80] if engine_fault_line(s) else []  # an engine fault leads the verdict, fenced
    drift = drift_warning(s.get("probe"))
    return [
        "",
        *bar,
        verdict(s),
        *bar,
        *(["", "!! " + drift] if drift else []),
        "",
        f"  plain             {rate(s['plain_tok_s'])} tok/s{_spread(s.get('plain_tok_s_spread'))}    T_decode  {fmt(s['t_decode_ms'])} ms",
        f"  speculative       {rate(s['spec_tok_s'])} tok/s{_spread(s.get('spec_tok_s_spread'))}    T_verify  {fmt(s['t_verify_ms'])} ms   T_draft {draft_time_text(s['t_draft_ms'], s.get('t_draft_ms_ci95'), unit=' ms')}   rollback {fmt(s['t_rollback_ms'], '.3f')} ms",
        *([f"  draft in parts    {draft_parts_text(parts)}"] if (parts := s.get("t_draft_parts_ms")) else []),
        *([f"  instrumentation   end-to-end rounds {rate(s['spec_tok_s'])} tok/s vs instrumented rounds "
           f"{rate(s['spec_instrumented_tok_s'])} tok/s: timing draft, verify and rollback apart costs "
           f"{instrumentation_cost_text(s)} (the measured speed is end to end)"]
          if s.get("instrumentation_cost") is not None else []),
        f"  {acceptance_phrase(s)}",
        f"  tokens per round  {fmt(s['tokens_per_round'], '.3f')}{_e_interval(s)}   "
        + ("share of paths reaching depth i: " if s.get("tree") else "per position a_i: ")
        + ", ".join(f"{a:.2f}" for a in s["per_position"]),
        *tree_lines(s),
        f"  speedup           predicted {fmt(s['predicted_speedup'], '.3f', '×')}   measured {fmt(s['measured_speedup'], '.3f', '×')}"
        f"{_spread(s.get('measured_speedup_spread'), '.3f')}{_judged(s)}   error {prediction_error_text(s) or '—'}"
        f"   → {prediction_short(s)}",
        *([f"  full rounds       {tail_text(s)}"] if tail_text(s) else []),
        *([f"  one run           {ONE_RUN_NOTE}"] if s.get("prediction_error_ci") else []),
        "  prediction        " + (f"{model_formula(s)}, timed apart from the rounds "
                                   f"({s['prediction_source']}{_components_cost(session)}), only E from the run"
                                   + (f"; rollback never timed after {', '.join(map(str, s['rollback_untimed_counts']))} "
                                      "accepted draft(s), so T_rollback has no figure" if s.get("rollback_untimed_counts") else "")
                                   if s.get("predicted_speedup") is not None
                                   else f"not available: {s.get('prediction_unavailable')}"),
        *([f"  the division      {rollback_term_text(s)}"] if rollback_term_text(s) else []),
        f"  break-even        {break_even_text(s)}",
        *([f"  ledger            {ledger_text(s)}"] if ledger_text(s)
          else [f"  ledger            not reported by this engine ({engine_line_name(cfg)}: it does "
                "not time its rounds' parts)"] if engine_line(cfg) else []),
        *([f"  verify curve      {prediction_text(for_session(session, s))}"] if session.data.get("roofline") else []),
    ]


def _output_check_lines(s: Summary) -> list[str]:
    """Greedy: how many tokens equal plain decoding, and any divergence; sampled: what is checked instead."""
    lines = []
    if s["regime"] == "greedy":
        lines.append(f"  greedy match      {fmt(None if s['match_rate'] is None else s['match_rate'] * 100, '.1f', '%')} of tokens equal to plain")
        note = divergence_note(s)
        if note:
            lines.append(f"  divergence        {note}")
    else:  # sampled outputs differ from plain by design: no match rate, say what is checked instead
        lines.append(f"  output check      {SAMPLED_NOTE}")
    return lines


def _breakdown_lines(s: Summary) -> list[str]:
    """Where time goes, block by block, decode beside verify (when the run measured a breakdown)."""
    lines: list[str] = []
    bd = s.get("breakdown")
    if not bd:
        return lines
    dec, ver = bd["decode"], bd["verify"]
    sd, sv = dec.get("spread") or {}, ver.get("spread") or {}
    lines += ["", "  where time goes (median over cases; ms, [spread over reps])",
              f"    {'':<40} {'decode (1 pos)':>22} {'verify (' + str(ver['positions']) + ' pos)':>22}   ratio"]
    for c in bd["block_order"]:
        label = bd["labels"].get(c) or BLOCK_LABELS.get(c, c)
        r = bd["ratios"].get(c)
        lines.append(f"    {label:<40} {_cell(dec['blocks'][c], (sd.get('blocks') or {}).get(c))} "
                     f"{_cell(ver['blocks'][c], (sv.get('blocks') or {}).get(c))}   {fmt(r, '.2f', '×'):>6}")
    lines.append(f"    {'sum of blocks (barriers)':<40} {_cell(dec['block_sum_ms'], sd.get('block_sum_ms'))} "
                 f"{_cell(ver['block_sum_ms'], sv.get('block_sum_ms'))}")
    lines.append(f"    {'whole graph (no barriers)':<40} {_cell(dec['whole_ms'], sd.get('whole_ms'))} "
                 f"{_cell(ver['whole_ms'], sv.get('whole_ms'))}   {fmt(bd['ratios'].get('whole'), '.2f', '×'):>6}")
    lines.append(f"    {'inter-block overhead (whole − blocks)':<40} {_cell(dec['inter_block_ms'], sd.get('inter_block_ms'), True)} "
                 f"{_cell(ver['inter_block_ms'], sv.get('inter_block_ms'), True)}")
    # None where the whole graph timed 0 ms (aggregate_breakdown): a dash, not a crash
    lines.append(f"    {'barrier distortion (instrumented/whole)':<40} "
                 f"{fmt(scaled(dec['barrier_distortion'], 100), '.1f', '%'):>22} "
                 f"{fmt(scaled(ver['barrier_distortion'], 100), '.1f', '%'):>22}")
    if dec["skip_estimates"]:
        lines.append("    without barriers (whole graph minus the graph with one block skipped):")
        for c in dec["skip_estimates"]:
            label = bd["labels"].get(c) or BLOCK_LABELS.get(c, c)
            lines.append(f"      {'skipped: ' + label:<38} {_cell(dec['skip_estimates'].get(c), (sd.get('skip_estimates') or {}).get(c), True)} "
                         f"{_cell(ver['skip_estimates'].get(c), (sv.get('skip_estimates') or {}).get(c), True)}")
    lines += rank_lines(bd)
    if s.get("block_sum_predicted_speedup") is not None:
        whole, what = ((s["predicted_speedup"], "the prediction") if s.get("predicted_speedup") is not None
                       else (s.get("ledger_speedup"), "the ledger (the run's own rounds, not a prediction)"))
        lines.append(f"    a block-sum T_decode would give {s['block_sum_predicted_speedup']:.3f}× (wrong ruler) vs "
                     f"{fmt(whole, '.3f', '×')} from whole-graph times ({what})")
    return lines


def _ms(x) -> str:
    return "below noise" if x is not None and x <= 0 else fmt(x)


def _pct(x) -> str:
    return "below noise" if x is not None and x <= 0 else fmt(x and x * 100, ".0f", "%")


def rank_lines(bd: Mapping[str, Any]) -> list[str]:
    """A distributed breakdown: one row per rank (whole graph, compute, communication) for decode and verify, and
    communication's share of each on both rulers; nothing for a run on one machine."""
    dist = bd.get("distributed")
    dec, ver = bd["decode"], bd["verify"]
    pd, pv = dec.get("per_rank"), ver.get("per_rank")
    if not dist or not pd or not pv:
        return []
    hosts = dist.get("hosts") or []
    free = pd.get("communication_ruler") == "barrier_free"
    lines = ["", f"  per rank ({dist.get('ranks')} ranks, {dist.get('backend')}, {dist.get('parallelism', 'tensor')} parallel"
             + (f", {dist['collectives_per_forward']} per forward" if dist.get("collectives_per_forward") else "")
             + "; median over cases, ms)",
             "    compute = " + ("the forward with local stand-ins for the collectives; communication = whole − compute"
                                 if free else "whole − communication (barrier-timed)"),
             f"    {'':<16} {'decode whole':>13} {'compute':>12} {'comm.':>12}   {'verify whole':>13} {'compute':>12} {'comm.':>12}"]
    for i in range(pd["ranks"]):
        name = f"rank {i}" + (f" ({hosts[i]})" if i < len(hosts) and hosts[i] else "")
        lines.append(f"    {name:<16} {fmt(pd['whole_ms'][i]):>13} {_ms(pd['compute_ms'][i]):>12} {_ms(pd['communication_ms'][i]):>12}   "
                     f"{fmt(pv['whole_ms'][i]):>13} {_ms(pv['compute_ms'][i]):>12} {_ms(pv['communication_ms'][i]):>12}")
    sd, sv = dec.get("communication_share") or {}, ver.get("communication_share") or {}
    lines.append(f"    communication's share: decode {_pct(sd.get('barrier_free'))} barrier-free ({_pct(sd.get('barrier'))} "
                 f"barrier-timed), verify {_pct(sv.get('barrier_free'))} ({_pct(sv.get('barrier'))})")
    return lines


def engine_line(cfg: dict) -> str:
    """Whose speculative loop ran, when it is not specscope's, and what it does not report ("" for specscope's)."""
    from specscope.profiler.session.records import engine_facts

    eng = engine_facts(cfg)
    if eng["name"] == "specscope":
        return ""
    missing = ", ".join(x.removesuffix("_ms") for x in eng.get("not_reported") or []) or "nothing"
    return (f"engine {eng['name']} {eng.get('version', '')}".rstrip() + f": its own speculative loop, end to end; "
            f"not reported by this engine: {missing} (plain decoding, the components timed apart and the parity "
            "check are specscope's)")


def engine_line_name(cfg: dict) -> str:
    from specscope.profiler.session.records import engine_facts

    return engine_facts(cfg)["name"]


def _e_interval(s: Summary) -> str:
    """A tree run's tokens per round carries its interval (its acceptance is that figure; a chain's is p)."""
    iv = s.get("tokens_per_round_ci95")
    return f" (95% CI {iv[0]:.2f}–{iv[1]:.2f})" if s.get("tree") and iv else ""


def _judged(s: Summary) -> str:
    return f" (full rounds {fmt(s.get('judged_measured_speedup'), '.3f', '×')})" if tail_text(s) else ""

