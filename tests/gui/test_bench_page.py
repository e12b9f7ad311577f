"""A benchmark's session (``specscope bench WHAT -o FILE``) opens in the app on the Checks page, each benchmark's line
as the CLI prints it (pytest-qt, offscreen)."""

from __future__ import annotations

import json

import pytest

from specscope.profiler.session.session import Session

pytestmark = pytest.mark.timeout(300)

SMALL = ["--pairs", "1", "--max-pairs", "8", "--max-tokens", "6", "-k", "2", "--json"]


def test_a_bench_session_opens_on_the_checks_page(window, tmp_path, capsys):
    from specscope.profiler.cli.bench import _line
    from specscope.profiler.cli.main import main

    f = tmp_path / "bench.json"
    assert main(["bench", "rollback", *SMALL, "-o", str(f)]) == 0
    printed = json.loads(capsys.readouterr().out)
    kept = json.loads(f.read_text())
    assert kept["status"] == "complete" and kept["measure"] == "bench"
    assert kept["benchmarks"] == [printed]  # the session keeps what the command printed
    window.open_session(str(f))
    page = window.views["checks"]
    assert window.tabs.currentWidget() is page
    assert page.headline.text() == "Benchmark rollback: " + ("target met" if printed["met"] else "target MISSED")
    assert page.bench_text.toPlainText() == _line(printed) and page.bench_text.isVisible()
    assert "1 run," in _line(printed) and "target <= 0.02" in _line(printed)
    assert not page.check_text.isVisible() and not page.capture_text.isVisible()


def _result(name: str, met: bool) -> dict:
    return {"benchmark": name, "ratio": 0.99, "ratio_min": 0.97, "ratio_max": 1.01, "median_ci95": [0.98, 1.0],
            "stable_to_1pct": True, "pairs": 5, "target": ">= 0.98", "met": met, "unit": "tok/s ratio", "raw": {"x": [1]}}


def test_a_stopped_bench_all_shows_what_was_measured(window, tmp_path):
    """A `bench all` stopped after two benchmarks, folded as the command folds it: both lines, and the stop."""
    s = Session()
    s.apply({"event": "run_started", "measure": "bench", "config": {"what": "all"}, "environment": {}, "model": {},
             "cases": []})
    for name, met in (("overhead", True), ("spec-vs-mlx-lm", False)):
        s.apply({"event": "bench", "bench": _result(name, met)})
    s.mark_incomplete("stopped by the user")
    f = tmp_path / "stopped.json"
    s.save(f)
    window.open_session(str(f))
    page = window.views["checks"]
    assert window.tabs.currentWidget() is page
    assert page.headline.text() == ("Benchmarks: 1 of 2 met their target (incomplete: stopped by the user; what was "
                                    "measured before it is kept)")
    lines = page.bench_text.toPlainText().splitlines()
    assert [x.split()[0] for x in lines[:2]] == ["overhead", "spec-vs-mlx-lm"]
    assert lines[0].endswith("target >= 0.98: met)") and lines[1].endswith("target >= 0.98: MISSED)")
    assert lines[2].startswith("(incomplete: stopped by the user;")


def test_an_older_one_benchmark_session_still_opens(window, tmp_path):
    """A session from before the ``benchmarks`` list (a worker's, its one result under ``bench``)."""
    s = Session()
    s.apply({"event": "run_started", "measure": "bench", "config": {"what": "overhead"}, "environment": {},
             "model": {}, "cases": []})
    s.apply({"event": "bench", "bench": _result("overhead", True)})
    s.apply({"event": "run_done", "status": "complete"})
    del s.data["benchmarks"]
    f = tmp_path / "old.json"
    s.save(f)
    window.open_session(str(f))
    page = window.views["checks"]
    assert window.tabs.currentWidget() is page and page.headline.text() == "Benchmark overhead: target met"
    assert page.bench_text.toPlainText().startswith("overhead ")
