"""The clock probe: a fixed compute-bound kernel on the model's device, read as the median of timed reps."""

from __future__ import annotations

import statistics

from specscope.engine_adapter.measure.clock_probe import ClockProbe


def test_a_reading_is_the_median_of_its_reps():
    p = ClockProbe(reps=5)
    r = p.read()
    assert len(r["reps_ms"]) == 5 and all(x > 0 for x in r["reps_ms"])
    assert r["ms"] == statistics.median(r["reps_ms"])
    d = p.describe()
    assert d["kernel"] == f"{p.chain} × matmul {p.n}×{p.n} float32" and d["flop"] == 2.0 * p.n ** 3 * p.chain
    assert d["reps"] == 5 and ("cpu" in d["device"].lower() or "gpu" in d["device"].lower())
