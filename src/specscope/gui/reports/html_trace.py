"""The report's acceptance-trace section: E(k) walked on the traces per content class, and A(s) along every case.

``trace_images(session)`` draws the charts with the app's own chart widgets (``gui.charts.trace``), offscreen;
``trace_section(session, charts, target)`` writes the section (nothing for a session without traces). Image
keys are ``trace_classes`` and ``trace_case-<n>``, so the PDF writer finds them as it finds every chart.
"""

from __future__ import annotations

from specscope.profiler.analysis import trace_walk
from specscope.profiler.analysis.formatting import fmt as f
from specscope.profiler.renderers.html_common import esc
from specscope.profiler.renderers.html_common import table as _table

from . import charts as _charts

CAPTION_CLASSES = ("Tokens per round E(k) from the acceptance traces, per content class (cases pooled): the rounds a "
                   "greedy run at k makes, walked exactly on A(s).")
CAPTION_CASE = ("A(s) along the output of case {case} ({cat}): how many of the drafter's next {k} drafts from each "
                "position agree with the target's own tokens{est}.")


def _cases(session) -> list[dict]:
    return [c for c in session.cases if isinstance(c.get("trace"), dict) and c["trace"].get("A") and not c.get("discarded")]


def trace_images(session, width: int = 900, height: int = 300) -> _charts.Charts:
    out = _charts.Charts()
    cases = _cases(session)
    if not cases:
        return out
    _charts.ensure_app()
    from specscope.gui.charts.common import LIGHT
    from specscope.gui.charts.trace import TraceChart, TraceClassChart, trace_case_data, trace_class_data

    try:
        w = TraceClassChart(LIGHT)
        w.set_data(trace_class_data(session.cases))
        out["trace_classes"] = _charts.widget_png(w, width, int(height * 1.2))
        for i, c in enumerate(cases):
            w = TraceChart(LIGHT)
            w.set_data(trace_case_data(c))
            out[f"trace_case-{i}"] = _charts.widget_png(w, width, height)
    except Exception as exc:  # a missing chart must never cost the whole report
        out.leave_out("trace", exc)
    return out


def trace_section(session, charts: dict, target: str = "screen") -> str:
    cases = _cases(session)
    if not cases:
        return ""
    k_max = min(c["trace"]["k_max"] for c in cases)
    by = trace_walk.by_class(cases, k_max)
    rows = []
    for cat, curve in by.items():
        rows.append([esc(cat), str(curve[0]["traces"])] + [f(x["tokens_per_round"], ".2f") for x in curve])
    estimate = any(c["trace"].get("estimate") for c in cases)
    cost = [c["trace"].get("cost_ms", {}).get("total_ms") for c in cases]
    cost_text = (f" Recording them cost {sum(x for x in cost if x) / 1000:.1f} s in all." if any(cost) else "")
    parts = ["<h2>Acceptance along the text</h2>",
             "<p>For every position s of the target's own output, A(s) is how many of the drafter's next "
             f"{k_max} proposals, chained from the true prefix, agree with it. Walking it (start at s, accept "
             "min(k, A(s)), emit one more, move on) gives the rounds a greedy run at every k makes, exactly; "
             "acceptance depends on the content, and a figure measured on one class says little about another."
             + (" Under sampling the traces are estimates from seeded draws." if estimate else "") + cost_text + "</p>",
             _charts.section_figure("trace_classes", charts, target, CAPTION_CLASSES),
             _table(["class", "cases"] + [f"E({k})" for k in range(1, k_max + 1)], rows)]
    for i, c in enumerate(cases):
        t = c["trace"]
        cap = CAPTION_CASE.format(case=c.get("id", ""), cat=c.get("content_class", ""), k=t["k_max"],
                                  est="; an estimate from seeded draws" if t.get("estimate") else "")
        parts.append(_charts.section_figure(f"trace_case-{i}", charts, target, cap))
    return "".join(parts)
