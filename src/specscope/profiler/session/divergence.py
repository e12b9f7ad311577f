"""A greedy divergence judged: a near-tie the kernels' rounding explains, or an engine fault.

Rules about a case's data only (no figures): the session applies them as it folds a ``divergence`` event (an
engine fault fails the session), and the summary and verdict read them.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:  # the records import nothing back; this keeps the rule free of the session's shapes at run time
    from specscope.profiler.session.records import Case, Divergence

ENGINE_FAULT = "engine_fault"
ROUNDING = "rounding"


def logits_text(x) -> str:
    return "—" if x is None else f"{x:.3g}"


def divergence_message(case_id: str, d: Mapping[str, Any]) -> str:
    """One greedy divergence in words: an engine fault (clear margin) or a near-tie (kernel rounding)."""
    where = f"case {case_id} position {d.get('position')}"
    tol = d.get("tolerance")
    tol_text = f"near-tie tolerance {logits_text(tol)}" + (f", {d['dtype']}" if d.get("dtype") else "")
    if d.get("plain_lead") is None:
        detail = d.get("reason") or "no margin measured"
    else:
        detail = (f"plain token {d.get('plain_token')} leads speculative token {d.get('spec_token')} by "
                  f"{logits_text(d['plain_lead'])} logits in the plain step, {logits_text(d.get('verify_lead'))} in a batched verify row; "
                  + tol_text)
    if d.get("verdict") == ENGINE_FAULT:
        how = "with a clear margin" if d.get("plain_lead") is not None else "with no margin to call it a near-tie"
        return f"engine fault: speculative output diverged from plain decoding at {where} {how} ({detail})"
    return f"speculative output diverged from plain decoding at {where} at a near-tie (kernel rounding: {detail})"


def divergence_verdict(d: Divergence) -> str:
    """Recomputed from the measured leads and tolerance (the rule of engine_adapter.decode.divergence.classify):
    a near-tie only if every measured lead of the plain token over the speculative one is within the
    tolerance; no measured margin, or no tolerance, is never rounding."""
    tol = d.get("tolerance")
    leads = [x for x in (d.get("plain_lead"), d.get("verify_lead")) if isinstance(x, (int, float))]
    if not leads or not isinstance(tol, (int, float)) or not math.isfinite(tol):
        return ENGINE_FAULT
    return ROUNDING if all(math.isfinite(x) and abs(x) <= tol for x in leads) else ENGINE_FAULT


def case_divergence(case: Case) -> Divergence | None:
    """The case's divergence record with its verdict recomputed, or None (outputs equal, or not checked)."""
    d = case.get("divergence")
    if not isinstance(d, dict):
        return None
    return {**d, "verdict": divergence_verdict(d)}
