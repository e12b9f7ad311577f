"""The report's per-case sections: the table of every case's figures, and each case's plain and speculative outputs
side by side, the first difference highlighted."""

from __future__ import annotations

from typing import Any, Mapping

from specscope.profiler.analysis.summary import session_case_stats
from specscope.profiler.session.divergence import ENGINE_FAULT
from specscope.profiler.analysis.formatting import ci, fmt as f, pct
from specscope.profiler.analysis.intervals import draft_time_text
from specscope.profiler.analysis.round_model import SYMBOLS
from specscope.profiler.renderers.html_common import esc
from specscope.profiler.renderers.html_common import table as _table


def _first_diff(a: str, b: str) -> int | None:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return None if len(a) == len(b) else n


def _marked(text: str, at: int | None) -> str:
    if at is None:
        return esc(text)
    return esc(text[:at]) + "<mark>" + esc(text[at:]) + "</mark>"


def cases_section(session) -> str:
    # Predicted: the case's own judged round (its components, rollback and bookkeeping), its error against the case's
    # full rounds as the headline's; the seed's bare division beside it, labelled
    head = ["Case", "Content", "Prompt tok", "Plain tok/s", "Spec tok/s", "T_verify ms", "T_draft ms", "p",
            "95% CI (rounds)", "E", "Predicted (whole round)", "Seed's division (no rollback, bookkeeping)",
            "Measured (all rounds)", "Error vs full rounds", "Match", "1st diverg."]
    rows = []
    for c in session.cases:
        st = session_case_stats(session, c)
        a = st["acceptance"]
        m: Mapping[str, Any] = st["match"] or {}
        sampled = session.regime != "greedy"
        d = st.get("divergence")
        fd = None if sampled or m.get("first_divergence") is None else f"token {m['first_divergence']}"
        if fd and d:
            fd += " (ENGINE FAULT)" if d["verdict"] == ENGINE_FAULT else " (near-tie)"
        rows.append([
            esc(c["id"]) + ("" if c.get("complete") else ' <span class="warn">(incomplete)</span>')
            + (' <span class="warn">(discarded: not in the summary)</span>' if c.get("discarded") else ""),
            esc(c.get("content_class", "")),
            str(len(c.get("prompt_tokens") or [])),
            f(st["plain_tok_s"], ".1f"), f(st["spec_tok_s"], ".1f"),
            f(st["t_verify_ms"]), draft_time_text(st["t_draft_ms"]),
            pct(a["p"]), ci(a["p_ci95"]) if a["rounds"] else "—",
            f(a["tokens_per_round"], ".2f"),
            f(st["predicted_speedup"], ".3f", "×") + ("*" if st["predicted_speedup"] is not None
                                                      and st.get("prediction_untimed") else ""),
            f(st.get("division_speedup"), ".3f", "×"),
            f(st["measured_speedup"], ".3f", "×"),
            pct(st["prediction_error"], 1, signed=True),
            "by design" if sampled and m else (pct(m.get("match_rate"), 0) if m else "—"),
            fd or "—",
        ])
    untimed = sorted({u for c in session.cases for u in (session_case_stats(session, c).get("prediction_untimed") or [])})
    note = (f'<p class="muted">* Not timed apart for that case, so left out of its round (named, never silently taken as zero): '
            f"{esc(', '.join(SYMBOLS.get(u, u) for u in untimed))}.</p>" if untimed else "")
    return '<h2>Per case</h2><div class="scroll">' + _table(head, rows, numeric_from=2, cls="full cases") + "</div>" + note


def outputs_section(session, target) -> str:
    parts = ['<h2 class="pagebreak">Outputs: plain vs speculative</h2>']
    demo = (session.data.get("model") or {}).get("demo")
    from specscope.demo_labels import demo_kind

    if demo_kind(demo) == "trained":
        pass  # a trained demo writes real (if small-model) text
    elif demo_kind(demo) == "shape":
        parts.append('<p class="muted">Random weights at a released model\'s dimensions: the text is random tokens; '
                     "compare it only for equality.</p>")
    elif demo:
        parts.append('<p class="muted">Synthetic demo model: the text is random tokens; compare it only for equality.</p>')
    parts.append('<p class="muted">Where the two differ, the speculative text from the first differing character on is highlighted.</p>')
    for c in session.cases:
        st = session_case_stats(session, c)
        m: Mapping[str, Any] = st["match"] or {}
        pt, stx = c.get("plain_text") or "", c.get("spec_text") or ""
        at = _first_diff(pt, stx)
        d = st.get("divergence")
        if m and session.regime != "greedy":
            status = "sampled: differs from plain decoding by design"
        elif m:
            status = ("identical tokens" if m.get("equal") else
                      f"{pct(m.get('match_rate'), 1)} tokens match, first divergence at token {m.get('first_divergence')}")
            if d:
                status += " — ENGINE FAULT (clear margin)" if d["verdict"] == ENGINE_FAULT else " — near-tie (kernel rounding)"
        else:
            status = "not measured"
        cell = "out" if target == "print" else ""
        parts.append(
            f'<div class="case"><h3>{esc(c["id"])} <span class="muted">· {esc(c.get("content_class", ""))} · {esc(status)}</span></h3>'
            f'<p class="prompt">{esc(c.get("prompt", ""))}</p>'
            f'<table class="outputs" width="100%" cellspacing="0" cellpadding="5" border="1">'
            f'<tr><th width="50%">Plain</th><th width="50%">Speculative</th></tr>'
            f'<tr><td class="{cell}">{_marked(pt, at)}</td><td class="{cell}">{_marked(stx, at)}</td></tr></table></div>'
        )
    return "".join(parts)
