"""Machine probes (small sizes: no speed is asserted) and chip recognition."""

from __future__ import annotations

import pytest

from specscope.engine_adapter.machine_probe import (BINS, bandwidth_probe, compute_probe, gpu_cores_from, nominal,
                                                    probe_machine, recognise_chip)


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
    ("Apple M1 Max", "Apple M1 Max", 409.6),
    ("Apple M2 Ultra", "Apple M2 Ultra", 819.2),
    ("Apple M3 Pro", "Apple M3 Pro", 153.6),
    ("Apple M4 Max", "Apple M4 Max", None),  # two bins, two bandwidths: unknown until the GPU cores are known
    ("Apple M5", "Apple M5", 153.0),
    ("AMD EPYC 7B13 64-Core Processor", "unknown", None),
    ("Intel(R) Core(TM) i7 M 620", "unknown", None),  # an "M" that is not an Apple chip
    ("", "unknown", None),
])
def test_recognise_chip(name, chip, bw):
    r = recognise_chip(name, gpu_cores=None)
    assert r["chip"] == chip and r["nominal_bandwidth_gbs"] == bw


def test_table_covers_m1_to_m5():
    for gen in range(1, 6):
        for tier in ("", " Pro", " Max"):
            assert f"M{gen}{tier}" in BINS
    assert {"M1 Ultra", "M2 Ultra", "M3 Ultra"} <= set(BINS)


@pytest.mark.parametrize("chip, cores, bw", [
    ("M1 Pro", 16, 204.8), ("M1 Max", 32, 409.6), ("M1 Max", 24, 409.6), ("M2 Max", 38, 409.6),
    ("M3 Max", 30, 307.2), ("M3 Max", 40, 409.6), ("M4 Max", 32, 409.6), ("M4 Max", 40, 546.0),
    ("M3 Pro", 18, 153.6), ("M4 Pro", 20, 273.0),
])
def test_nominal_by_chip_and_bin(chip, cores, bw):
    n = nominal(chip, cores)
    assert n["bandwidth_gbs"] == bw and n["gpu_cores"] == cores
    assert recognise_chip(f"Apple {chip}", cores)["nominal_bandwidth_gbs"] == bw


def test_nominal_bins_unknown_and_unlisted():
    assert nominal("M3 Max")["bandwidth_gbs"] is None and "differ" in nominal("M3 Max")["bin"]
    assert nominal("M1 Max")["bandwidth_gbs"] == 409.6 and nominal("M1 Max")["tflops"] is None  # the bins share it
    odd = nominal("M3 Max", 35)
    assert odd["bandwidth_gbs"] is None and "not a known M3 Max bin" in odd["bin"]
    assert nominal("Z9")["bandwidth_gbs"] is None


def test_gpu_cores_read_from_mlx_then_ioreg_then_system_profiler():
    # "gpu-core-count" = 40 beside "model" = "Apple M5 Max" in an AGXAcceleratorG17X entry, the shape ioreg prints
    # (recorded in a public repository's parser test, found through the code index)
    ioreg = '+-o AGXAcceleratorG17X  <class AGXAcceleratorG17X>\n    {\n      "model" = "Apple M5 Max"\n      "gpu-core-count" = 40\n    }\n'
    # composed in system_profiler's layout ("Total Number of Cores: N" under the chipset), not a capture
    sp = "Graphics/Displays:\n\n    Apple M1 Max:\n\n      Chipset Model: Apple M1 Max\n      Type: GPU\n      Total Number of Cores: 32\n"
    assert gpu_cores_from({"gpu_core_count": 24}, ioreg, sp) == (24, "MLX device info (gpu_core_count)")
    assert gpu_cores_from({}, ioreg, sp)[0] == 40
    assert gpu_cores_from({}, None, sp)[0] == 32
    assert gpu_cores_from({}, "garbage", None) == (None, "not found")


def test_probe_machine_gives_the_roofline_the_bins_figures():
    """What the roofline (and through it the Verify cost page and the report) reads: the nominal figure of the chip's
    bin, with the cores and the bin beside it."""
    m = probe_machine(dtype="float32", bandwidth_mib=1, matmul_n=32, reps=1, chip_name="Apple M3 Max", gpu_cores=30)
    assert (m["nominal_bandwidth_gbs"], m["gpu_cores"], m["nominal_bin"]) == (307.2, 30, "30-core GPU")
