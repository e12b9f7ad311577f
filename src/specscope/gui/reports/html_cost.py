"""Report sections for the prediction beside the ledger, the verify cost (roofline) and k tuning — present when the
session holds them (``run --roofline``, the Verify cost and Tune pages)."""

from __future__ import annotations

from typing import Sequence

from specscope.profiler.analysis.records import Agreement
from specscope.profiler.session.records import Summary
from specscope.profiler.session.measured import recommendation, whole_roofline
from specscope.profiler.session.session import Session
from specscope.profiler.analysis.prediction import for_session, prediction_text
from specscope.profiler.analysis.formatting import fmt as f, pct
from specscope.profiler.renderers.html_common import esc
from specscope.profiler.renderers.html_common import table as _table
from specscope.profiler.analysis.summary import BLOCK_LABELS
from specscope.profiler.analysis.verdict import ledger_text

from ..chip_text import chip_comparison


def prediction_paragraph(session, s: Summary) -> str:
    formula = s.get("prediction_formula") if s.get("predicted_speedup") is not None else None
    parts = ["<p><b>Prediction and ledger.</b> The predicted speedup prices the whole round"
             + (f", {esc(formula)}," if formula else "")
             + " with T_verify(k+1) and T_draft(k) (and the rollback and bookkeeping, where timed) timed apart from the "
             "speculative rounds (separate forwards on a restored cache at each case's middle, "
             "drafts from a fresh drafter), T_decode from plain decoding, and only E from the run. "
             f"Verdict: {esc((s.get('prediction_verdict') or {}).get('text') or '—')}."]
    if ledger_text(s):
        parts.append(" The " + esc(ledger_text(s)) + ".")
    if session.data.get("roofline"):
        parts.append(" From the verify curve: " + esc(prediction_text(for_session(session, s))) + ".")
    return "".join(parts) + "</p>"


def verify_cost_section(session: Session, figure: str = "") -> str:
    roof = whole_roofline(session.data.get("roofline"))  # the curve so far of a stopped measurement is no roofline
    if not roof or not roof.get("curve"):
        return ""
    parts = ["<h2>Verify cost and roofline</h2>", f"<p><b>{esc(roof.get('headline', ''))}</b></p>",
             f"<p>Machine: {f(roof.get('bandwidth_gbs'), '.1f')} GB/s and {f(roof.get('peak_tflops'), '.3f')} TFLOP/s measured "
             f"({esc(roof.get('chip') or 'unknown chip')}"
             + (f", {roof['gpu_cores']}-core GPU" if roof.get("gpu_cores") else "")
             + f"; nominal {f(roof.get('nominal_bandwidth_gbs'), '.1f')} GB/s). "
             "Floor = max(bytes ÷ bandwidth, FLOPs ÷ peak); efficiency = floor ÷ measured.</p>",
             chip_paragraph(session)]
    rows = [[str(p["positions"]), f(p.get("whole_ms")), f(p.get("multiple_of_decode")), f(p.get("ideal_multiple")),
             f(p.get("floor_ms")), pct(p.get("efficiency"))] for p in roof["curve"]]
    parts.append(figure)
    parts.append(_table(["n", "whole graph (ms)", "× T_decode", "ideal × (each weight once)", "floor (ms)", "efficiency"], rows))
    head = next((p for p in roof["curve"] if p["positions"] == (roof.get("k") or 0) + 1), None)
    if head:
        rows = [[esc(BLOCK_LABELS.get(c, c)), f(v.get("ms")), f(v.get("floor_ms")), esc(v.get("bound") or ""),
                 pct(v.get("efficiency")), f(v.get("distinct_experts"), ".2f") if v.get("distinct_experts") is not None else "—"]
                for c, v in head["by_block"].items()]
        parts.append(f"<h3>Per block at n = {head['positions']}</h3>")
        parts.append(_table(["block", "measured (ms)", "floor (ms)", "bound", "efficiency", "distinct experts / layer"], rows))
    if roof.get("speedup_at_floor") is not None:
        parts.append(f"<p>The whole round at the floor: {f(roof['speedup_at_floor'], '.3f')}× (now {f(roof.get('speedup_now'), '.3f')}×) "
                     "at the measured acceptance (draft, rollback and bookkeeping as timed).</p>")
    return "".join(parts)


def chip_paragraph(session: Session) -> str:
    """The public wide-verify figures for the session's chip, cited, beside this session's curve at the same widths;
    where they do not apply (CPU backend, an unknown chip) it says so and shows no figure."""
    cmp = chip_comparison(session.data.get("environment"), session.data.get("roofline"))
    items = "".join(f"<li>{esc(line)}</li>" for line in cmp["lines"])
    note = f'<p class="muted">{esc(cmp["full"])}</p>' if cmp["applies"] else ""
    return f"<p><b>By chip.</b> {esc(cmp['head'])}</p>" + (f"<ul>{items}</ul>" if items else "") + note


MEASURED = {"pooled": "measured = the pooled rates' ratio (a ratio of means, as the prediction is), its interval by "
                       "the delta method over the paired repeats; a confirmed k's prediction uses timings re-taken beside "
                       "its runs.",
            None: "measured = the median of per-repeat ratios, its interval distribution-free (a tune saved before "
                  "the pooled measurement)."}


def _short(agreement: Agreement) -> str:
    """A verdict's state in its own words ("agrees", "off", "too little data"), its whole text under the table."""
    return str(agreement.get("text") or "—").split(" (")[0]


def tune_section(session: Session, figure: str = "") -> str:
    tune = session.data.get("tune")
    if not tune or not tune.get("rows"):
        return ""
    rec = recommendation(tune)
    rows = []
    for r in tune["rows"]:
        ci: Sequence[float | None] = r.get("predicted_ci95") or [None, None]
        trace = r.get("acceptance_source") == "trace"
        rows.append([esc(r.get("drafter", "")), str(r.get("k")), f(r.get("tokens_per_round") if trace else None, ".2f"),
                     f(r.get("tokens_per_round_k_max_rounds", None if trace else r.get("tokens_per_round")), ".2f"),
                     f(r.get("measured_tokens_per_round"), ".2f"), f(r.get("predicted_speedup"), ".3f"),
                     f"{f(ci[0], '.3f')}–{f(ci[1], '.3f')}", f(r.get("measured_speedup"), ".3f"),
                     f"{f(mci[0], '.3f')}–{f(mci[1], '.3f')}" if (mci := r.get("measured_ci95")) else "—",
                     pct(r.get("prediction_error"), signed=True) if r.get("prediction_error") is not None else "—",
                     esc(_short(agreement) if (agreement := r.get("agreement")) else "—")])
    verdicts = [f"<li>{esc(r.get('drafter', ''))} {'B' if r.get('tree_budget') else 'k'}={r.get('k')}: "
                f"{esc(ag.get('text', ''))}</li>" for r in tune["rows"] if (ag := r.get("agreement"))]
    return ("<h2>Which k</h2>" + f"<p><b>{esc(rec.get('text', '') if rec else '')}</b></p>"
            + (f"<p class=\"muted\">{esc(tune['assumption'])}</p>" if tune.get("assumption") else "")
            + figure + _table(["drafter", "k", "E(k) trace", "E(k) K_max rounds", "E(k) measured", "predicted",
                               "bootstrap 2.5–97.5 pct", "measured", "measured 95% interval", "error", "at ±5%"], rows)
            + (f"<ul>{''.join(verdicts)}</ul>" if verdicts else "")
            + (f"<p class=\"muted\">Confirmation: {tune.get('confirm_reps')} repeats "
               f"({esc(tune.get('confirm_reps_rule', 'fixed'))}); {MEASURED.get(tune.get('measured_method'), MEASURED[None])}</p>" if tune.get("confirm_reps") else ""))
