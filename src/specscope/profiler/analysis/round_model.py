"""One speedup model: what a speculative round costs and what it buys — the only place its formula is written.

A round emits E tokens (``tokens_per_round``) and costs T_verify + T_draft + T_rollback + T_bookkeeping; plain decoding
costs T_decode a token. So

    speedup = E · T_decode / (T_verify + T_draft + T_rollback + T_bookkeeping)

is the **judged** figure (every term timed apart from the rounds it predicts), and the seed's bare division

    division = E · T_decode / (T_verify + T_draft)

stays visible as its own labelled figure: it is what a user computes by hand. Every surface that predicts a speedup, a
rate, a break-even (T_verify or α) or a what-if — the headline, each case, the roofline now and at the floor, the
Division curves, the what-ifs, tune, the why-line, sweep and context, ``predict``, compare — builds a ``RoundModel`` and
asks it; none writes the formula again (``tests/profiler/analysis/test_one_round_model.py`` checks both).

The rules for a term, one set everywhere:
- **untimed** (``None``): counted as nothing in the round's cost and named (``untimed``, ``formula``), never silently
  taken as zero;
- **negative** (a paired difference below its noise, e.g. T_draft as a round minus the verify before it): kept as
  timed — flooring it at zero would bias the round dearer — and never printed as a time (``intervals.draft_time_text``);
- a round whose terms sum to zero or less, or a T_decode that is not positive, cannot be priced: the figure is
  ``None``, never a negative or infinite speedup.

The expected rollback of a round is one rule (:func:`expected_rollback_ms`): the mean rollback time at each accepted
count, weighted by how often the run accepts that many; a count that occurs but was never timed is named.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from specscope.profiler.analysis.records import CommunicationWhatIf

TERMS = ("t_verify_ms", "t_draft_ms", "t_rollback_ms", "t_bookkeeping_ms")
REST = ("t_rollback_ms", "t_bookkeeping_ms")  # what the judged round pays beside the seed's division
SYMBOLS = {"t_verify_ms": "T_verify", "t_draft_ms": "T_draft", "t_rollback_ms": "T_rollback",
           "t_bookkeeping_ms": "T_bookkeeping"}
DIVISION_LABEL = "the seed's division E·T_decode / (T_verify + T_draft), without rollback and bookkeeping"


def geometric_tokens_per_round(alpha: float, k: int) -> float:
    """E under a geometric per-position acceptance α: 1 + α + … + α^k (the curves' and what-ifs' acceptance model)."""
    return 1.0 + sum(alpha**i for i in range(1, k + 1))


def alpha_for_tokens_per_round(tokens_per_round: float | None, k: int) -> float | None:
    """The per-position acceptance α whose geometric model gives this E: 1 + α + … + α^k = E (clamped to 1 … k + 1).
    The Division chart's curve is over α; a run is placed on it at the α whose E equals its measured E."""
    if tokens_per_round is None or k < 1:
        return None
    return _alpha_at(min(max(tokens_per_round, 1.0), k + 1.0), k)


def _alpha_at(e: float, k: int) -> float:
    lo, hi = 0.0, 1.0
    for _ in range(60):  # E is increasing in α: bisection to ~1e-18
        mid = 0.5 * (lo + hi)
        if geometric_tokens_per_round(mid, k) < e:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


@dataclass(frozen=True)
class RoundModel:
    tokens_per_round: float            # E
    t_decode_ms: float
    t_verify_ms: float
    t_draft_ms: float
    t_rollback_ms: float | None = None
    t_bookkeeping_ms: float | None = None

    @classmethod
    def from_summary(cls, s: Mapping[str, Any]) -> "RoundModel | None":
        """The judged model of a summary (a session's, a sweep point's, a tune row's): its E, T_decode and terms. Rollback
        and bookkeeping count only where they were timed apart (``division_inputs`` "components", or no
        ``division_inputs`` at all: a record that carries only judged terms); a ledger's own rollback is not a
        prediction's term. None where E, T_decode, T_verify or T_draft is missing."""
        E, t_dec, t_v, t_d = (s.get(x) for x in ("tokens_per_round", "t_decode_ms", "t_verify_ms", "t_draft_ms"))
        if E is None or t_dec is None or t_v is None or t_d is None:
            return None
        apart = s.get("division_inputs", "components") == "components"
        rest = {t: (s.get(t) if apart else None) for t in REST}
        return cls(float(E), float(t_dec), float(t_v), float(t_d), **rest)

    # -- what a round costs ------------------------------------------------------------------------------------------

    @property
    def untimed(self) -> list[str]:
        """The terms that were not timed (a judged prediction without them is labelled so)."""
        return [t for t in REST if getattr(self, t) is None]

    @property
    def round_ms(self) -> float:
        """What a round costs, with every term that was timed (signed, as timed)."""
        return self.t_verify_ms + self.t_draft_ms + (self.t_rollback_ms or 0.0) + (self.t_bookkeeping_ms or 0.0)

    @property
    def rest_ms(self) -> float:
        """What a round pays beside its verify: draft, rollback and bookkeeping, as timed."""
        return self.round_ms - self.t_verify_ms

    def _over(self, cost: float) -> float | None:
        if self.t_decode_ms <= 0 or cost <= 0:
            return None
        return self.tokens_per_round * self.t_decode_ms / cost

    # -- what it buys ----------------------------------------------------------------------------------------------

    @property
    def speedup(self) -> float | None:
        """The judged figure: E · T_decode over the whole round; None where the round cannot be priced."""
        return self._over(self.round_ms)

    @property
    def division(self) -> float | None:
        """The seed's bare division, E · T_decode / (T_verify + T_draft): what a user computes by hand; None where
        T_verify + T_draft is not positive (a T_draft far below noise), never a negative speedup."""
        return self._over(self.t_verify_ms + self.t_draft_ms)

    @property
    def predicted_tok_s(self) -> float | None:
        s = self.speedup
        return s * 1000.0 / self.t_decode_ms if s is not None else None

    @property
    def break_even_verify_ms(self) -> float:
        """The verify time at which the whole round breaks even (speedup 1); at or below zero nothing can pay."""
        return self.tokens_per_round * self.t_decode_ms - self.rest_ms

    @property
    def break_even_multiple(self) -> float | None:
        """The break-even verify time in plain steps; None where it is out of reach (at or below zero)."""
        be = self.break_even_verify_ms
        return be / self.t_decode_ms if be > 0 and self.t_decode_ms > 0 else None

    @property
    def verify_multiple(self) -> float | None:
        """How many plain steps one verify costs."""
        return self.t_verify_ms / self.t_decode_ms if self.t_decode_ms > 0 else None

    # -- what if ------------------------------------------------------------------------------------------------------

    def what_if(self, **changes: float | None) -> "RoundModel":
        """The same model with some terms changed (the app's what-if, the roofline's floor, tune's k)."""
        unknown = set(changes) - {"tokens_per_round", "t_decode_ms", *TERMS}
        if unknown:
            raise ValueError(f"unknown terms: {', '.join(sorted(unknown))}")
        return replace(self, **changes)  # type: ignore[arg-type]

    def at_alpha(self, alpha: float, k: int) -> "RoundModel":
        """The round at a geometric per-position acceptance α (every other term as timed, rollback and bookkeeping
        included as the run paid them)."""
        return self.what_if(tokens_per_round=geometric_tokens_per_round(alpha, k))

    def curve(self, alphas: Sequence[float], k: int) -> list[float | None]:
        """The judged speedup over α (the Division page's curve)."""
        return [self.at_alpha(a, k).speedup for a in alphas]

    def break_even_alpha(self, k: int) -> float | None:
        """The geometric α at which the whole round breaks even: E(α) · T_decode = the round's cost. 0 when speculation
        wins even if nothing is accepted; None when it cannot win even if everything is (E would exceed k + 1) or the
        round cannot be priced."""
        if self.t_decode_ms <= 0 or k < 1 or self.round_ms <= 0:
            return None
        need = self.round_ms / self.t_decode_ms
        if need <= 1.0:
            return 0.0
        if need > k + 1:
            return None
        return _alpha_at(need, k)

    def with_communication(self, share_decode: float, share_verify: float, comm_ms: float) -> "RoundModel":
        """"With ``comm_ms`` of communication per forward": a decode step's and a verify forward's compute (the measured
        times less their communication share, barrier-free), each plus ``comm_ms`` — communication barely depends on how
        many positions a forward carries, so both pay the same. Draft, rollback and bookkeeping as timed."""
        sd, sv = (min(max(x or 0.0, 0.0), 1.0) for x in (share_decode, share_verify))
        return self.what_if(t_decode_ms=self.t_decode_ms * (1.0 - sd) + comm_ms,
                            t_verify_ms=self.t_verify_ms * (1.0 - sv) + comm_ms)

    # -- what it is called ------------------------------------------------------------------------------------------

    @property
    def formula(self) -> str:
        """The formula as this model prices it: every timed term, and what was not timed named after it."""
        timed = [SYMBOLS[t] for t in TERMS if getattr(self, t) is not None]
        text = f"E·T_decode / ({' + '.join(timed)})"
        missing = [SYMBOLS[t] for t in self.untimed]
        return text + (f" ({', '.join(missing)} not timed)" if missing else "")

    @property
    def break_even_formula(self) -> str:
        timed = [SYMBOLS[t] for t in TERMS[1:] if getattr(self, t) is not None]
        return "E·T_decode − " + " − ".join(timed)


def implied_round_ms(tokens_per_round: float, t_decode_ms: float, speedup: float) -> float:
    """The round time a speedup implies, the model read backwards: E · T_decode / speedup (a measured speedup gives the
    measured round, for an engine that does not report its round's parts)."""
    return tokens_per_round * t_decode_ms / speedup


def communication_what_if(model: RoundModel, k: int, share_decode: float, share_verify: float,
                          comm_ms: float) -> CommunicationWhatIf:
    """The round with ``comm_ms`` of communication per forward (``RoundModel.with_communication``): the what-if times,
    the verify/decode ratio and the break-even acceptance of the whole round."""
    sd, sv = (min(max(x or 0.0, 0.0), 1.0) for x in (share_decode, share_verify))
    w = model.with_communication(share_decode, share_verify, comm_ms)
    return {
        "comm_ms": comm_ms,
        "t_decode_ms": w.t_decode_ms,
        "t_verify_ms": w.t_verify_ms,
        "compute_decode_ms": model.t_decode_ms * (1.0 - sd),
        "compute_verify_ms": model.t_verify_ms * (1.0 - sv),
        "verify_multiple": w.verify_multiple,
        "break_even_p": w.break_even_alpha(k) if w.t_decode_ms > 0 else None,
    }


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
