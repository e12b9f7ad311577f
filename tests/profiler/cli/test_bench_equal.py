"""Benchmarks that compare equal work: ABBA order, and bench predict reading the genuine prediction."""

from specscope.profiler.cli.bench_common import BenchConfig

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

    a = BenchConfig(pairs=4, until=None, max_pairs=0)
    pairs = abba_pairs(a, run("A", 2.0), run("B", 1.0))
    assert calls == ["A", "B", "B", "A", "A", "B", "B", "A"]
    assert pairs == [(2.0, 1.0, "a", "b")] * 4  # whatever ran first, A's value is first


def test_predict_runs_each_point_until_decided_and_reports_the_ledger_apart():
    """The error is the verdict's own: the prediction against the full rounds' speed, which its interval is of (each
    case's shorter last rounds, which the round model does not price, are in the all-rounds figure beside it)."""
    seen = []

    def run(cfg):
        seen.append((cfg.num_draft_tokens, cfg.oracle_p, cfg.drafter, cfg.max_tokens, cfg.until, cfg.cases))
        return {"predicted_speedup": 0.5 + cfg.oracle_p / 10, "ledger_speedup": 0.7, "judged_measured_speedup": 0.5,
                "measured_speedup": 0.45,
                "prediction_source": "components", "p": cfg.oracle_p, "tokens_per_round": 1.5, "cases_measured": 9,
                "prediction_verdict": {"state": "agrees"}, "prediction_error_ci": [-0.01, 0.01]}

    points = []
    rows = predict_sweep(BenchConfig(), [0.0, 1.0], [1, 3], 16, 12, run=run, on_point=points.append)
    # every point: the oracle, until its verdict is decided, at most the cap's cases of the prompt
    assert seen == [(k, p, "oracle", 16, "decided", 12) for k in (1, 3) for p in (0.0, 1.0)]
    assert [r["error"] for r in rows] == pytest.approx([0.0, 0.2, 0.0, 0.2])
    assert all(r["ledger_error"] == pytest.approx(0.4) and r["prediction_source"] == "components" for r in rows)
    assert all(r["measured"] == 0.5 and r["measured_all_rounds"] == 0.45 for r in rows)
    assert all(r["verdict"] == "agrees" and r["cases"] == 9 and r["seconds"] >= 0 for r in rows)
    assert points == rows  # each point reported as it is decided


def test_predict_says_when_a_point_has_no_prediction():
    with pytest.raises(SpecscopeError, match="no prediction"):
        predict_sweep(BenchConfig(), [0.5], [1], 16, 8,
                      run=lambda cfg: {"predicted_speedup": None, "judged_measured_speedup": 0.5,
                                       "prediction_unavailable": "no verify curve"})


def test_predict_gives_each_point_its_own_cap_unless_max_pairs_is_given(monkeypatch):
    """A point still undecided at the cap is the one whose error is least known: predict's cap is its own (larger than
    the A/B benchmarks'), and ``--max-pairs`` still sets it."""
    from specscope.profiler.cli import bench_equal
    from specscope.profiler.cli.bench_common import MAX_PAIRS, PREDICT_MAX_CASES

    caps, grids = [], []

    def sweep(a, ps, ks, max_tokens, cap, on_point=None):
        caps.append(cap)
        grids.append((ps, ks))
        return [{"error": 0.01, "verdict": "agrees", "cases": 9}]

    monkeypatch.setattr(bench_equal, "predict_sweep", sweep)
    bench_equal.bench_predict(BenchConfig())
    bench_equal.bench_predict(BenchConfig(max_pairs=12, p_grid=(0.5,), k_grid=(2, 4)))  # --p-grid 0.5 --k-grid 2,4
    assert caps == [PREDICT_MAX_CASES, 12] and PREDICT_MAX_CASES > MAX_PAIRS
    assert grids == [([0.0, 0.25, 0.5, 0.75, 1.0], [1, 3]), ([0.5], [2, 4])]  # the default grid unless given


def test_predict_takes_each_points_error_corrected_for_its_sequential_stop():
    """A run that stopped at its first decided look reports its error with the stopping bias taken out: that figure
    is the point's error (and so the largest), the raw one kept beside it."""
    def run(cfg):
        return {"predicted_speedup": 0.55, "judged_measured_speedup": 0.5, "prediction_source": "components",
                "prediction_verdict": {"state": "off"}, "prediction_error_ci": [0.06, 0.14],
                "prediction_error": 0.1, "prediction_error_corrected": 0.08,
                "prediction_error_correction": "bias-adjusted for the sequential stop"}

    rows = predict_sweep(BenchConfig(), [0.5], [1], 16, 12, run=run)
    assert rows[0]["error"] == pytest.approx(0.08) and rows[0]["error_uncorrected"] == pytest.approx(0.1)
    assert "sequential stop" in rows[0]["error_correction"]
