"""The verdict's sentences about measured figures."""

from __future__ import annotations


def test_a_negative_instrumentation_cost_is_said_to_be_noise():
    from specscope.profiler.verdict import instrumentation_cost_text

    assert instrumentation_cost_text({"instrumentation_cost": 0.12}) == "+12.0%"
    assert "within noise" in instrumentation_cost_text({"instrumentation_cost": -0.03})
    assert instrumentation_cost_text({"instrumentation_cost": None}) is None
