"""Benchmarks that compare equal work: ABBA order, and bench predict reading the genuine prediction."""

from types import SimpleNamespace

import pytest

from specscope.errors import SpecscopeError
from specscope.profiler.cli.bench_equal import abba_pairs, predict_sweep


def test_abba_alternates_the_order_and_keeps_a_and_b_apart():
    calls = []

    def run(name, value):
        def f():
            calls.append(name)
            return value, name.lower()
        return f

    a = SimpleNamespace(pairs=4, until_stable=False, max_pairs=0)
    pairs = abba_pairs(a, run("A", 2.0), run("B", 1.0))
    assert calls == ["A", "B", "B", "A", "A", "B", "B", "A"]
    assert pairs == [(2.0, 1.0, "a", "b")] * 4  # whatever ran first, A's value is first


def test_predict_reads_the_genuine_prediction_and_reports_the_ledger_apart():
    seen = []

    def run(cfg):
        seen.append((cfg.num_draft_tokens, cfg.oracle_p, cfg.drafter, cfg.max_tokens))
        return {"predicted_speedup": 0.5 + cfg.oracle_p / 10, "ledger_speedup": 0.7, "measured_speedup": 0.5,
                "prediction_source": "components", "p": cfg.oracle_p, "tokens_per_round": 1.5}

    rows = predict_sweep(SimpleNamespace(model=None), [0.0, 1.0], [1, 3], 16, 1, run=run)
    assert seen == [(1, 0.0, "oracle", 16), (1, 1.0, "oracle", 16), (3, 0.0, "oracle", 16), (3, 1.0, "oracle", 16)]
    assert [r["error"] for r in rows] == pytest.approx([0.0, 0.2, 0.0, 0.2])
    assert all(r["ledger_error"] == pytest.approx(0.4) and r["prediction_source"] == "components" for r in rows)


def test_predict_says_when_it_only_has_a_ledger_or_nothing():
    old = predict_sweep(SimpleNamespace(model=None), [0.5], [1], 16, 1,
                        run=lambda cfg: {"predicted_speedup": 0.6, "measured_speedup": 0.5})
    assert old[0]["prediction_source"].startswith("ledger")
    with pytest.raises(SpecscopeError, match="no prediction"):
        predict_sweep(SimpleNamespace(model=None), [0.5], [1], 16, 1,
                      run=lambda cfg: {"predicted_speedup": None, "measured_speedup": 0.5,
                                       "prediction_unavailable": "no verify curve"})
