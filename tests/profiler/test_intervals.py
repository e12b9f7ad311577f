"""profiler.intervals and profiler.drift: interval arithmetic on hand-computed values, and the one rule
that an estimated time whose interval reaches zero is "below noise", never a negative time."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from specscope.profiler import intervals as iv
from specscope.profiler.drift import drift_phrase, drift_warning, probe_drift


def test_mean_ci_by_hand():
    # mean 2.5, sample sd sqrt(5/3) = 1.29099, se = 0.645497, half-width 1.959964 × se = 1.265151
    lo, hi = iv.mean_ci([1.0, 2.0, 3.0, 4.0])
    assert lo == pytest.approx(2.5 - 1.265151, abs=1e-6) and hi == pytest.approx(2.5 + 1.265151, abs=1e-6)
    assert iv.mean_ci([5.0]) is None and iv.mean_ci([]) is None
    assert iv.mean_ci([3.0, 3.0]) == [3.0, 3.0]


def test_span_and_union():
    assert iv.span([3.0, None, 1.0, 2.0]) == [1.0, 3.0] and iv.span([]) is None
    assert iv.union([1, 2], None, [0.5, 1.5]) == [0.5, 2] and iv.union(None) is None


def test_tokens_per_round_interval_by_hand():
    # 4 rounds at k=2 accepting 0, 1, 2, 2: a1 = 3/4, a2 = 2/4. Wilson 95%: a1 in [0.300642, 0.954413],
    # a2 in [0.150039, 0.849961]; E = 1 + a1 + a2 = 2.25 in [1.450681, 2.804374]
    lo, hi = iv.tokens_per_round_interval(Counter({0: 1, 1: 1, 2: 2}), 2)
    assert lo == pytest.approx(1 + 0.300642 + 0.150039, abs=1e-6)
    assert hi == pytest.approx(1 + 0.954413 + 0.849961, abs=1e-6)
    assert iv.tokens_per_round_interval(Counter(), 2) is None


def test_rate_interval_by_hand():
    # 10 tokens over 4 rounds of 1, 2, 3, 4 ms: mean 2.5 ms in [1.234849, 3.765151]
    lo, hi = iv.rate_interval(10, [1.0, 2.0, 3.0, 4.0])
    assert lo == pytest.approx(1000 * 10 / (4 * 3.765151), rel=1e-6)
    assert hi == pytest.approx(1000 * 10 / (4 * 1.234849), rel=1e-6)


def test_prediction_error_interval_by_hand():
    # predicted / measured = E · (1000 / spec tok/s) / (T_verify + T_draft)
    # lowest: E 1.5, round 120 ms, 12 tok/s -> 1500 / 1440 - 1 = +4.1667%
    # highest: E 2.0, round 100 ms, 10 tok/s -> 2000 / 1000 - 1 = +100%
    lo, hi = iv.prediction_error_interval([1.5, 2.0], [100.0, 120.0], [10.0, 12.0])
    assert lo == pytest.approx(1500 / 1440 - 1) and hi == pytest.approx(1.0)
    assert iv.prediction_error_interval(None, [1, 2], [1, 2]) is None
    assert iv.prediction_error_interval([1, 2], [0.0, 2.0], [1, 2])[1] == math.inf


def test_the_prediction_error_point_equals_the_interval_formula_at_its_centre():
    """T_decode cancels: (E·T_decode/(T_v+T_d)) / (spec/plain) = E·(1000/spec)/(T_v+T_d) with T_decode = 1000/plain."""
    e, t_round, plain, spec = 1.8, 150.0, 20.0, 11.0
    predicted = e * (1000 / plain) / t_round
    measured = spec / plain
    lo, hi = iv.prediction_error_interval([e, e], [t_round, t_round], [spec, spec])
    assert lo == pytest.approx(predicted / measured - 1) == pytest.approx(hi)


def test_below_noise_rule():
    assert iv.below_noise(-3.3) and iv.below_noise(0.0) and not iv.below_noise(2.0) and not iv.below_noise(None)
    assert iv.below_noise(2.0, [-0.5, 4.0]) and iv.below_noise(2.0, [0.0, 4.0]) and not iv.below_noise(2.0, [0.5, 4.0])
    assert iv.time_text(-3.3) == "below noise" and iv.time_text(2.0, [-0.5, 4.0]) == "below noise"
    assert iv.time_text(2.0, [0.5, 4.0], unit=" ms") == "2.00 ms" and iv.time_text(None) == "—"
    assert iv.spread_text([-0.2, 1.5]) == "0.00–1.50"  # a spread never prints a negative time either


def _reading(ms, rel=0.02):
    return {"ms": ms, "reps_ms": [ms * (1 - rel / 2), ms, ms * (1 + rel / 2)], "when": "before"}


def test_probe_drift_by_hand():
    series = [_reading(x) for x in (10.0, 10.2, 10.1, 10.4, 12.0, 13.0, 13.0, 13.2, 12.8)]
    d = probe_drift(series)
    # 9 readings: thirds of 3. Early median 10.1, late median 13.0; own noise 2% -> +28.7% > 2%: drift
    assert d["early_ms"] == 10.1 and d["late_ms"] == 13.0 and d["noise"] == pytest.approx(0.02)
    assert d["slowdown"] == pytest.approx(13.0 / 10.1 - 1) and d["drift"] is True
    assert "slowed by +28.7%" in drift_warning(d)
    calm = probe_drift([_reading(x, rel=0.10) for x in (10.0, 10.3, 10.1, 10.6, 10.4, 10.5)])
    # early median 10.15, late 10.5: +3.4%, inside its own 10% noise
    assert calm["drift"] is False and drift_warning(calm) is None and "no drift" in drift_phrase(calm)
    few = probe_drift([_reading(10.0), _reading(20.0)])
    assert few["drift"] is None and "too few" in drift_phrase(few)
    assert probe_drift([]) is None and "not recorded" in drift_phrase(None)
    cooling = [{**_reading(30.0), "when": "cooldown"}] + series
    assert probe_drift(cooling)["slowdown"] == d["slowdown"] and probe_drift(cooling)["cooldown_readings"] == 1
