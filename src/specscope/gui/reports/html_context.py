"""The report's Long context section: a sweep's charts (the Context page's, drawn by its own chart widget from its own
data function) and its table per context. Nothing for a session without a sweep.

``context_images(session)`` draws the four charts offscreen (keys ``context_speedup``, ``context_verify``,
``context_split``, ``context_acceptance``, so the PDF writer finds them as it finds every chart);
``context_section(session, charts, target)`` writes the section. Figures per context come from
``profiler.analysis.sweep.sweep_figures``: every number recomputed from the points' own sessions.
"""

from __future__ import annotations

from typing import Any, Mapping

from specscope.profiler.analysis.formatting import fmt as f, mib, pct
from specscope.profiler.analysis.intervals import draft_time_text
from specscope.profiler.renderers.html_common import esc
from specscope.profiler.renderers.html_common import table as _table
from specscope.profiler.analysis.sweep import draft_is_noise, dominant_effect, point_break_even_text, sweep_figures
from specscope.profiler.session.measured import SweepPointFigures

from . import charts as _charts

CHARTS = (
    ("speedup", "Speedup vs context", ("speedup over plain decoding", "×"),
     "Speedup over plain decoding per context: predicted (the whole round, components timed apart) and measured with "
     "its 95% interval (cases as units, or blocks of steps with few cases); the line is break-even (1×)."),
    ("verify", "Verify and draft cost vs context", ("multiple of T_decode", "×"),
     "T_verify(k+1) and T_draft in units of the context's own T_decode, and the break-even T_verify of the whole "
     "round (E·T_decode less every other timed term; none where that is at or below zero: out of reach). A T_draft "
     "below 0 is noise (a round less the verify timed before it), drawn as measured."),
    ("split", "Decode step by block vs context", ("share of the block sum", "%"),
     "One decode step by block (barrier-timed), as shares of the block sum: full attention reads a KV cache that grows "
     "with the context; the Gated DeltaNet state does not."),
    ("acceptance", "Acceptance vs context", ("per-token acceptance p", ""),
     "Per-token acceptance p per context with its 95% interval (the round as the unit)."),
)


def _rows(session) -> list[SweepPointFigures]:
    return sweep_figures(session) if (session.data.get("sweep") or {}).get("points") else []


def context_images(session, width: int = 900, height: int = 380) -> _charts.Charts:
    out = _charts.Charts()
    rows = _rows(session)
    if not rows:
        return out
    _charts.ensure_app()
    from specscope.gui.charts.common import LIGHT
    from specscope.gui.charts.context import ContextChart
    from specscope.gui.views.context import chart_data  # what the Context page draws

    panels: Mapping[str, Any] = chart_data(rows)  # a panel per chart, by the chart's name
    try:
        for key, title, ylabel, _cap in CHARTS:
            w = ContextChart(LIGHT, title, ylabel)
            w.set_data(panels[key])
            out[f"context_{key}"] = _charts.widget_png(w, width, height)
    except Exception as exc:  # a missing chart must never cost the whole report
        out.leave_out("context", exc)
    return out


def size(n: int) -> str:
    return f"{n // 1024}k" if n and n % 1024 == 0 else str(n)


def _iv(iv, spec: str) -> str:
    if not (isinstance(iv, (list, tuple)) and len(iv) == 2):
        return "—"
    sep = " to " if any(isinstance(x, (int, float)) and x < 0 for x in iv) else "–"  # never "-140–-12"
    return f"{f(iv[0], spec)}{sep}{f(iv[1], spec)}".replace("-", "−")


def _draft(r: SweepPointFigures) -> str:
    """T_draft, or "below noise" (never a negative time: ``draft_time_text``), starred to the note under the table."""
    text = draft_time_text(r.get("t_draft_ms"), r.get("t_draft_ms_ci95"), ".1f")
    if draft_is_noise(r):
        return f'<span class="warn">{text}*</span>'
    return text


def formula_text(rows: list[SweepPointFigures]) -> str:
    """What "predicted" is at each context: the points' own formula where they give it, else the whole round."""
    formulas = {r["prediction_formula"] for r in rows if r.get("prediction_formula")}
    if len(formulas) == 1:
        return f"Predicted = {formulas.pop()} at each context."
    return ("Predicted = the whole round at each context, E·T_decode over T_verify + T_draft + T_rollback + "
            "T_bookkeeping, each where it was timed apart (the summary's prediction of the point's own session).")


def _speed(x) -> str:
    if x is None:
        return "—"
    return f'<span class="{"good" if x >= 1 else "bad"}">{f(x, ".2f", "×")}</span>'


def context_section(session, charts: dict, target: str = "screen") -> str:
    rows = _rows(session)
    if not rows:
        return ""
    sw = session.data.get("sweep") or {}
    kind = sw.get("file") and f"the file {sw['file']}" or f"the shipped documents ({sw.get('kind') or 'mixed'})"
    order = ", ".join(size(c) for c in (sw.get("order") or []))
    parts = ['<h2 class="pagebreak">Long context</h2>',
             f"<p>The protocol at each context (same cases, k and drafter): the context, from {esc(kind)}, is put before "
             "every case's prompt, prefilled once per context and timed on its own (column “context prefill”), and every case and "
             "both modes start from a copy of its caches, so no decode, verify or draft figure holds it. "
             + (f"Order of visits: {esc(order)} (mirrored, so a drift of the machine cannot pass for a context effect)."
                if order else "") + "</p>"]
    effect = dominant_effect(rows)
    if effect:
        parts.append(f"<p><b>{esc(effect[0].upper() + effect[1:])}</b></p>")
    for key, _title, _y, cap in CHARTS:
        parts.append(_charts.section_figure(f"context_{key}", charts, target, cap))
    speed = []
    split = []
    for r in rows:
        fa = r.get("full_attention_share_decode"), r.get("full_attention_share_verify")
        pre = "—" if not r["context"] else f((ms := r.get("prefill_ms")) and ms / 1000, ".1f", " s")
        if r["context"] and r.get("prefill_tok_s"):
            pre += f", {f(r['prefill_tok_s'], '.0f')} tok/s"
        speed.append([size(r["context"]), f(r.get("plain_tok_s"), ".2f"), f(r.get("spec_tok_s"), ".2f"),
                      f(r.get("t_decode_ms"), ".1f"), f(r.get("verify_multiple"), ".2f", "×"), _draft(r),
                      pct(fa[0], 0), pct(fa[1], 0), mib(r.get("kv_bytes_per_step")) if r.get("kv_bytes_per_step") else "0"])
        split.append([size(r["context"]), f"{pct(r.get('p'))} ({_iv([x and 100 * x for x in r.get('p_ci95') or []], '.0f')}%)"
                      if r.get("p_ci95") else pct(r.get("p")),
                      f(r.get("tokens_per_round"), ".2f"), _speed(r.get("predicted_speedup")),
                      f"{_speed(r.get('measured_speedup'))} ({_iv(r.get('measured_speedup_ci95'), '.2f')})",
                      point_break_even_text(r),
                      esc(pre),
                      str(r.get("cases") or "—") + (' <span class="warn">(low&nbsp;sample)</span>' if r.get("low_sample") else "")])
    parts.append("<h3>Speed and cost per context</h3>")
    parts.append(_table(["context<br>(tokens)", "plain<br>tok/s", "spec<br>tok/s", "T_decode<br>(ms)", "T_verify /<br>T_decode",
                         "T_draft<br>(ms)", "full attn.<br>decode", "full attn.<br>verify", "KV read<br>per step"], speed))
    noisy = [r for r in rows if draft_is_noise(r)]
    if noisy:
        parts.append('<p class="muted">* Below noise: T_draft is a round less the verify timed just before it, so a '
                     "negative value is measurement noise (or a verify that ran slower timed apart than in the round), "
                     "not a time; the prediction uses it as measured"
                     + "".join(f"; at {size(r['context'])} its 95% interval is {_iv(r.get('t_draft_ms_ci95'), '.1f')} ms"
                               for r in noisy if r.get("t_draft_ms_ci95")) + ".</p>")
    parts.append("<h3>Acceptance and speedup per context</h3>")
    parts.append(_table(["context<br>(tokens)", "acceptance p<br>(95% CI)", "E<br>(tokens/round)", "predicted<br>(whole round)",
                         "measured<br>speedup (95%)", "break-even<br>T_verify", "context<br>prefill", "cases"], split))
    parts.append('<p class="muted">Full attention\'s share is of the barrier-timed block sum of one decode step and one '
                 "verify pass; KV read per step is the full-attention K/V the context adds to every step (the model's "
                 f"bytes per token × the context). {esc(formula_text(rows))}</p>")
    return "".join(parts)
