"""The breakdown's spread over reps: every figure carries it, estimates paired rep by rep."""

from __future__ import annotations

from specscope.engine_adapter.measure.breakdown import measure_breakdown


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
