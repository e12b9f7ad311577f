"""One speedup model: what a speculative round costs and what it buys, for ``run``, ``tune``, ``sweep``, the app.

A round emits E tokens (``tokens_per_round``) and costs T_verify + T_draft + T_rollback + T_bookkeeping; plain decoding
costs T_decode a token. So

    speedup = E · T_decode / (T_verify + T_draft + T_rollback + T_bookkeeping)

is the **judged** figure (every term timed apart from the rounds it predicts), and the seed's bare division

    division = E · T_decode / (T_verify + T_draft)

stays visible as its own labelled figure: it is what a user computes by hand. A term that was not timed is ``None``
and said (``untimed``), never silently taken as zero.

The expected rollback of a round is one rule (:func:`expected_rollback_ms`): the mean rollback time at each accepted
count, weighted by how often the run accepts that many; a count that occurs but was never timed is named.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Mapping, Sequence

TERMS = ("t_verify_ms", "t_draft_ms", "t_rollback_ms", "t_bookkeeping_ms")


@dataclass(frozen=True)
class RoundModel:
    tokens_per_round: float            # E
    t_decode_ms: float
    t_verify_ms: float
    t_draft_ms: float
    t_rollback_ms: float | None = None
    t_bookkeeping_ms: float | None = None

    @property
    def untimed(self) -> list[str]:
        """The terms that were not timed (a judged prediction without them is labelled so)."""
        return [t for t in ("t_rollback_ms", "t_bookkeeping_ms") if getattr(self, t) is None]

    @property
    def round_ms(self) -> float:
        """What a round costs, with every term that was timed."""
        return self.t_verify_ms + self.t_draft_ms + (self.t_rollback_ms or 0.0) + (self.t_bookkeeping_ms or 0.0)

    @property
    def speedup(self) -> float:
        """The judged figure: E · T_decode over the whole round."""
        if self.t_decode_ms <= 0 or self.round_ms <= 0:
            raise ValueError("times must be positive")
        return self.tokens_per_round * self.t_decode_ms / self.round_ms

    @property
    def division(self) -> float | None:
        """The seed's bare division, E · T_decode / (T_verify + T_draft): what a user computes by hand; None where
        T_verify + T_draft is not positive (a T_draft far below noise), never a negative speedup."""
        if self.t_decode_ms <= 0 or self.t_verify_ms + self.t_draft_ms <= 0:
            return None
        return self.tokens_per_round * self.t_decode_ms / (self.t_verify_ms + self.t_draft_ms)

    @property
    def break_even_verify_ms(self) -> float:
        """The verify time at which the whole round breaks even (speedup 1); at or below zero nothing can pay."""
        rest = self.t_draft_ms + (self.t_rollback_ms or 0.0) + (self.t_bookkeeping_ms or 0.0)
        return self.tokens_per_round * self.t_decode_ms - rest

    @property
    def verify_multiple(self) -> float:
        return self.t_verify_ms / self.t_decode_ms

    def what_if(self, **changes: float) -> "RoundModel":
        """The same model with some terms changed (the app's what-if, the roofline's floor, tune's k)."""
        unknown = set(changes) - {"tokens_per_round", "t_decode_ms", *TERMS}
        if unknown:
            raise ValueError(f"unknown terms: {', '.join(sorted(unknown))}")
        return replace(self, **changes)


def expected_rollback_ms(by_count: Mapping[int, Sequence[float]], histogram: Mapping[int, int],
                         k: int) -> tuple[float | None, list[int]]:
    """Rollback per round: Σ_a n_a · mean(rollback at a) / Σ_a n_a over the run's accepted counts a (a full acceptance,
    a = k, needs none: 0 unless it was timed). Returns (the figure, the counts that occur but were never timed); the
    figure is None when a count that occurs was never timed (it cannot be known) or there are no rounds."""
    rounds = sum(n for n in histogram.values() if n)
    if not rounds:
        return None, []
    means = {int(a): math.fsum(xs) / len(xs) for a, xs in by_count.items() if len(xs)}
    missing = sorted(int(a) for a, n in histogram.items() if n and int(a) not in means and int(a) != k)
    if missing:
        return None, missing
    total = math.fsum(n * means.get(int(a), 0.0) for a, n in histogram.items() if n)
    return total / rounds, []


def judged_rest_ms(summary: Mapping) -> float:
    """What the judged round pays beside T_verify and T_draft (rollback and bookkeeping, timed apart), from a summary:
    the one place the app's curve, what-if and formulas take it from (0 where the terms came from no components)."""
    if summary.get("division_inputs") != "components":
        return 0.0
    return (summary.get("t_rollback_ms") or 0.0) + (summary.get("t_bookkeeping_ms") or 0.0)
