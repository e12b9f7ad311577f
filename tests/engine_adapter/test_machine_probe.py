"""Machine probes (small sizes: no speed is asserted) and chip recognition."""

from __future__ import annotations

import pytest

from specscope.engine_adapter.machine_probe import NOMINAL, bandwidth_probe, compute_probe, probe_machine, recognise_chip


def test_probe_machine_small():
    m = probe_machine(dtype="float32", bandwidth_mib=4, matmul_n=64, reps=2, chip_name="AMD EPYC 7B13")
    assert m["bandwidth_gbs"] > 0 and m["peak_tflops"] > 0
    assert m["chip"] == "unknown" and m["nominal_bandwidth_gbs"] is None and m["nominal_tflops"] is None
    assert m["bandwidth_probe"]["bytes"] == 4 * 2**20 and len(m["bandwidth_probe"]["ms"]) == 2
    assert m["compute_probe"]["n"] == 64 and m["compute_probe"]["dtype"] == "float32"


def test_compute_probe_in_half_precision_and_bad_dtype():
    assert compute_probe(32, "bfloat16", reps=1)["peak_tflops"] > 0
    with pytest.raises(ValueError):
        compute_probe(32, "int32")
    with pytest.raises(ValueError):
        compute_probe(32, "nonsense")
    assert bandwidth_probe(1, reps=1)["bytes"] == 2**20


@pytest.mark.parametrize("name, chip, bw", [
    ("Apple M1", "Apple M1", 68.25),
    ("Apple M1 Max", "Apple M1 Max", 400.0),
    ("Apple M2 Ultra", "Apple M2 Ultra", 800.0),
    ("Apple M3 Pro", "Apple M3 Pro", 150.0),
    ("Apple M4 Max", "Apple M4 Max", 546.0),
    ("Apple M5", "Apple M5", 153.0),
    ("AMD EPYC 7B13 64-Core Processor", "unknown", None),
    ("Intel(R) Core(TM) i7 M 620", "unknown", None),  # an "M" that is not an Apple chip
    ("", "unknown", None),
])
def test_recognise_chip(name, chip, bw):
    r = recognise_chip(name)
    assert r["chip"] == chip and r["nominal_bandwidth_gbs"] == bw


def test_table_covers_m1_to_m5():
    for gen in range(1, 6):
        for tier in ("", " Pro", " Max"):
            assert f"M{gen}{tier}" in NOMINAL
    assert {"M1 Ultra", "M2 Ultra", "M3 Ultra"} <= set(NOMINAL)
