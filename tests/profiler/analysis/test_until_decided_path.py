"""The product's own path, end to end: per-case rounds and component timings -> the error's units
(``uncertainty.prediction_units``) -> the bootstrap interval (``uncertainty.error_interval``) -> each look's widening
and judgement (``sequential.looked_verdict``: ``widen`` at ``look_level``, ``uncertainty.judge``, ``verdict_rule``)
-> ``run --until decided``'s stopping (a look after every case from the MIN_UNITS-th, at most UNTIL_DECIDED_CASES
cases, the first decided look ends the run, as ``run.protocol.until_decided`` does). The negative control is the same
path with the widening removed (each look judged at 95%)."""

from __future__ import annotations


import numpy as np
import pytest

from specscope.profiler.analysis.sequential import UNTIL_DECIDED_CASES, looked_verdict
from specscope.profiler.analysis.uncertainty import MIN_UNITS, error_interval, prediction_units

K, ROUNDS, REPS = 3, 12, 4       # drafts per round; measured rounds and component samples per case
VERIFY, DRAFT = 30.0, 6.0        # a round's components (ms), as timed apart


def _lognormal(rng, sd, size=None):
    """exp(N(−sd²/2, sd)): mean exactly 1, so the true error is the rounds' bias and nothing else."""
    return np.exp(rng.normal(-sd * sd / 2, sd, size))


STALL = 0.2  # the mean size of a stall: +20% on a case's rounds, exponentially distributed


def case(rng, truth: float, noise: float) -> dict:
    """One case: ROUNDS measured rounds costing (1 + truth) × (VERIFY + DRAFT) on average — a per-case level
    (log sd ``noise``: the prompt, the machine's moment), and now and then (10%) a stall (+STALL on average,
    exponential) on top, rescaled so its mean is 1 (a skewed error) — and REPS component samples timed beside them
    (their own moment, log sd 0.02)."""
    stall = 1.0 + (rng.exponential(STALL) if rng.random() < 0.1 else 0.0)
    level = _lognormal(rng, noise) * stall / (1.0 + 0.1 * STALL)
    accepted = rng.binomial(K, 0.6, ROUNDS)
    ms = (1.0 + truth) * (VERIFY + DRAFT) * level * _lognormal(rng, 0.05, ROUNDS)
    moment = _lognormal(rng, 0.02)
    return {"rounds": [(int(a) + 1, float(m), int(a), True) for a, m in zip(accepted, ms)],
            "components": {"verify_ms": list(VERIFY * moment * _lognormal(rng, 0.03, REPS)),
                           "draft_ms": list(DRAFT * moment * _lognormal(rng, 0.03, REPS))}}


def point_error(units) -> float:
    """The error's plug-in over the units: E · (ms ÷ tokens) ÷ (mean verify + mean draft) − 1, the figure the
    bootstrap resamples (T_decode cancels between the predicted and the measured speedup)."""
    s = {key: sum(u[key] for u in units) for key in units[0]}
    e = 1.0 + s["accepted"] / s["counted"]
    return e * s["ms"] / s["tokens"] / (s["v_sum"] / s["v_n"] + s["d_sum"] / s["d_n"]) - 1.0


def until_decided(rng, truth: float, noise: float, sequential: bool = True) -> tuple[str | None, float, int]:
    """One ``--until decided`` run: (its decided verdict or None at the cap, the error it reports, cases taken)."""
    cap = UNTIL_DECIDED_CASES
    unit, units = prediction_units([case(rng, truth, noise) for _ in range(cap)], K)
    assert unit == "cases"
    for n in range(MIN_UNITS, cap + 1):  # cases are units from CASES_AS_UNIT on: the first n cases are units[:n]
        err = point_error(units[:n])
        v = looked_verdict(err, error_interval(units[:n]), unit, n, n - 1, n, None, cap if sequential else None)
        if v["state"] in ("agrees", "off"):
            return v["state"], err, n
    return None, err, cap


def wrong_share(truth: float, noise: float, trials: int, sequential: bool, seed: int) -> tuple[float, float]:
    """(share of runs that ended in a wrong verdict, share decided)."""
    rng = np.random.default_rng(seed)
    want = "off" if abs(truth) > 0.05 else "agrees"
    got = [until_decided(rng, truth, noise, sequential)[0] for _ in range(trials)]
    return sum(1 for g in got if g and g != want) / trials, sum(1 for g in got if g) / trials


NOISE = 0.02  # the cases' own level (log sd); the stalls (10%, +20% on average) make the error skewed to the right


@pytest.mark.parametrize("truth", [pytest.param(0.0, marks=pytest.mark.slow), pytest.param(0.035, marks=pytest.mark.slow),
                                   pytest.param(-0.065, marks=pytest.mark.slow), 0.06])
def test_the_products_path_ends_in_a_wrong_verdict_rarely(truth):
    """The claim: at most 2.5% of ``--until decided`` runs end in a wrong verdict (Bonferroni over the looks: any
    look's interval misses the truth in at most 5% of runs, on the wrong side in about half), and a decided verdict
    is right at least 93% of the time. Seen, 60 runs each: no wrong verdict at 0, +3.5%, −6.5% and +6% (decided
    78%, 52%, 53%, 0%). At +6%, outside ±5% with the stalls' skew against it, the same path with the widening
    removed ends "agrees" in 13% of runs (decided 25%: the negative control, below). Only +6% runs by default (~10 s).

    Not claimed: rarer, larger stalls (10% of cases +60% on average) defeat both looks — at +7.5% the product's path
    then ends "agrees" in about 28% of runs, because eight cases without a stall look tight and low; a mean over rare
    large events is not known from eight cases."""
    trials = 60
    wrong, decided = wrong_share(truth, NOISE, trials, sequential=True, seed=5)
    assert wrong <= 0.025, f"the product's path ended wrongly in {wrong:.3f} of runs"
    assert decided == 0 or wrong / decided <= 0.07
    if truth == 0.06:
        naive, _ = wrong_share(truth, NOISE, trials, sequential=False, seed=5)
        assert naive > 0.025, f"negative control: without the widening only {naive:.3f} of runs ended wrongly"
