"""The division and the statistics behind it. Pure Python, no MLX, no Qt.

    predicted speedup = E · T_decode / (T_verify(k) + T_draft(k))
    E = 1 + Σ_{i=1..k} a_i,  a_i = share of rounds whose first i drafts were all accepted
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from specscope.profiler.analysis.records import CommunicationWhatIf, MatchStats
from specscope.profiler.session.records import Acceptance

Z95 = 1.959963984540054
LOW_SAMPLE_DRAFTED = 128  # below this many drafted tokens an acceptance number is mostly noise


def median(xs) -> float | None:
    xs = [x for x in xs if x is not None]
    return float(statistics.median(xs)) if xs else None


def mean(xs) -> float | None:
    xs = [x for x in xs if x is not None]
    return float(statistics.fmean(xs)) if xs else None


def wilson_interval(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """95% Wilson score interval for a binomial proportion."""
    if trials <= 0:
        return (0.0, 1.0)
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def tok_s(n_tokens: int, ms: float) -> float | None:
    """Tokens per second from ``n_tokens`` made in ``ms`` milliseconds; None when either is zero."""
    return 1000.0 * n_tokens / ms if ms > 0 and n_tokens > 0 else None


def acceptance_from_rounds(accepted_counts: list[int], k: int) -> Acceptance:
    """Acceptance statistics over rounds that each drafted ``k`` tokens."""
    return acceptance_from_histogram(Counter(accepted_counts), k)


def acceptance_from_histogram(hist: Mapping[int, int], k: int) -> Acceptance:
    """``acceptance_from_rounds`` from a histogram: accepted count -> number of rounds (what a running fold keeps)."""
    rounds = sum(hist.values())
    drafted = rounds * k
    accepted = sum(n * c for n, c in hist.items())
    a = [sum(c for n, c in hist.items() if n >= i) / rounds if rounds else 0.0 for i in range(1, k + 1)]
    # The round is the unit (a round's drafts are not independent trials: uncertainty.proportion_interval); with
    # fewer than two rounds there is no spread to read, and the interval is the per-token Wilson one, labelled so.
    from specscope.profiler.analysis.uncertainty import rounds_interval

    iv = rounds_interval(hist, k)
    unit = "rounds"
    if iv is None:
        iv, unit = list(wilson_interval(accepted, drafted)), "tokens (too few rounds)"
    lo, hi = iv
    return {
        "k": k,
        "rounds": rounds,
        "drafted": drafted,
        "accepted": accepted,
        "p": accepted / drafted if drafted else None,
        "p_ci95": [lo, hi],
        "p_ci95_unit": unit,
        "per_position": a,
        "tokens_per_round": 1 + sum(a) if rounds else None,
        "tokens_per_round_ci95": [1 + k * lo, 1 + k * hi] if rounds else None,
        "low_sample": drafted < LOW_SAMPLE_DRAFTED,
    }


def tokens_per_round_from_p(p: float, k: int) -> float:
    """E under an i.i.d. acceptance ``p`` (used only by the calculator when no a_i are given)."""
    return 1 + sum(p**i for i in range(1, k + 1))


@dataclass
class Division:
    t_decode_ms: float
    t_verify_ms: float
    t_draft_ms: float
    tokens_per_round: float
    predicted_speedup: float
    predicted_tok_s: float
    break_even_verify_ms: float
    break_even_multiple: float
    verify_multiple: float  # T_verify / T_decode: how many plain steps one verify costs

    def to_dict(self) -> dict[str, Any]:  # dict: dataclasses.asdict of the Division, its fields as they are
        return asdict(self)


def divide(t_decode_ms: float, t_verify_ms: float, t_draft_ms: float, tokens_per_round: float) -> Division:
    if t_decode_ms <= 0 or t_verify_ms + t_draft_ms <= 0:
        raise ValueError("times must be positive")
    speedup = tokens_per_round * t_decode_ms / (t_verify_ms + t_draft_ms)
    be = tokens_per_round * t_decode_ms - t_draft_ms
    return Division(
        t_decode_ms=t_decode_ms,
        t_verify_ms=t_verify_ms,
        t_draft_ms=t_draft_ms,
        tokens_per_round=tokens_per_round,
        predicted_speedup=speedup,
        predicted_tok_s=speedup * 1000.0 / t_decode_ms,
        break_even_verify_ms=be,
        break_even_multiple=be / t_decode_ms,
        verify_multiple=t_verify_ms / t_decode_ms,
    )


def speedup_curve(t_decode_ms: float, t_verify_ms: float, t_draft_ms: float, k: int, ps) -> list[float]:
    """Predicted speedup over acceptance p (i.i.d. model for the curve; measured points use a_i)."""
    return [tokens_per_round_from_p(p, k) * t_decode_ms / (t_verify_ms + t_draft_ms) for p in ps]


def relative_error(predicted: float | None, measured: float | None) -> float | None:
    if predicted is None or not measured:
        return None
    return (predicted - measured) / measured


def match_stats(plain: list[int], spec: list[int]) -> MatchStats:
    """How far speculative output equals plain output (greedy runs should match)."""
    n = min(len(plain), len(spec))
    same = sum(1 for a, b in zip(plain, spec) if a == b)
    first = next((i for i in range(n) if plain[i] != spec[i]), None)
    if first is None and len(plain) != len(spec):
        first = n
    return {
        "equal": plain == spec,
        "match_rate": same / max(len(plain), len(spec), 1),
        "first_divergence": first,
    }


def alpha_for_tokens_per_round(tokens_per_round: float | None, k: int) -> float | None:
    """The per-position acceptance α whose geometric model gives this E: 1 + α + … + α^k = E. The Division chart's
    curve is over α; a run is placed on it at the α whose E equals its measured E, so the measured point and the
    predicted marker lie where the figures say they are (DESIGN §6: p and α differ for k > 1)."""
    if tokens_per_round is None or k < 1:
        return None
    return _alpha_at(min(max(tokens_per_round, 1.0), k + 1.0), k)


def _alpha_at(e: float, k: int) -> float:
    """α with 1 + α + … + α^k = e, for 1 ≤ e ≤ k + 1 (E is increasing in α: bisection to ~1e-18)."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if tokens_per_round_from_p(mid, k) < e:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def break_even_p(t_decode_ms: float, t_verify_ms: float, t_draft_ms: float, k: int) -> float | None:
    """The geometric per-position acceptance α at which speculation breaks even: E(α) · T_decode = T_verify + T_draft,
    with E(α) = 1 + α + … + α^k. 0 when speculation wins even if nothing is accepted; None when it cannot win
    even if everything is (E would have to exceed k + 1)."""
    if t_decode_ms <= 0 or k < 1:
        return None
    need = (t_verify_ms + t_draft_ms) / t_decode_ms
    if need <= 1.0:
        return 0.0
    if need > k + 1:
        return None
    return _alpha_at(need, k)


def communication_what_if(t_decode_ms: float, t_verify_ms: float, t_draft_ms: float, k: int, share_decode: float,
                          share_verify: float, comm_ms: float) -> CommunicationWhatIf:
    """"With ``comm_ms`` of communication per forward": the compute of a decode step and of a verify forward
    (the measured times less their communication share, barrier-free) each plus ``comm_ms`` — communication
    barely depends on how many positions a forward carries, so decode and verify pay the same. T_draft is
    kept as measured. Returns the what-if times, the verify/decode ratio and the break-even acceptance."""
    sd, sv = (min(max(x or 0.0, 0.0), 1.0) for x in (share_decode, share_verify))
    td = t_decode_ms * (1.0 - sd) + comm_ms
    tv = t_verify_ms * (1.0 - sv) + comm_ms
    return {
        "comm_ms": comm_ms,
        "t_decode_ms": td,
        "t_verify_ms": tv,
        "compute_decode_ms": t_decode_ms * (1.0 - sd),
        "compute_verify_ms": t_verify_ms * (1.0 - sv),
        "verify_multiple": tv / td if td > 0 else None,
        "break_even_p": break_even_p(td, tv, t_draft_ms, k) if td > 0 else None,
    }
