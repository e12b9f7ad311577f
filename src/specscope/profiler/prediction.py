"""The prediction the method is about, beside the ledger.

The summary's "predicted speedup" takes T_verify and T_draft as the means of the very rounds whose speed
it is compared with, so predicted ≈ measured is close to an accounting identity: it is the **ledger**.
The **prediction** uses only times measured apart from the speculative run — T_decode and T_verify(k+1)
from the verify curve's whole-graph forwards (``specscope roofline``, the Verify cost page, or
``run --roofline``), T_draft from draft steps timed on their own in the roofline's short instrumented run —
and takes from the run only its acceptance (E). Held against the end-to-end measurement, its error is
what the method can really promise; the ledger's error only shows what rollback, bookkeeping and the last
short round cost.
"""

from __future__ import annotations

from . import stats


def for_session(session, summary: dict | None = None) -> dict:
    """The prediction for a session (its stored roofline, its run's drafter and acceptance)."""
    d = session.config.get("drafter")
    name = d.get("name") if isinstance(d, dict) else d
    return component_prediction(session.data.get("roofline"), summary if summary is not None else session.summary(), name)


def component_prediction(roof: dict | None, summary: dict, drafter: str | None = None) -> dict:
    """``{"available": False, "why": …}`` or the prediction with its inputs and its error against the measured
    speedup. A prediction needs a curve point at k+1 positions and a draft time for the run's drafter at k."""
    k, E = summary.get("k"), summary.get("tokens_per_round")
    if not roof or not roof.get("curve"):
        return {"available": False, "why": "no verify cost measured for this session (Verify cost page, or run --roofline)"}
    if not k or E is None:
        return {"available": False, "why": "the run has no speculative rounds to take acceptance from"}
    pts = {p.get("positions"): p for p in roof["curve"]}
    if 1 not in pts or (k + 1) not in pts:
        return {"available": False, "why": f"the verify curve does not reach k+1 = {k + 1} positions"}
    div = roof.get("division") or {}
    if div.get("k") != k or div.get("t_draft_ms") is None:
        return {"available": False, "why": f"the verify-cost measurement timed no drafts at k = {k}"}
    if drafter and div.get("drafter") and div["drafter"] != drafter:
        return {"available": False, "why": f"draft steps were timed with {div['drafter']}, the run used {drafter}"}
    t_dec, t_ver, t_draft = pts[1]["whole_ms"], pts[k + 1]["whole_ms"], float(div["t_draft_ms"])
    d = stats.divide(t_dec, t_ver, t_draft, E)
    measured = summary.get("measured_speedup")
    return {
        "available": True,
        "speedup": d.predicted_speedup,
        "t_decode_ms": t_dec,
        "t_verify_ms": t_ver,
        "t_draft_ms": t_draft,
        "tokens_per_round": E,
        "measured_speedup": measured,
        "error": stats.relative_error(d.predicted_speedup, measured) if measured else None,
        "ledger_speedup": summary.get("predicted_speedup"),
        "ledger_error": summary.get("prediction_error"),
    }


def prediction_text(pred: dict) -> str:
    """One line for the summary, the Division page and the reports."""
    if not pred.get("available"):
        return f"prediction from components measured apart: not available ({pred['why']})"
    err = pred.get("error")
    return (f"prediction from components measured apart: {pred['speedup']:.3f}× (T_decode {pred['t_decode_ms']:.2f} ms and "
            f"T_verify {pred['t_verify_ms']:.2f} ms from the verify curve, T_draft {pred['t_draft_ms']:.2f} ms timed on its own, "
            f"E {pred['tokens_per_round']:.2f} from the run)"
            + (f"; error {err * 100:+.1f}% against the measured {pred['measured_speedup']:.3f}×" if err is not None else ""))
