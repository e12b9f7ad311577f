"""A draft timed alone, by part (the components' ``draft_forward_ms`` and ``draft_walk_ms``): DFlash2's forward with its
top K, and its candidate selector's walk, sequential one position after another."""

from __future__ import annotations

from typing import Any

from specscope.profiler.analysis import stats
from specscope.profiler.session.records import Case, DraftParts


def draft_parts(cases: list[Case]) -> DraftParts | None:
    """The mean of each part over every case's components, where the drafter times its parts apart; None for drafters
    without parts, or sessions without components."""
    comps: list[dict[str, Any]] = [dict(c.get("components") or {}) for c in cases]

    def mean_of(part: str) -> float | None:
        return stats.mean(x for comp in comps for x in (comp.get(f"draft_{part}_ms") or []))

    parts: DraftParts = {}
    if (forward := mean_of("forward")) is not None:
        parts["forward"] = forward
    if (walk := mean_of("walk")) is not None:
        parts["walk"] = walk
    return parts or None
