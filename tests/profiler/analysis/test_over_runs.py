"""The verdict over runs (``analysis.over_runs``): coverage simulated with offsets between runs and without, each
claim with a negative control that fails, and a verdict that can fail."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specscope.profiler.analysis.over_runs import MIN_RUNS, fixed_interval, pooled

SIMS = 3000
TAU = 0.028  # about the spread between runs seen on the build VM (2.2–2.8% over 9–12 default MTP runs)


def _runs(rng, k: int, mu: float, tau: float) -> list[dict]:
    """k runs: each its own offset (sd tau), its own noise (se 1–2%, as the demo's runs), its own 95% interval."""
    se = rng.uniform(0.01, 0.02, k)
    y = math.log1p(mu) + rng.normal(0.0, tau, k) + rng.normal(0.0, se)
    return [{"error": math.expm1(a), "interval": [math.expm1(a - 1.96 * s), math.expm1(a + 1.96 * s)]}
            for a, s in zip(y, se)]


def _coverage(k: int, tau: float, which: str, mu: float = 0.01, seed: int = 7) -> float:
    rng = np.random.default_rng(seed)
    hit = 0
    for _ in range(SIMS):
        runs = _runs(rng, k, mu, tau)
        lo, hi = (pooled(runs)["interval"] if which == "pooled" else fixed_interval(runs) if which == "fixed"
                  else runs[0]["interval"])
        hit += lo <= mu <= hi
    return hit / SIMS


@pytest.mark.parametrize("k", [3, 5, 9])
@pytest.mark.parametrize("tau", [0.0, TAU])
def test_the_pooled_interval_covers_the_long_run_error(k, tau):
    assert _coverage(k, tau, "pooled") >= 0.93


@pytest.mark.parametrize("k", [5, 9])
def test_negative_control_pooling_blind_to_the_offsets_between_runs_fails(k):
    """The inverse-variance pooled interval (one shared error, no offsets) covers far less than 95% once runs have
    offsets of their own: the interval the verdict over runs must not use."""
    assert _coverage(k, TAU, "fixed") < 0.80


def test_negative_control_one_runs_interval_does_not_cover_the_long_run_error():
    """Why a run's verdict speaks only for its run: with offsets between runs its own interval holds the long-run
    error about two times in three; without them it covers as claimed."""
    assert _coverage(1, TAU, "single") < 0.80
    assert _coverage(1, 0.0, "single") >= 0.93


def test_the_verdict_over_runs_can_fail_and_says_how_many_runs():
    rng = np.random.default_rng(1)
    near = pooled(_runs(rng, 9, 0.005, 0.01))
    assert near["verdict"]["state"] == "agrees" and near["verdict"]["units"] == 9 and near["runs"] == 9
    far = pooled(_runs(rng, 9, 0.10, 0.01))
    assert far["verdict"]["state"] == "off" and far["error"] > 0.05
    two = pooled(_runs(rng, MIN_RUNS - 1, 0.0, 0.0))
    assert two["verdict"]["state"] == "too_little_data" and f"only {MIN_RUNS - 1} runs" in two["verdict"]["text"]


def test_offsets_between_runs_are_seen_and_sized():
    rng = np.random.default_rng(2)
    spread = [pooled(_runs(rng, 9, 0.0, TAU)) for _ in range(200)]
    calm = [pooled(_runs(rng, 9, 0.0, 0.0)) for _ in range(1000)]
    assert np.median([r["between_runs_sd"] for r in spread]) == pytest.approx(TAU, rel=0.35)
    assert np.mean([r["heterogeneity_p"] < 0.05 for r in calm]) < 0.08  # Q's tail: about 5% when runs share one error
    assert np.mean([r["heterogeneity_p"] < 0.05 for r in spread]) > 0.6


@pytest.mark.parametrize("bad", [{"error": -1.2, "interval": [-0.1, 0.1]}, {"error": 0.0, "interval": [0.1, -0.1]}])
def test_a_malformed_run_is_refused(bad):
    with pytest.raises(ValueError):
        pooled([bad, {"error": 0.0, "interval": [-0.02, 0.02]}])


def test_a_sequential_runs_corrected_error_is_what_is_pooled():
    """A run that stopped sequentially is pooled at its error corrected for the stop, its own interval moved with
    it; a run without a correction at its error as measured."""
    from specscope.profiler.analysis.over_runs import run_error

    run, corrected = run_error({"prediction_error": 0.09, "prediction_error_ci": [0.06, 0.12],
                                "prediction_error_corrected": 0.075})
    assert corrected and run["error"] == pytest.approx(0.075) and run["interval"] == pytest.approx([0.045, 0.105])
    run, corrected = run_error({"prediction_error": 0.09, "prediction_error_ci": [0.06, 0.12],
                                "prediction_error_corrected": None})
    assert not corrected and run == {"error": 0.09, "interval": [0.06, 0.12]}
    assert run_error({"prediction_error": 0.09, "prediction_error_ci": None}) == (None, False)
