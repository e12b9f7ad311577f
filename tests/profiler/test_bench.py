"""Each benchmark runs and emits well-formed JSON. Speed itself is never asserted here."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from specscope.profiler.bench import BENCHES

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def results():
    r = subprocess.run(
        [sys.executable, "-m", "specscope.profiler.cli", "bench", "all", "--pairs", "1", "--max-tokens", "6", "-k", "2", "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)


def test_every_benchmark_reports(results):
    assert [x["benchmark"] for x in results] == list(BENCHES)


@pytest.mark.parametrize("name", list(BENCHES))
def test_benchmark_json_is_well_formed(name, results):
    res = next(x for x in results if x["benchmark"] == name)
    for key in ("ratio", "ratio_min", "ratio_max"):
        assert isinstance(res[key], float) and res[key] >= 0
    assert res["ratio_min"] <= res["ratio"] <= res["ratio_max"]
    assert isinstance(res["met"], bool) and res["target"].split()[0] in (">=", "<=")
    assert isinstance(res["raw"], dict) and res["raw"]


def test_spec_bench_checks_identical_tokens(results):
    res = next(x for x in results if x["benchmark"] == "spec-vs-mlx-lm")
    assert res["raw"]["identical_tokens"] is True


def test_rollback_never_reruns_the_model(results):
    res = next(x for x in results if x["benchmark"] == "rollback")
    assert res["raw"]["target_forwards_per_round"] == 1


def test_bad_bench_arguments():
    r = subprocess.run([sys.executable, "-m", "specscope.profiler.cli", "bench", "overhead", "--pairs", "0"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--pairs" in r.stderr and "Traceback" not in r.stderr
