"""The verdict as soon as it can be known, without the bias of looking again and again.

``run --until decided`` adds cases (the suite again, ABBA order intact) and looks at the verdict after each one, until
it is decided or a cap is reached. A 95% interval looked at after every case is not a 95% interval of the whole
procedure: each look is another chance for noise to push it wholly inside or outside ±5%. So each of at most
``max_looks`` looks uses a (1 − 0.05 / max_looks) interval (Bonferroni: the chance that any look's interval misses the
truth is at most 5%), and the one verdict rule (``verdict_rule.decide``) judges that wider interval.

Simulated in ``tests/profiler/analysis/test_sequential.py``: with the true error at 0 or ±2.5% a decided verdict says
"agrees", and at ±7.5% "off", at least 93% of the time; near the edge (+4.5%, −5.5%, skewed errors) at most 2.5% of
runs end in a wrong verdict, where the naive repeated look (a 95% interval every time) ends wrongly in about 15%.
``tests/profiler/analysis/test_until_decided_path.py`` runs the product's own path (the error's units, its bootstrap
interval, ``looked_verdict``, the stop) and holds the same claim, the naive look failing it. Not covered: rare, large
stalls (a tenth of the cases some 60% slower) that the first eight cases miss defeat any look.

After the stop the reported error is biased away from the boundary it stopped on; ``corrected_error`` takes the bias
out (``CORRECTION``; ``tests/profiler/analysis/test_sequential_bias.py``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from statistics import NormalDist
from typing import Any

from specscope.profiler.analysis import resample
from specscope.profiler.analysis.records import Verdict

ALPHA = 0.05
# ``run --until decided``'s cap without ``--cases``: the suite cycled to this many cases (the built-in 18 allowed 11
# looks, and the demo's MTP head, about +1% off with a ±2.5% interval at 18 cases, stopped undecided in two of four
# sessions); at about 8 s a case on the demo, some 5 minutes at most
UNTIL_DECIDED_CASES = 40


def look_level(max_looks: int) -> float:
    """The two-sided confidence of each look's interval when at most ``max_looks`` are made."""
    return 1.0 - ALPHA / max(1, max_looks)


def t_quantile(level: float, df: float) -> float:
    """Student's t quantile for a two-sided ``level`` interval (Cornish-Fisher in 1/df, as ``uncertainty.t95``)."""
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    if df <= 0:
        return math.inf
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def widen(interval: list[float] | None, point: float | None, df: float, level: float) -> list[float] | None:
    """A 95% interval about ``point`` stretched to ``level`` (each side by the ratio of the t quantiles)."""
    if not interval or point is None:
        return interval
    f = t_quantile(level, df) / t_quantile(0.95, df)
    return [point - (point - interval[0]) * f, point + (interval[1] - point) * f]


def looked_verdict(error: float | None, interval: list[float] | None, unit: str, n_units: int, df: int, n_cases: int,
                   max_tokens: int | None, cap: int | None) -> Verdict:
    """The verdict at one look: with ``cap`` (``--until decided``: the most cases the run may take) the 95% interval
    widened to ``look_level`` for the looks from the MIN_UNITS-th case to ``cap``; without it, the 95% interval as
    it is. The run's summary and the end-to-end simulation (tests/profiler/analysis/test_until_decided_path.py) both
    judge through here, so the simulated path is the product's."""
    from specscope.profiler.analysis.uncertainty import MIN_UNITS, judge

    judged, level = interval, 0.95
    if cap is not None and interval is not None and error is not None:
        level = look_level(max(1, int(cap) - MIN_UNITS + 1))
        judged = widen(interval, error, max(df, 1), level)
    verdict = judge(error, judged, unit, n_units, n_cases, max_tokens, level)
    verdict["level"] = level
    return verdict


# -- the error after a sequential stop --------------------------------------------------------------------------
# A run that stops at the first decided look stops when its noise happened to push the interval clear of ±5%, so the
# error it reports is biased away from the boundary (simulated on test_sequential's data: true +7.5%, reported +8.95%
# on average when it stops "off"). The correction, in the manner of Whitehead's bias-adjusted estimate but given the
# run's outcome: θ̃ solves θ̂ = θ̃ + b(θ̃), where b(θ) is the mean of the stopped estimate minus θ over runs of the same
# stopping rule that end as this one did (agrees, off above, off below, or undecided at the cap), simulated with the
# run's own per-case spread (its cases' errors about their mean, resampled; widened where an early stop picked cases
# that happened to agree) and each look judged as a t interval. Simulated in tests/profiler/analysis/
# test_sequential_bias.py: it takes out about half of an "off" stop's bias on skewed errors and nearly all of it on
# normal ones, and nearly all of an undecided run's; a run that stops at its first looks is corrected little.
CORRECTION = ("bias-adjusted for the sequential stop (Whitehead's method given the run's outcome: the stopping rule "
              "simulated with the run's own per-case spread)")
_SIMS = 1000
_ITERATIONS = 9


def unit_errors(units: Sequence[Mapping[str, Any]], extra_ms: float = 0.0) -> list[float]:
    """Each case's own predicted ÷ measured − 1 (its E · ms ÷ tokens over its components' round), the per-case spread
    the correction simulates with; units without rounds or components are left out."""
    out = []
    for u in units:
        if u.get("components_only") or not (u.get("counted") and u.get("tokens") and u.get("v_n") and u.get("d_n")):
            continue
        round_ms = u["v_sum"] / u["v_n"] + u["d_sum"] / u["d_n"] + extra_ms
        if round_ms > 0 and u["ms"] > 0:
            out.append((1.0 + u["accepted"] / u["counted"]) * u["ms"] / u["tokens"] / round_ms - 1.0)
    return out


def _outcome(lo, hi, mean):
    from specscope.profiler.analysis.verdict_rule import AGREE

    import numpy as np

    agrees = (lo >= -AGREE) & (hi <= AGREE)
    off = (lo > AGREE) | (hi < -AGREE)
    return np.where(agrees, 1, np.where(off, np.where(mean > 0, 2, 3), 0))  # 0 undecided, 1 agrees, 2/3 off +/−


def simulate_stops(truth: float, residuals, cap: int, start: int, sims: int = _SIMS, seed: int = 0):
    """``sims`` runs of the stopping rule with true error ``truth``: each case's error ``truth`` + a resampled residual,
    a look after every case from ``start`` to ``cap`` (a t interval at ``look_level``), the first decided look ends
    it. Returns (the estimate where each stopped, the cases' sd there, its outcome: 0 undecided at the cap,
    1 agrees, 2 off above, 3 off below; the number of cases it took)."""
    import numpy as np

    rng = resample.generator(seed)
    res = np.asarray(residuals, dtype=float)
    x = truth + res[resample.draws(rng, len(res), (sims, cap))]
    n = np.arange(1, cap + 1)
    mean = np.cumsum(x, axis=1) / n
    sd = np.sqrt(np.maximum(np.cumsum(x * x, axis=1) - n * mean**2, 0.0) / np.maximum(n - 1, 1))
    level = look_level(max(1, cap - start + 1))
    t = np.array([t_quantile(level, float(max(k - 1, 1))) for k in range(1, cap + 1)])
    half = t * sd / np.sqrt(n)
    state = _outcome(mean - half, mean + half, mean)
    state[:, : start - 1] = 0  # no look before the start
    decided = state > 0
    first = np.where(decided.any(axis=1), decided.argmax(axis=1), cap - 1)
    rows = np.arange(sims)
    return mean[rows, first], sd[rows, first], state[rows, first], first + 1


def corrected_error(error: float, residuals, state: str | None, cap: int, start: int = 8,
                    sims: int = _SIMS, seed: int = 20261206, n_stop: int | None = None) -> float | None:
    """The run's error with its stopping bias taken out (``CORRECTION``): θ̃ with θ̂ = θ̃ + b(θ̃), b(θ) the mean
    simulated estimate minus θ over the simulated runs that ended as this one (``state``: agrees / off / undecided,
    off on the side of ``error``), found by bisection (the same random draws at every θ, so the mean moves with θ
    alone), within four standard errors of θ̂. A run that stops early also had cases that happened to agree with each
    other, so the spread it simulates with is adjusted alike, twice: σ̃ with s = E[s at a stop near ``n_stop``].
    None without a spread to simulate (fewer than 2 residuals); the error itself when they are all alike."""
    return _corrected(float(error), tuple(float(x) for x in residuals), state, int(cap), start, sims, seed, n_stop)


@functools.lru_cache(maxsize=64)  # a session's summary is asked for again and again (the app redraws it): ~0.1 s each
def _corrected(error: float, residuals: tuple[float, ...], state: str | None, cap: int, start: int, sims: int,
               seed: int, n_stop: int | None) -> float | None:
    import numpy as np

    res = np.asarray(residuals, dtype=float)
    if len(res) < 2 or not np.isfinite(error):
        return None
    if float(np.std(res)) == 0.0:  # no noise, no stopping bias
        return float(error)
    res = res - res.mean()
    s_obs = float(res.std(ddof=1))
    shape, n_obs = res / s_obs, n_stop or len(res)
    want = 1 if state == "agrees" else (2 if error > 0 else 3) if state == "off" else 0

    def stopped(theta: float, sigma: float):
        est, sd, out, n = simulate_stops(theta, shape * sigma, cap, start, sims, seed)
        same = out == want
        if same.sum() < sims // 40:  # too few simulated runs end this way here: over all of them (Whitehead's own)
            same = np.ones_like(same)
        return est, sd, same, n

    sigma, theta = s_obs, float(error)
    for _ in range(2):
        span = 4.0 * sigma / math.sqrt(n_obs)
        lo, hi = float(error) - span, float(error) + span
        for _ in range(_ITERATIONS):  # the mean stopped estimate rises with θ: bisect for the one equal to θ̂
            theta = (lo + hi) / 2
            est, _, same, _ = stopped(theta, sigma)
            if float(est[same].mean()) > error:
                hi = theta
            else:
                lo = theta
        theta = (lo + hi) / 2
        _, sd, same, n = stopped(theta, sigma)
        near = same & (np.abs(n - n_obs) <= 2)
        near = near if near.sum() >= 50 else same
        sigma = max(sigma, sigma * s_obs / max(float(sd[near].mean()), 1e-12))  # a stop selects a small spread
    return theta
