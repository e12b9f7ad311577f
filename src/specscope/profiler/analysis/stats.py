"""The statistics behind the prediction: acceptance, rates, errors. Pure Python, no MLX, no Qt.

    E = 1 + Σ_{i=1..k} a_i,  a_i = share of rounds whose first i drafts were all accepted

The speedup a round buys is priced in one place only, ``round_model.RoundModel``.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Mapping

from specscope.profiler.analysis.records import MatchStats
from specscope.profiler.analysis.round_model import alpha_for_tokens_per_round, geometric_tokens_per_round  # noqa: F401
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
    """E under an i.i.d. acceptance ``p`` (the curves' and what-ifs' model: ``round_model.geometric_tokens_per_round``)."""
    return geometric_tokens_per_round(p, k)


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
