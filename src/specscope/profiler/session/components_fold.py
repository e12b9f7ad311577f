"""A case's components timed apart, folded from the calls a run makes beside its passes (``profiler.run.protocol``).

A run times the prediction's inputs before and after each speculative pass, each call at its own point of the case;
the case's record holds every call's samples, in call order, as one record of the same shape as a single call's
(so every reader keeps reading lists), and ``calls`` says where each came from.
"""

from __future__ import annotations

from typing import Any, Mapping

from specscope.profiler.session.records import ComponentCall, Components

LISTS = ("verify_ms", "draft_ms", "round_ms", "draft_alone_ms", "prior_accepted", "bookkeeping_ms", "draft_forward_ms",
         "draft_walk_ms")
CALL_FACTS = ("context", "at", "reps", "wall_ms")


def call_of(comp: Components, when: str | None = None, repeat: int | None = None) -> ComponentCall:
    """What a single call measured beside which pass: its context, point of the case, repetitions and cost."""
    facts: Mapping[str, Any] = comp  # "at" is in the engine's record, not in Components
    return {"context": facts.get("context"), "at": facts.get("at"), "reps": facts.get("reps"),  # CALL_FACTS, in order
            "wall_ms": facts.get("wall_ms"), "when": when, "repeat": repeat, "rounds": len(comp.get("round_ms") or [])}


def fold_components(previous: Components | None, comp: Components, when: str | None = None,
                    repeat: int | None = None) -> Components:
    """``previous`` (the case's record so far, or None) with one more call's ``comp`` added."""
    new: dict[str, Any] = {key: value for key, value in comp.items()}
    new["calls"] = [call_of(comp, when, repeat)]
    if not previous:
        return new  # type: ignore[return-value]
    prev: dict[str, Any] = dict(previous)
    out: dict[str, Any] = dict(prev)
    calls = list(prev.get("calls") or [call_of(previous)]) + new["calls"]
    for key in LISTS:
        if key == "rollback_ms" or key in prev or key in new:
            out[key] = list(prev.get(key) or []) + list(new.get(key) or [])
    for key in ("rollback_ms", "budget_verify_ms"):  # times by accepted count; a tree run's what-if: by budget
        if key == "rollback_ms" or key in prev or key in new:
            by: dict[str, list[float]] = {a: list(xs) for a, xs in (prev.get(key) or {}).items()}
            for a, xs in (new.get(key) or {}).items():
                by.setdefault(str(a), []).extend(xs)
            out[key] = by
    if "budget_verify_wall_ms" in prev or "budget_verify_wall_ms" in new:
        out["budget_verify_wall_ms"] = (prev.get("budget_verify_wall_ms") or 0.0) + (new.get("budget_verify_wall_ms") or 0.0)
    out["reps"] = sum(int(c.get("reps") or 0) for c in calls)
    walls = [c["wall_ms"] for c in calls if c.get("wall_ms") is not None]
    out["wall_ms"] = sum(walls) if walls else None
    contexts = [c["context"] for c in calls if c.get("context") is not None]
    out["context"] = round(sum(contexts) / len(contexts)) if contexts else None  # the mean cache length timed
    prev_rounds = sum(c["rounds"] for c in calls[:-1])  # the share of timed rounds whose draft agreed, pooled
    shares = [(prev_rounds, prev.get("round_drafts_agree")), (calls[-1]["rounds"], new.get("round_drafts_agree"))]
    known = [(n, x) for n, x in shares if x is not None and n]
    out["round_drafts_agree"] = sum(n * x for n, x in known) / sum(n for n, _ in known) if known else None
    out.pop("at", None)  # each call's point of the case is in ``calls``
    out["calls"] = calls
    return out  # type: ignore[return-value]
