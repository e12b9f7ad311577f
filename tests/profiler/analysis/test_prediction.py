"""The prediction from components measured apart, beside the ledger: hand-computed values and every refusal."""

from __future__ import annotations

import pytest

from specscope.profiler.analysis.prediction import component_prediction, prediction_text

ROOF = {"curve": [{"positions": 1, "whole_ms": 40.0}, {"positions": 2, "whole_ms": 70.0}, {"positions": 3, "whole_ms": 100.0}],
        "division": {"drafter": "mtp", "k": 2, "t_draft_ms": 20.0}}
SUMMARY = {"k": 2, "tokens_per_round": 1.8, "measured_speedup": 0.6, "predicted_speedup": 0.59, "prediction_error": -0.017}


def test_prediction_uses_the_curve_and_the_draft_steps_timed_apart():
    p = component_prediction(ROOF, SUMMARY, "mtp")
    assert p["available"]
    assert p["speedup"] == pytest.approx(1.8 * 40.0 / (100.0 + 20.0))  # E · T_decode / (T_verify(k+1) + T_draft) = 0.6
    assert p["error"] == pytest.approx(0.0)
    assert p["ledger_speedup"] == 0.59
    assert "0.600×" in prediction_text(p) and "+0.0%" in prediction_text(p)


@pytest.mark.parametrize("roof, summary, drafter, why", [
    (None, SUMMARY, "mtp", "no verify cost measured"),
    ({**ROOF, "curve": ROOF["curve"][:2]}, SUMMARY, "mtp", "does not reach k+1 = 3"),
    ({**ROOF, "division": {"drafter": "mtp", "k": 1, "t_draft_ms": 9.0}}, SUMMARY, "mtp", "timed no drafts at k = 2"),
    (ROOF, SUMMARY, "ngram", "timed with mtp, the run used ngram"),
    (ROOF, {**SUMMARY, "tokens_per_round": None}, "mtp", "no speculative rounds"),
])
def test_no_prediction_without_its_inputs(roof, summary, drafter, why):
    p = component_prediction(roof, summary, drafter)
    assert not p["available"] and why in p["why"]
    assert prediction_text(p).endswith(f"not available ({p['why']})")
