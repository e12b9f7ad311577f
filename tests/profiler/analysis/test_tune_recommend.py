"""tune's one recommendation (``analysis.tune_recommend.recommendation``)."""

from __future__ import annotations

from specscope.profiler.analysis.tune_recommend import recommendation


def _row(**kw):
    row = {"drafter": "ngram", "k": 2, "measured_speedup": 0.8, "predicted_speedup": 0.82, "predicted_ci95": None,
           "measured_ci95": [0.75, 0.85], "what_if": False, "t_verify_ms": 30.0, "break_even_verify_ms": 12.0}
    return row | kw


def test_a_loss_says_the_verify_time_that_would_pay_or_that_none_can():
    """A break-even out of reach is None in tune's rows (never a negative time): the text says nothing can pay, where
    it once raised a TypeError (an internal error in `specscope tune`, seen under load)."""
    assert "it would need T_verify ≤ 12.0 ms (it is 30.0 ms)" in recommendation([_row()])["text"]
    out = recommendation([_row(break_even_verify_ms=None)])
    assert "its draft alone costs more than the tokens it could save" in out["text"] and not out["wins"]
