"""The report's figures for the whole run: the summary table, the division, acceptance per content class and
position, and the three questions for judging a benchmark."""

from __future__ import annotations

from specscope.profiler.analysis.verdict import (
    tail_text,
    SAMPLED_NOTE,
    acceptance_phrase,
    ledger_text,
    model_formula,
    rollback_term_text,
    audit_answers,
    divergence_note,
    instrumentation_cost_text,
    ONE_RUN_NOTE,
    prediction_error_text,
)

from .html_figure import chart_figure
from specscope.profiler.analysis.formatting import rate
from specscope.profiler.analysis.intervals import draft_time_text
from specscope.profiler.analysis.formatting import ci, fmt as f, pct
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
         f"one verify forward over {k + 1} positions = {f(s['verify_multiple'], '.2f')} × T_decode; "
         + {"components": "timed apart from the rounds, on a restored cache, beside each pass and spread over each case",
            "verify curve": "from the verify curve (run --roofline): whole-graph forwards timed apart from the rounds"}.get(
             s.get("division_inputs") or "", "mean of this run's instrumented rounds (no components timed apart)")],
        [f"T_draft(k={k})", esc(draft_time_text(s["t_draft_ms"], s.get("t_draft_ms_ci95"), unit=" ms")), f"producing the {k} draft{'s' if k != 1 else ''} of one round"
         + ("; timed apart" if s.get("division_inputs") in ("components", "verify curve") else "")],
        ["Rollback", f(s["t_rollback_ms"], ".3f", " ms"),
         "restoring the caches after a partial round, by accepted count, timed apart; weighted by the run's accepted "
         "counts, in the predicted round" if s.get("division_inputs") == "components"
         else "mean per round of this run's instrumented rounds; not in the division"],
        ["The division", f(s.get("division_speedup"), ".3f", "×"), esc(rollback_term_text(s) or "")]
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
         (f"{esc(model_formula(s))}, timed apart, only E from the run → "
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
        ["Break-even", f"T_verify ≤ {f(s['break_even_verify_ms'], '.2f', ' ms')}"
         if (s.get("break_even_verify_ms") or 0) > 0 else "out of reach",
         (f"≤ {f(s['break_even_multiple'], '.2f')} × T_decode (E·T_decode − T_draft)" if (s.get("break_even_verify_ms") or 0) > 0
          else "T_draft alone exceeds E·T_decode: no verify, however fast, can pay")
         + f"; measured {f(s['verify_multiple'], '.2f')} × T_decode"],
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
                     f"what a block-sum T_decode would predict (vs {f(s['predicted_speedup'] or s.get('ledger_speedup'), '.3f', '×')} from whole-graph times)"])
    formula = ""
    if s.get("predicted_speedup") is not None:
        rb = s.get("t_rollback_ms") if s.get("division_inputs") == "components" else None
        book = s.get("t_bookkeeping_ms") if s.get("division_inputs") == "components" else None
        terms = (f"{s['t_verify_ms']:.2f} + {s['t_draft_ms']:.2f}" + (f" + {rb:.2f}" if rb is not None else "")
                 + (f" + {book:.2f}" if rb is not None and book is not None else ""))
        formula = (
            f'<p class="formula">predicted speedup = {esc(model_formula(s, say_lacks=False))} = '
            f"{s['tokens_per_round']:.3f} × {s['t_decode_ms']:.2f} / ({terms}) = "
            f"{s['predicted_speedup']:.3f}×"
            + (f" (T_draft came out at {s['t_draft_ms']:.2f} ms: below noise, a difference of two timings, used as "
               "measured)" if s["t_draft_ms"] <= 0 else "") + "</p>"
        )
    return "<h2>Summary</h2>" + formula + _table(["Figure", "Value", "What it is"], rows, numeric_from=1, numeric_to=2, cls="full summary")


def division_section(s, charts, target) -> str:
    parts = ["<h2>The division</h2>"]
    if s.get("verify_multiple") is not None:
        vm, be = s["verify_multiple"], s["break_even_multiple"]
        ok = vm <= be
        if be is not None and be <= 0:  # T_draft alone exceeds E·T_decode: no break-even verify to quote ("≤ -1.79 ×")
            parts.append(
                "<p>Speculation pays only while T_verify ≤ E·T_decode − T_draft. Here T_draft alone exceeds E·T_decode, "
                "so the break-even line is out of reach: no verify, however fast, can pay. "
                f'This run\'s verify costs <span class="bad">{vm:.2f} × T_decode</span>.</p>'
            )
        else:
            parts.append(
                f"<p>Speculation pays only while T_verify ≤ E·T_decode − T_draft, here ≤ {be:.2f} × T_decode. "
                f'This run\'s verify costs <span class="{"good" if ok else "bad"}">{vm:.2f} × T_decode</span>, '
                f"so it is {'inside' if ok else 'outside'} the break-even line.</p>"
            )
        if s["k"] == 1 and vm >= 2:
            parts.append("<p>Verifying 2 positions costs two plain steps or more: for k = 1 the speedup is below (1+p)/2 ≤ 1 for every p. No drafter can save it; only a cheaper verify can.</p>")
    parts.append(chart_figure("division", charts, target))
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
