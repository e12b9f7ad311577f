"""The report's figures for the whole run: the summary table, the division, acceptance per content class and
position, and the three questions for judging a benchmark."""

from __future__ import annotations

from specscope.profiler.analysis.verdict import (
    tail_text,
    SAMPLED_NOTE,
    acceptance_phrase,
    ledger_text,
    rollback_term_text,
    audit_answers,
    divergence_note,
    instrumentation_cost_text,
    ONE_RUN_NOTE,
    prediction_error_text,
)

from .html_breakdown import whole_graph_figure
from .html_figure import chart_figure
from specscope.profiler.analysis.formatting import rate
from specscope.profiler.analysis.intervals import BELOW_NOISE, draft_time_text
from specscope.profiler.analysis.summary_text import draft_parts_text
from specscope.profiler.analysis.round_model import DIVISION_LABEL, TERMS, RoundModel
from specscope.profiler.analysis.formatting import ci, fmt as f, pct
from specscope.profiler.analysis.tree_text import verify_width
from specscope.profiler.renderers.html_common import esc
from specscope.profiler.renderers.html_common import table as _table


def _speed_cls(x) -> str:
    if x is None:
        return ""
    return "good" if x >= 1 else "bad"


# Up to this many positions a_i are listed in a row's value cell, and as columns beside each content class; a
# block drafter's 15 (DFlash, block size 16) would make the cell, or the table, wider than the page.
POSITIONS_INLINE = 6


def _per_position_row(per_position) -> list[str]:
    what = "share of rounds whose first i drafts were all accepted (measured, not i.i.d.)"
    listed = ", ".join(f"a{i + 1} = {a:.2f}" for i, a in enumerate(per_position or []))
    if len(per_position or []) <= POSITIONS_INLINE:
        return ["Per-position a_i", esc(listed) or "—", what]
    first, last = per_position[0], per_position[-1]
    return ["Per-position a_i", esc(f"a1 = {first:.2f} … a{len(per_position)} = {last:.2f}"),
            f"{what}: {esc(listed)}"]


def summary_section(s) -> str:
    k = s["k"]
    rows = [
        ["Plain decoding", rate(s["plain_tok_s"], " tok/s"),
         "steady state, end to end" + (", pooled over repeats (tokens ÷ time)" if (s.get("repeats") or 1) > 1 else ", one repeat")],
        ["T_decode", f(s["t_decode_ms"], ".2f", " ms"), "1000 / plain tok/s — whole graph, never a sum of blocks"],
        [f"T_verify(k={k})", f(s["t_verify_ms"], ".2f", " ms"),
         f"one verify forward over {verify_width(s)} = {f(s['verify_multiple'], '.2f')} × T_decode; "
         + {"components": "timed apart from the rounds, on a restored cache, beside each pass and spread over each case",
            "verify curve": "from the verify curve (run --roofline): whole-graph forwards timed apart from the rounds"}.get(
             s.get("division_inputs") or "", "mean of this run's instrumented rounds (no components timed apart)")],
        [f"T_draft(k={k})", esc(draft_time_text(s["t_draft_ms"], s.get("t_draft_ms_ci95"), unit=" ms")), (f"drafting one round's tree: the drafter's forward and building the tree (budget {s['tree']['budget']}) on "
          "the host" if s.get("tree") else f"producing the {k} draft{'s' if k != 1 else ''} of one round")
         + ("; timed apart" if s.get("division_inputs") in ("components", "verify curve") else "")],
        ["T_draft in parts", esc(f"{f(parts.get('forward'), '.3f')} + {f(parts.get('walk'), '.3f')} ms"),
         esc(draft_parts_text(parts))] if (parts := s.get("t_draft_parts_ms")) else None,
        ["Rollback", f(s["t_rollback_ms"], ".3f", " ms"),
         "restoring the caches after a partial round, by accepted count, timed apart; weighted by the run's accepted "
         "counts, in the predicted round" if s.get("division_inputs") == "components"
         else "mean per round of this run's instrumented rounds; not in the division"],
        ["The seed's division", f(s.get("division_speedup"), ".3f", "×"), esc(rollback_term_text(s) or "")]
        if rollback_term_text(s) else None,
        ["Bookkeeping", f(s.get("t_bookkeeping_ms"), ".3f", " ms"),
         "the round's work after the read-back but its rollback (the rollback's record, the drafter's update), "
         "timed apart; weighted by the run's accepted counts"] if s.get("t_bookkeeping_ms") is not None else None,
        ["Instrumentation cost", esc(instrumentation_cost_text(s)),
         "end-to-end rounds (one sync per round, as a production engine) vs instrumented rounds (draft, verify and "
         f"rollback timed apart): {rate(s.get('spec_tok_s'), ' tok/s')} vs {rate(s.get('spec_instrumented_tok_s'), ' tok/s')}; "
         "the measured speed is end to end"] if s.get("instrumentation_cost") is not None else None,
        ["Acceptance p", f"{pct(s['p'])}" if s.get("p") is not None else "—",
         esc(acceptance_phrase(s))],
        _per_position_row(s["per_position"]),
        ["Tokens per round E", f(s["tokens_per_round"], ".3f"), "1 + Σ a_i"],
        ["Predicted speedup", f'<span class="{_speed_cls(s["predicted_speedup"])}">{f(s["predicted_speedup"], ".3f", "×")}</span>',
         (f"{esc(s.get('prediction_formula') or '')}, timed apart, only E from the run → "
          f"{rate(s['predicted_tok_s'], ' tok/s')}") if s.get("predicted_speedup") is not None
         else esc(f"not available: {s.get('prediction_unavailable')}")],
        ["Measured speedup", f'<span class="{_speed_cls(s["measured_speedup"])}">{f(s["measured_speedup"], ".3f", "×")}</span>',
         f"speculative {rate(s['spec_tok_s'], ' tok/s')} ÷ plain {rate(s['plain_tok_s'], ' tok/s')}, same prompts and token budget"
         + (f"; over the full rounds {f(s.get('judged_measured_speedup'), '.3f', '×')}, which the prediction meets: "
            + esc(tail_text(s) or "") if tail_text(s) else "")],
        ["Prediction error", esc(prediction_error_text(s) or "—"),
         "(predicted − measured) / measured, with its 95% interval (E, the measured speed and the component timings "
         f"resampled together by {esc(s.get('prediction_unit') or 'unit')}): "
         f"<b>{esc((s.get('prediction_verdict') or {}).get('text') or '—')}</b>"
         + ("; " + esc(ONE_RUN_NOTE[:1].upper() + ONE_RUN_NOTE[1:]).replace("`specscope verdict`",
                                                                          "<code>specscope verdict</code>")
            if s.get("prediction_error_ci") else "")],
        ["Ledger", f(s.get("ledger_speedup"), ".3f", "×"), esc(ledger_text(s) or "no instrumented rounds")]
        if s.get("ledger_speedup") is not None else None,
        ["Break-even", *break_even_cells(s)],
    ]
    rows = [r for r in rows if r is not None]
    if s["regime"] != "greedy":  # outputs differ by design: no match rate, say what is checked instead
        rows.append(["Output check", "sampled", esc(SAMPLED_NOTE)])
    elif s.get("match_rate") is not None:
        note = divergence_note(s)
        rows.append(["Greedy match", pct(s["match_rate"]),
                     "of tokens equal to plain decoding" + (" (all cases identical)" if s.get("all_match") else "")
                     + (f" — {esc(note)}" if note else "")])
    if s.get("block_sum_predicted_speedup") is not None:
        rows.append(["Wrong-ruler prediction", f(s["block_sum_predicted_speedup"], ".3f", "×"),
                     f"what a block-sum T_decode would predict (vs {esc(whole_graph_figure(s) or '—')} from whole-graph times)"])
    formula = ""
    model = RoundModel.from_summary(s)
    if s.get("predicted_speedup") is not None and model is not None:
        # the model's own formula and terms: every timed term in the round, an untimed one named after the value
        timed = [getattr(model, t) for t in TERMS if getattr(model, t) is not None]
        base = model.formula.split(" (", 2)
        written = base[0] + " (" + base[1] if len(base) > 1 else model.formula
        lacks = model.formula[len(written):].strip()
        formula = (
            f'<p class="formula">predicted speedup = {esc(written)} = '
            f"{model.tokens_per_round:.3f} × {model.t_decode_ms:.2f} / ({' + '.join(f'{x:.2f}' for x in timed)}) = "
            f"{s['predicted_speedup']:.3f}×" + (f" {esc(lacks)}" if lacks else "")
            + (" (T_draft came out below noise: a difference of two timings, used as measured)"
               if draft_time_text(s["t_draft_ms"], s.get("t_draft_ms_ci95")) == BELOW_NOISE else "") + "</p>"
        )
    return "<h2>Summary</h2>" + formula + _table(["Figure", "Value", "What it is"], rows, numeric_from=1, numeric_to=2, cls="full summary")


def break_even_cells(s) -> list[str]:
    """The Break-even row's value and note: the whole round's break-even verify (``break_even_formula``), "out of
    reach" where the round's other terms alone reach E·T_decode (``break_even_out_of_reach``)."""
    formula = esc(s.get("break_even_formula") or "—")
    measured = f"; measured {f(s.get('verify_multiple'), '.2f')} × T_decode"
    ledger = "; from the ledger (the run's own rounds), not a prediction" if s.get("division_inputs") == "rounds" else ""
    if s.get("break_even_out_of_reach"):
        return ["out of reach", f"{formula} ≤ 0: no verify, however fast, can pay{measured}{ledger}"]
    if s.get("break_even_verify_ms") is None:
        return ["—", "not measured"]
    return [f"T_verify ≤ {f(s['break_even_verify_ms'], '.2f', ' ms')}",
            f"≤ {f(s['break_even_multiple'], '.2f')} × T_decode ({formula}){measured}{ledger}"]


def division_caption(s) -> str:
    """The Division figure's caption, true to its curve: a prediction's whole round, or the ledger standing in."""
    if s.get("division_inputs") == "rounds":
        return ("The ledger (the run's own rounds), not a prediction: its speedup over the per-position acceptance α "
                "(geometric model) at the run's T_decode, T_verify and T_draft; the markers are the measured run and "
                "its cases (α's 95% interval).")
    return (f"Predicted speedup over the per-position acceptance α (geometric model): the whole round, "
            f"{s.get('prediction_formula') or '—'}, at the measured times; dash-dot: {DIVISION_LABEL}; the markers are "
            "the measured run and its cases (α's 95% interval).")


def division_section(s, charts, target) -> str:
    parts = ["<h2>The division</h2>"]
    if s.get("verify_multiple") is not None:
        vm, be = s["verify_multiple"], s.get("break_even_multiple")
        formula = esc(s.get("break_even_formula") or "E·T_decode − T_draft")
        if s.get("break_even_out_of_reach"):  # no break-even verify to quote ("≤ -1.79 ×")
            parts.append(
                f"<p>Speculation pays only while T_verify ≤ {formula}. Here that is at or below zero, "
                "so the break-even line is out of reach: no verify, however fast, can pay. "
                f'This run\'s verify costs <span class="bad">{vm:.2f} × T_decode</span>.</p>'
            )
        elif be is not None:
            ok = vm <= be
            parts.append(
                f"<p>Speculation pays only while T_verify ≤ {formula}, here ≤ {be:.2f} × T_decode. "
                f'This run\'s verify costs <span class="{"good" if ok else "bad"}">{vm:.2f} × T_decode</span>, '
                f"so it is {'inside' if ok else 'outside'} the break-even line.</p>"
            )
        if s["k"] == 1 and vm >= 2:
            parts.append("<p>Verifying 2 positions costs two plain steps or more: for k = 1 the speedup is below (1+p)/2 ≤ 1 for every p. No drafter can save it; only a cheaper verify can.</p>")
    parts.append(chart_figure("division", charts, target, caption=division_caption(s)))
    parts.append(chart_figure("throughput", charts, target))
    return "".join(parts)


def acceptance_section(s, charts, target) -> str:
    k = s["k"]
    parts = ["<h2>Acceptance</h2>", f"<p>{esc(acceptance_phrase(s))}.</p>"]
    classes = s.get("acceptance_by_content_class") or {}
    positions = {cat: (a["per_position"] if a["rounds"] else [None] * k) for cat, a in classes.items()}
    positions["all"] = s["per_position"] or [None] * k
    inline = k <= POSITIONS_INLINE  # a column per position beside each class; a block drafter's get a table of their own
    head = ["Content", "Rounds", "Drafted", "Accepted", "p", "95% CI", "E (tokens / round)"] + (
        [f"a{i + 1}" for i in range(k)] if inline else [])
    rows = []
    for cat, a in classes.items():
        low = ' <span class="warn">(low sample)</span>' if a.get("low_sample") else ""
        rows.append([esc(cat) + low, str(a["rounds"]), str(a["drafted"]), str(a["accepted"]), pct(a["p"]), ci(a["p_ci95"]),
                     f(a["tokens_per_round"], ".3f")] + ([f(x, ".2f") for x in positions[cat]] if inline else []))
    rows.append(["<b>all</b>", str(sum(a["rounds"] for a in classes.values())),
                 str(s["drafted"]), str(s["accepted"]), pct(s["p"]), ci(s["p_ci95"]), f(s["tokens_per_round"], ".3f")]
                + ([f(x, ".2f") for x in positions["all"]] if inline else []))
    if inline:
        parts.append("<h3>Per content class and per position</h3>")
        parts.append(_table(head, rows, row_classes={len(rows) - 1: "total"}))
    else:
        parts.append("<h3>Per content class</h3>")
        parts.append(_table(head, rows, row_classes={len(rows) - 1: "total"}))
        parts.append(f"<h3>Per position (k = {k})</h3>")
        cols = list(positions)
        pos_rows = [[f"a{i + 1}"] + [f(positions[c][i] if i < len(positions[c]) else None, ".2f") for c in cols]
                    for i in range(k)]
        parts.append(_table(["Position"] + [esc(c) if c != "all" else "<b>all</b>" for c in cols], pos_rows,
                            cls="positions"))
    parts.append(f'<p class="muted">Regime: {esc(s["regime"])}. a_i is the share of rounds whose first i drafts were all '
                 "accepted; greedy and sampled acceptance are not comparable.</p>")
    parts.append(chart_figure("acceptance", charts, target))
    parts.append(chart_figure("tokens_per_round", charts, target))
    return "".join(parts)


def audit_section(s) -> str:
    items = "".join(f"<dt>{esc(q)}</dt><dd>{esc(a)}</dd>" for q, a in audit_answers(s))
    return (
        "<h2>Judging a benchmark: the three questions</h2>"
        "<p>Answered for this run; ask the same of any quoted speculative-decoding number.</p>"
        f'<dl class="audit">{items}</dl>'
    )
