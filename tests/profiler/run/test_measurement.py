"""Roofline and tune are measured as a run is: in the worker, their events through the pump, folded into a session."""

from __future__ import annotations

import json

from specscope.profiler.cli.main import main
from specscope.profiler.run.measure_config import RooflineConfig, TuneConfig, from_argument, worker_argument
from specscope.profiler.run.runner import run_worker, worker_command
from specscope.profiler.session import measured
from specscope.profiler.session.session import Session

import pytest

SMALL = ["--positions", "3", "--reps", "1", "--block-reps", "1", "--bandwidth-mib", "8", "--matmul-n", "64",
         "--max-tokens", "8", "-k", "1", "--prompt", "Hello there"]


def _fits(record, d: dict) -> None:
    """``d`` has every required key of ``record`` and no key it does not declare (``session.measured``)."""
    assert set(d) <= set(record.__annotations__), f"not in {record.__name__}: {sorted(set(d) - set(record.__annotations__))}"
    assert record.__required_keys__ <= set(d), f"{record.__name__} lacks {sorted(record.__required_keys__ - set(d))}"


def test_a_measurement_crosses_to_the_worker_whole():
    cfg = TuneConfig(demo=True, drafters=["ngram", "mtp"], k_max=3, reps=2, prompt="hi")
    cmd = worker_command(cfg)
    assert cmd[1:3] == ["-m", "specscope.profiler.run.worker"]
    assert from_argument(json.loads(worker_argument(cfg))) == cfg
    rl = RooflineConfig(demo=True, positions=4, context=512)
    assert from_argument(json.loads(worker_argument(rl))) == rl


def test_roofline_arrives_in_a_session_through_the_worker(tmp_path, capsys):
    out = tmp_path / "roofline.json"
    assert main(["roofline", "--demo", *SMALL, "--json", "-o", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    s = Session.load(out)
    # one run_started shape: the kind under ``measure``, the configuration beside it (a run's ``config`` stays empty)
    assert s.status == "complete" and s.data["measure"] == "roofline" and s.data["measurement"]["positions"] == 3
    assert s.config == {}
    assert [row["positions"] for row in s.data["roofline"]["curve"]] == [1, 2, 3]
    assert printed["headline"] == s.data["roofline"]["headline"]  # what it printed is what the session holds
    _fits(measured.RooflineRun, s.data["roofline"])  # the session's record describes what was stored
    for row in s.data["roofline"]["curve"]:
        _fits(measured.RooflineRow, row)
        for block in row["by_block"].values():
            _fits(measured.RooflineBlock, block)


def test_tune_arrives_in_a_session_through_the_worker():
    seen: list[str] = []
    res = run_worker(TuneConfig(demo=True, drafters=["ngram"], k_max=2, max_tokens=8, reps=1, beside_reps=1,
                                prompt="def add(a, b):\n    return a + b\n"),
                     on_event=lambda ev, _s: seen.append(ev["event"]))
    s = res.session
    assert res.returncode == 0 and s.status == "complete", s.data["errors"]
    assert seen[0] == "run_started" and "status" in seen and seen[-2:] == ["tune", "run_done"]
    assert {r["drafter"] for r in s.data["tune"]["rows"]} == {"ngram"} and s.data["tune"]["recommendation"]["text"]
    _fits(measured.TuneResult, s.data["tune"])  # the session's record describes what was stored
    _fits(measured.Recommendation, s.data["tune"]["recommendation"])
    for row in s.data["tune"]["rows"]:
        _fits(measured.TuneRow, row)
    for d in s.data["tune"]["drafters"].values():
        _fits(measured.TuneDrafter, d)


def test_a_refusal_in_the_worker_is_a_clear_message(capsys):
    """The context check runs in the worker now: its refusal still reaches the user as one line, exit code 2."""
    assert main(["roofline", "--demo", "--context", "300k"]) == 2
    err = capsys.readouterr().err
    assert "window is 262,144" in err and "Traceback" not in err


@pytest.mark.slow  # run --roofline, a run and a curve (~15 s); roofline in a worker is tested on its own by default
def test_run_roofline_measures_in_a_worker_and_keeps_the_curve_with_the_run(tmp_path, capsys):
    out = tmp_path / "s.json"
    assert main(["run", "--demo", "--cases", "1", "--max-tokens", "8", "--repeats", "1", "--warmup", "0",
                 "--no-breakdown", "--roofline", "-o", str(out), "--json"]) == 0
    s = Session.load(out)
    assert s.status == "complete" and s.data["measure"] == "run"  # the run's session, its own configuration
    assert s.config["max_tokens"] == 8 and "measurement" not in s.data
    assert [row["positions"] for row in s.data["roofline"]["curve"]][:2] == [1, 2]
    assert "division" in s.data["roofline"]
