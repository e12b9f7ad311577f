"""profiler.analysis.intervals and profiler.analysis.drift: interval arithmetic on hand-computed values, and the one rule
that an estimated time whose interval reaches zero is "below noise", never a negative time."""

from __future__ import annotations


import pytest

from specscope.profiler.analysis import intervals as iv
from specscope.profiler.analysis.drift import drift_phrase, drift_warning, probe_drift


def test_mean_ci_by_hand():
    # mean 2.5, sample sd sqrt(5/3) = 1.29099, se = 0.645497, half-width 1.959964 × se = 1.265151
    lo, hi = iv.mean_ci([1.0, 2.0, 3.0, 4.0])
    assert lo == pytest.approx(2.5 - 1.265151, abs=1e-6) and hi == pytest.approx(2.5 + 1.265151, abs=1e-6)
    assert iv.mean_ci([5.0]) is None and iv.mean_ci([]) is None
    assert iv.mean_ci([3.0, 3.0]) == [3.0, 3.0]


def test_span_and_union():
    assert iv.span([3.0, None, 1.0, 2.0]) == [1.0, 3.0] and iv.span([]) is None
    assert iv.union([1, 2], None, [0.5, 1.5]) == [0.5, 2] and iv.union(None) is None


def test_rate_interval_by_hand():
    # 10 tokens over 4 rounds of 1, 2, 3, 4 ms: mean 2.5 ms in [1.234849, 3.765151]
    lo, hi = iv.rate_interval(10, [1.0, 2.0, 3.0, 4.0])
    assert lo == pytest.approx(1000 * 10 / (4 * 3.765151), rel=1e-6)
    assert hi == pytest.approx(1000 * 10 / (4 * 1.234849), rel=1e-6)


def test_below_noise_rule():
    assert iv.below_noise(-3.3) and iv.below_noise(0.0) and not iv.below_noise(2.0) and not iv.below_noise(None)
    assert iv.below_noise(2.0, [-0.5, 4.0]) and iv.below_noise(2.0, [0.0, 4.0]) and not iv.below_noise(2.0, [0.5, 4.0])
    assert iv.time_text(-3.3) == "below noise" and iv.time_text(2.0, [-0.5, 4.0]) == "below noise"
    assert iv.time_text(2.0, [0.5, 4.0], unit=" ms") == "2.00 ms" and iv.time_text(None) == "—"
    assert iv.spread_text([-0.2, 1.5]) == "0.00–1.50"  # a spread never prints a negative time either


def test_bias_is_not_noise():
    """An interval wholly below zero is a measured ruler effect, named as one with its value and interval; only an
    interval that straddles zero reads "below noise"."""
    assert iv.noise_state(-3.2, [-5.1, -1.4]) == "bias" and not iv.below_noise(-3.2, [-5.1, -1.4])
    assert iv.noise_state(-0.3, [-1.0, 0.4]) == "noise" and iv.noise_state(2.0, [0.5, 4.0]) == "measured"
    assert iv.time_text(-3.2, [-5.1, -1.4], unit=" ms") == "ruler bias -3.20 ms (-5.10…-1.40)"
    assert iv.noise_label(-3.2, [-5.1, -1.4]).startswith("ruler bias") and iv.noise_label(-0.3, [-1, 0.4]) == "below noise"
    assert iv.noise_label(2.0, [0.5, 4.0]) is None and iv.not_a_time(-3.2, [-5.1, -1.4])


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


def test_a_probe_quicker_late_than_early_is_drift_too():
    """A run read "no drift (-36.0% from start to end, within its own noise: its reps spread over 13.9%)": a change of
    36% against 14% of noise is no quiet machine, whichever way it goes (fails on the old one-sided rule)."""
    series = [_reading(x, rel=0.14) for x in (15.0, 14.6, 15.2, 12.0, 10.5, 9.6, 9.8, 9.5, 9.7)]
    d = probe_drift(series)
    assert d["slowdown"] == pytest.approx(9.7 / 15.0 - 1) and d["drift"] is True
    w = drift_warning(d)
    assert w and "35.3% quicker at the end of the run than at its start" in w and "slowed" not in w
    assert "no drift" not in drift_phrase(d)
    # the control: the same change inside a noisier probe's own spread is not flagged
    loud = probe_drift([_reading(x, rel=0.40) for x in (15.0, 14.6, 15.2, 12.0, 10.5, 9.6, 9.8, 9.5, 9.7)])
    assert loud["drift"] is False and "no drift" in drift_phrase(loud)


def test_drift_states_its_noise_as_a_range_not_a_plus_minus():
    d = probe_drift([_reading(x, rel=0.10) for x in (10.0, 10.3, 10.1, 10.6, 10.4, 10.5)])
    text = drift_phrase(d)
    assert "±" not in text and "spread over 10.0%, highest − lowest" in text
