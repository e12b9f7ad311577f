"""engine_adapter.chip_facts: the one chip table (bins, GPU generations, the public wide-verify figures with their
sources) and what it says for a chip, beside what a machine measured."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import specscope
from specscope.engine_adapter import chip_facts as cf

SRC = Path(specscope.__file__).resolve().parent


def test_one_generation_table_feeds_the_families_bf16_and_qmv_wide():
    assert cf.GPU_FAMILIES == {13: "M1", 14: "M2", 15: "M3", 16: "M4", 17: "M5"}
    assert cf.FIRST_NATIVE_BF16_FAMILY == 15 and cf.FIRST_QMV_WIDE_GENERATION == 15
    assert [n for n in cf.GENERATIONS if cf.qmv_wide_applies(n)] == [15, 16, 17]
    assert cf.qmv_wide_applies(18)  # a newer generation than the table: mlx#3764's rule (15 and later)
    # no second spelling of the family table anywhere in the package
    copies = [p.relative_to(SRC).as_posix() for p in SRC.rglob("*.py")
              if re.search(r'13:\s*"M1",\s*14:\s*"M2"', p.read_text(encoding="utf-8"))]
    assert copies == []
    from specscope.engine_adapter import machine_probe

    assert machine_probe.BINS is cf.BINS


def test_generation_from_the_architecture_or_the_name():
    assert cf.generation(architecture="applegpu_g14d") == 14
    assert cf.generation("Apple M4 Pro") == 16 and cf.generation("M5 Max") == 17
    assert cf.generation("Intel(R) Xeon(R)") is None and cf.generation(None, "x86_64") is None
    assert cf.chip_name("Apple M3 Ultra") == "M3 Ultra" and cf.chip_name("AMD EPYC M3") is None


def test_every_public_figure_names_its_source_and_what_was_checked():
    for m in cf.WIDE_VERIFY:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+#\d+", m["source"]), m
        assert m["checked"] and m["what"]
        assert (m["ratio"] is None) != (m["fit"] is None) and (m["positions"] is None) == (m["fit"] is not None)
        assert cf.generation(m["chip"]) == m["generation"], m


def test_measured_on_this_chip_only_for_that_chip():
    m2 = cf.wide_verify_facts("Apple M2", "Device(gpu, 0)")
    assert m2["basis"] == cf.MEASURED and [m["ratio"] for m in m2["measurements"]] == [1.725]
    m2max = cf.wide_verify_facts("Apple M2 Max", "Device(gpu, 0)")  # same generation, another chip: inferred
    assert m2max["basis"] == cf.INFERRED and m2max["measurements"] == m2["measurements"]
    m1 = cf.wide_verify_facts("Apple M1 Pro", "Device(gpu, 0)")  # no M1 figure: the M2's, the same kernel path
    assert m1["basis"] == cf.INFERRED and m1["qmv_wide"] is False and [m["chip"] for m in m1["measurements"]] == ["M2"]
    m5 = cf.wide_verify_facts("Apple M5 Max", "Device(gpu, 0)")
    assert m5["basis"] == cf.MEASURED and m5["qmv_wide"] is True and "1.29×" in m5["text"]
    m3 = cf.wide_verify_facts("Apple M3", "Device(gpu, 0)")
    assert m3["basis"] == cf.INFERRED and {m["chip"] for m in m3["measurements"]} == {"M3 Ultra"}


def test_a_cpu_device_or_an_unknown_chip_gets_no_figure():
    cpu = cf.wide_verify_facts("Apple M2", "Device(cpu, 0)")
    assert not cpu["applies"] and cpu["measurements"] == [] and "CPU backend" in cpu["text"]
    other = cf.wide_verify_facts("Intel(R) Xeon(R) Processor", "Device(gpu, 0)")
    assert not other["applies"] and other["basis"] == cf.UNKNOWN and not re.search(r"\d\.\d", other["text"])


def test_beside_this_machine_at_the_same_width_and_never_an_unmeasured_one():
    m2 = cf.wide_verify_facts("Apple M2", "Device(gpu, 0)")
    [line] = cf.beside_this_machine(m2, {1: 1.0, 2: 1.31, 3: 1.6})
    assert "1.725×" in line and "mlx-lm#990" in line and line.endswith("this machine: 1.31× at n = 2")
    [gap] = cf.beside_this_machine(m2, {1: 1.0, 3: 1.6})
    assert gap.endswith("this machine: n = 2 not measured")
    m3u = cf.wide_verify_facts("Apple M3 Ultra", "Device(gpu, 0)")
    fit, moe = cf.beside_this_machine(m3u, {1: 1.0, 2: 1.2, 3: 1.4}, width=3)
    assert "0.83 + 0.170·K" in fit and "the fit at K = 3: 1.34; this machine: 1.40× at n = 3" in fit
    assert "2.2×" in moe and moe.endswith("1.20× at n = 2")
    assert cf.beside_this_machine(m3u, {}, width=None)[0].endswith("no verify width to compare")


def test_mlx_versions_with_qmv_wide():
    assert cf.mlx_has_qmv_wide("0.32.4") and cf.mlx_has_qmv_wide("1.0") and not cf.mlx_has_qmv_wide("0.31.2")
    assert cf.mlx_has_qmv_wide(None) is None and cf.mlx_has_qmv_wide("?") is None


def test_the_app_can_read_the_chip_facts_without_mlx():
    code = "import sys, specscope.engine_adapter.chip_facts; print(sorted(m for m in sys.modules if m.startswith('mlx')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
