"""``specscope bench WHAT -o FILE`` keeps the benchmark's session: refused before measuring where it cannot be
written, marked incomplete with what was measured when stopped (Ctrl+C, SIGTERM: exit 130). The complete session,
opened in the app, is tests/gui/test_bench_page.py's."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specscope.profiler.cli import bench
from specscope.profiler.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
SMALL = ["--pairs", "1", "--max-pairs", "8", "--max-tokens", "6", "-k", "2", "--json"]

RESULT = {"benchmark": "rollback", "ratio": 0.03, "ratio_min": 0.02, "ratio_max": 0.05, "median_ci95": None,
          "stable_to_1pct": False, "pairs": 1, "sample": "1 run, 3 partially accepted rounds of 4",
          "target": "<= 0.02", "met": False, "unit": "share of round", "raw": {"rounds": 4}}


def _never(cfg, on_pair=None):
    raise AssertionError("measured, though the session could not be kept")


@pytest.mark.parametrize("where", ["exists", "no folder", "a folder"])
def test_a_bad_output_is_refused_before_measuring(where, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(bench, "BENCHES", {"rollback": _never})
    f = {"exists": tmp_path / "kept.json", "no folder": tmp_path / "nowhere" / "kept.json", "a folder": tmp_path}[where]
    if where == "exists":
        f.write_text("mine")
    assert main(["bench", "rollback", *SMALL, "-o", str(f)]) == 2
    err = capsys.readouterr().err
    assert {"exists": "already exists; pass --force", "no folder": "does not exist",
            "a folder": "is a directory"}[where] in err and "Traceback" not in err
    if where == "exists":
        assert f.read_text() == "mine"


def test_force_overwrites(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(bench, "BENCHES", {"rollback": lambda cfg, on_pair=None: dict(RESULT)})
    f = tmp_path / "kept.json"
    f.write_text("mine")
    assert main(["bench", "rollback", *SMALL, "-o", str(f), "--force"]) == 0
    d = json.loads(f.read_text())
    assert d["status"] == "complete" and d["measure"] == "bench" and d["benchmarks"] == [RESULT]
    assert d["measurement"]["what"] == "rollback" and d["measurement"]["max_tokens"] == 6


def test_a_stopped_bench_keeps_what_was_measured(tmp_path, monkeypatch, capsys):
    """`bench all` stopped at its second benchmark (Ctrl+C there): the first one's result is kept, the session
    marked incomplete, exit 130."""
    def stopped(cfg, on_pair=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(bench, "BENCHES", {"rollback": lambda cfg, on_pair=None: dict(RESULT), "overhead": stopped})
    f = tmp_path / "kept.json"
    assert main(["bench", "all", *SMALL, "-o", str(f)]) == 130
    d = json.loads(f.read_text())
    assert d["status"] == "incomplete" and "stopped by the user" in d["errors"]
    assert d["benchmarks"] == [RESULT]
    assert f"is in {f}" in capsys.readouterr().err


def test_a_failed_bench_keeps_its_error(tmp_path, monkeypatch, capsys):
    from specscope.errors import SpecscopeError

    def fails(cfg, on_pair=None):
        raise SpecscopeError("the model would not load")

    monkeypatch.setattr(bench, "BENCHES", {"rollback": fails})
    f = tmp_path / "kept.json"
    assert main(["bench", "rollback", *SMALL, "-o", str(f)]) == 2
    d = json.loads(f.read_text())
    assert d["status"] == "failed" and d["errors"] == ["the model would not load"] and "benchmarks" not in d


@pytest.mark.timeout(120)
def test_sigterm_leaves_the_session_stopped(tmp_path):
    """A real `specscope bench` sent SIGTERM while it measures: the session says stopped, not running."""
    f = tmp_path / "kept.json"
    p = subprocess.Popen([sys.executable, "-m", "specscope", "bench", "rollback", *SMALL, "-o", str(f)], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not f.exists() and p.poll() is None and time.monotonic() < deadline:  # written before measuring
            time.sleep(0.05)
        assert f.exists(), p.communicate()[1][-2000:]
        os.kill(p.pid, signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, err[-2000:]
    d = json.loads(f.read_text())
    assert d["status"] == "incomplete" and "stopped by the user" in d["errors"], d["errors"]
