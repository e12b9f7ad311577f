"""Plain records the decoding generators yield. JSON-friendly: ints, floats, lists."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Prefill:
    """The prompt forward; it also produces the first token."""

    n_prompt: int
    token: int
    ms: float
    type: str = "prefill"


@dataclass
class PlainStep:
    """One plain decode step: one token, wall time since the previous token was ready."""

    index: int
    token: int
    ms: float
    type: str = "step"


@dataclass
class SpecRound:
    """One speculative round: draft ``len(drafted)`` tokens, verify them in one forward, keep a prefix."""

    index: int
    drafted: list[int]
    accepted: int
    emitted: list[int]
    draft_ms: float | None  # None in an end-to-end round: nothing is timed apart
    verify_ms: float | None
    rollback_ms: float | None
    ms: float  # whole round, wall clock, including bookkeeping
    extra: dict = field(default_factory=dict)
    kind: str = "instrumented"  # or "end_to_end": drafts chained lazily into the verify, one sync per round
    type: str = "round"


def tokens_of(records) -> list[int]:
    """The token ids a decoding generator emitted, in order (prefill token, then steps or rounds)."""
    out: list[int] = []
    for r in records:
        out.extend(r.emitted if r.type == "round" else [r.token])
    return out
