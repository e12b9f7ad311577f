"""The clock probe: a fixed compute-bound kernel on the model's device, read as the median of timed reps;
and the breakdown's spread over reps (every figure carries it, estimates paired rep by rep)."""

from __future__ import annotations

import statistics

from specscope.engine_adapter.breakdown import measure_breakdown
from specscope.engine_adapter.clock_probe import ClockProbe


def test_a_reading_is_the_median_of_its_reps():
    p = ClockProbe(reps=5)
    r = p.read()
    assert len(r["reps_ms"]) == 5 and all(x > 0 for x in r["reps_ms"])
    assert r["ms"] == statistics.median(r["reps_ms"])
    d = p.describe()
    assert d["kernel"] == f"{p.chain} × matmul {p.n}×{p.n} float32" and d["flop"] == 2.0 * p.n ** 3 * p.chain
    assert d["reps"] == 5 and ("cpu" in d["device"].lower() or "gpu" in d["device"].lower())


def test_breakdown_keeps_every_rep_and_its_spread(hybrid, prompt):
    bd = measure_breakdown(hybrid.model, prompt, prompt[:3], k=2, reps=3)
    for side in ("decode", "verify"):
        d = bd[side]
        sp, samples = d["spread"], d["samples"]
        assert len(samples["whole_ms"]) == len(samples["instrumented_ms"]) == 3
        assert sp["whole_ms"] == [min(samples["whole_ms"]), max(samples["whole_ms"])]
        for c, xs in samples["blocks"].items():
            assert len(xs) == 3 and sp["blocks"][c] == [min(xs), max(xs)]
        # paired per rep, and holding the estimate itself
        assert sp["inter_block_ms"][0] <= d["inter_block_ms"] <= sp["inter_block_ms"][1]
        for c, est in d["skip_estimates"].items():
            lo, hi = sp["skip_estimates"][c]
            pairs = [w - x for w, x in zip(samples["whole_ms"], samples["skipped_ms"][c])]
            assert lo == min(pairs + [est]) and hi == max(pairs + [est])
