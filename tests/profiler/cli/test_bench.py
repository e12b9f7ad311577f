"""Each benchmark runs and emits well-formed JSON. Speed itself is never asserted here.

The default run runs one cheap benchmark end to end (``rollback``); every benchmark together
(``bench all``, a few minutes on 2 CPU cores) runs with ``pytest -m slow``.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from specscope.profiler.cli.bench import BENCHES
from specscope.profiler.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
SMALL = ["--pairs", "1", "--max-tokens", "6", "-k", "2", "--json"]


def assert_well_formed(res: dict) -> None:
    for key in ("ratio", "ratio_min", "ratio_max"):
        assert isinstance(res[key], float) and res[key] >= 0
    assert res["ratio_min"] <= res["ratio"] <= res["ratio_max"]
    assert isinstance(res["met"], bool) and res["target"].split()[0] in (">=", "<=")
    assert isinstance(res["raw"], dict) and res["raw"]


def test_rollback_bench_never_reruns_the_model(capsys):
    assert main(["bench", "rollback", *SMALL]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["benchmark"] == "rollback"
    assert_well_formed(res)
    assert res["raw"]["target_forwards_per_round"] == 1


def test_bad_bench_arguments(capsys):
    assert main(["bench", "overhead", "--pairs", "0"]) == 2
    err = capsys.readouterr().err
    assert "--pairs" in err and "Traceback" not in err


# -- every benchmark (slow) -----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def results():
    r = subprocess.run([sys.executable, "-m", "specscope.profiler.cli.main", "bench", "all", *SMALL],
                       cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)


@pytest.mark.slow
def test_every_benchmark_reports(results):
    assert [x["benchmark"] for x in results] == list(BENCHES)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(BENCHES))
def test_benchmark_json_is_well_formed(name, results):
    assert_well_formed(next(x for x in results if x["benchmark"] == name))


@pytest.mark.slow
def test_spec_bench_checks_identical_tokens(results):
    res = next(x for x in results if x["benchmark"] == "spec-vs-mlx-lm")
    assert res["raw"]["identical_tokens"] is True


def test_interleaved_pairs_stop_when_the_median_is_stable():
    from types import SimpleNamespace

    from specscope.profiler.cli.bench_common import interleaved_pairs, median_ci95, stable

    noisy = iter([1.3, 0.7] * 50)
    a = SimpleNamespace(pairs=3, until_stable=True, max_pairs=12)
    got = interleaved_pairs(a, lambda: (next(noisy), 1.0, "extra"))  # extra fields ride along
    assert len(got) == 12 and not stable([x / y for x, y, _ in got])  # never stable: capped
    calm = interleaved_pairs(a, lambda: (1.0, 1.0))
    assert len(calm) == 3 and stable([1.0, 1.0, 1.0])  # stable at once: the minimum only
    assert median_ci95([1.0, 2.0]) is None
    lo, hi = median_ci95([0.99, 1.0, 1.01, 1.0, 1.0])
    assert lo <= 1.0 <= hi


def test_rounds_side_by_side_alternates_and_drains_both():
    from specscope.profiler.cli.bench import rounds_side_by_side

    seen = []

    def gen(name, n):
        for i in range(n):
            seen.append(name)
            yield (name, i)

    a, b = rounds_side_by_side(gen("a", 4), gen("b", 2))
    assert a == [("a", i) for i in range(4)] and b == [("b", 0), ("b", 1)]
    assert seen == ["a", "b", "b", "a", "a", "a"]  # A B, then B A, …; the longer one runs on alone
