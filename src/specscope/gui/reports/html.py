"""HTML report: one self-contained file (inline CSS, charts as data: PNG, no scripts, no URLs).

``build(session, charts, target)`` writes the same report for two engines:
``"screen"`` for browsers (this module's ``render``) and ``"print"`` for Qt's
rich-text engine, which ``gui.reports.pdf`` paginates into a PDF. Every string
that came from a prompt, the model, a path or an error goes through ``esc``
(home directory replaced by ``~``, then HTML-escaped). This module assembles the report;
its sections are written by the ``html_*`` siblings.
"""

from __future__ import annotations

import datetime as _dt

from . import charts as _charts
from .html_breakdown import breakdown_section
from .html_context import context_images, context_section
from .html_cost import prediction_paragraph, tune_section, verify_cost_section
from .html_trees import tree_images, trees_section
from .html_preflight import preflight_section
from .html_protocol import protocol_section
from .html_energy import energy_section
from .html_trace import trace_images, trace_section
from .html_tree import tree_section
from .html_content import by_content_section
from .html_cases import cases_section, outputs_section
from .html_figure import chart_figure
from .html_header import environment_section, header_section, sweep_only, verdict_section
from . import html_measurement
from .html_summary import acceptance_section, audit_section, division_section, summary_section
from specscope.profiler.analysis.summary import summarize
from specscope.profiler.renderers.html_common import PRINT_CSS, SCREEN_CSS, esc


def collect_charts(session, names=_charts.NAMES, width=900, height=420) -> _charts.Charts:
    have = {"verify_cost": session.data.get("roofline"), "tune": session.data.get("tune"), "probe": session.data.get("probe")}
    if sweep_only(session):  # no run of its own to draw: the clock probe over the whole sweep, and the sweep's charts
        names = [n for n in names if n == "probe"]
    elif html_measurement.measurement_only(session):  # a page's measurement: its own charts only
        names = [n for n in names if n in ("verify_cost", "tune", "probe")]
    out = _charts.Charts()
    for n in names:
        if have.get(n, True):
            # the division's legend and terms sit under its plot (inside, they covered the curves): a taller canvas
            _charts.draw(out, n, session, width=width, height=int(height * 1.5) if n == "division" else height)
    out.merge(trace_images(session, width=width, height=int(height * 0.6)))  # acceptance traces, when held
    out.merge(tree_images(session, width=width, height=int(height * 0.9)))  # a roofline's cost surface, when held
    return out.merge(context_images(session, width=width, height=int(height * 0.9)))  # a context sweep, when held


def build(session, charts: dict | None = None, target: str = "screen") -> str:
    """The report as HTML for ``target`` "screen" (browsers) or "print" (Qt rich text → PDF)."""
    charts = charts if charts is not None else {}
    s = summarize(session)
    title = f"specscope report — {html_measurement.model_name(session) or 'session'}"
    css = SCREEN_CSS if target == "screen" else PRINT_CSS
    probe = chart_figure("probe", charts, target) if session.data.get("probe") else ""
    if sweep_only(session):  # a sweep: its figures are per context; the run sections would all be empty
        parts = [header_section(session, s), verdict_section(s, target, session), environment_section(session, target),
                 preflight_section(session), context_section(session, charts, target), protocol_section(session, s) + probe]
    elif html_measurement.measurement_only(session):  # a page's measurement: no run, no verdict, its own sections
        parts = [html_measurement.header(session), html_measurement.verdict(session, target),
                 html_measurement.environment(session, target),
                 preflight_section(session) if (session.data.get("preflight") or {}).get("checks") else "",
                 verify_cost_section(session, chart_figure("verify_cost", charts, target) if session.data.get("roofline") else "")
                 + trees_section(session, charts, target),
                 tune_section(session, chart_figure("tune", charts, target) if session.data.get("tune") else ""), probe]
    else:
        parts = [
            header_section(session, s),
            verdict_section(s, target),
            environment_section(session, target),
            preflight_section(session),
            summary_section(s),
            protocol_section(session, s) + probe,
            energy_section(s["energy"], s.get("measured_speedup")),
            division_section(s, charts, target) + prediction_paragraph(session, s),
            breakdown_section(s, chart_figure("breakdown", charts, target)),
            verify_cost_section(session, chart_figure("verify_cost", charts, target) if session.data.get("roofline") else "")
            + trees_section(session, charts, target),
            tune_section(session, chart_figure("tune", charts, target) if session.data.get("tune") else ""),
            acceptance_section(s, charts, target),
            tree_section(session, s),
            by_content_section(session),
            trace_section(session, charts, target),
            context_section(session, charts, target),  # a run that also holds a sweep
            audit_section(s),
            cases_section(session),
            outputs_section(session, target),
        ]
    body = "".join(parts)
    stamp = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    foot = (f'<footer><p class="muted">Generated by specscope on {esc(stamp)} from a saved session; '
            "charts drawn by the app's own chart code. Predictions use whole-graph times only.</p></footer>")
    if target == "print":
        return f"<html><head><meta charset=\"utf-8\"><title>{esc(title)}</title></head><body>{body}{foot}</body></html>"
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\">"
        f"<title>{esc(title)}</title><style>{css}</style></head><body><main>{body}{foot}</main></body></html>\n"
    )


def render(session) -> str:
    return render_with_warnings(session)[0]


def render_with_warnings(session) -> tuple[str, list[str]]:
    """The report, and the charts it had to leave out and why (the report says so too)."""
    charts = collect_charts(session)
    return build(session, charts, target="screen"), charts.warnings()

