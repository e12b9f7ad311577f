"""The verdict's sentences about measured figures."""

from __future__ import annotations


def test_a_negative_instrumentation_cost_is_said_to_be_noise():
    from specscope.profiler.analysis.verdict import instrumentation_cost_text

    assert instrumentation_cost_text({"instrumentation_cost": 0.12}) == "+12.0%"
    assert "within noise" in instrumentation_cost_text({"instrumentation_cost": -0.03})
    assert instrumentation_cost_text({"instrumentation_cost": None}) is None


def test_a_draft_time_at_or_below_zero_is_noise_not_a_negative_time():
    from specscope.profiler.analysis.intervals import BELOW_NOISE, draft_time_text

    assert draft_time_text(-0.28, [-0.6, 0.1], unit=" ms") == BELOW_NOISE
    assert draft_time_text(-0.28, unit=" ms") == BELOW_NOISE
    assert draft_time_text(0.19, [-0.1, 0.5], unit=" ms") == BELOW_NOISE  # its interval reaches zero
    assert draft_time_text(4.49, [4.1, 4.9], unit=" ms") == "4.49 ms"
    assert draft_time_text(None) == "—"
