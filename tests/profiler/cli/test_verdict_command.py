"""``specscope verdict``: one setting's judged prediction pooled over saved runs; mixed settings and runs without a
judged prediction are refused with a clear message."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from specscope.profiler.analysis.summary import summarize
from specscope.profiler.cli.main import main
from specscope.profiler.session.session import Session

FIX = Path(__file__).resolve().parents[2] / "fixtures"
DFLASH = Path(__file__).resolve().parents[2] / "gui" / "fixtures" / "session_dflash_quick.json"


def _copies(tmp_path, n: int) -> list[str]:
    out = []
    for i in range(n):
        p = tmp_path / f"run{i + 1}.json"
        shutil.copy(FIX / "session_demo.json", p)
        out.append(str(p))
    return out


def test_runs_of_one_setting_are_pooled(tmp_path, capsys):
    paths = _copies(tmp_path, 3)
    assert main(["verdict", *paths, "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    s = summarize(Session.load(paths[0]))
    assert res["runs"] == 3 and [r["session"] for r in res["sessions"]] == paths
    assert res["error"] == pytest.approx(s["prediction_error"])
    assert res["between_runs_sd"] == 0.0 and res["run_intervals_cover"] == 3
    assert res["verdict"]["state"] in ("agrees", "off", "too_little_data") and res["verdict"]["units"] == 3
    assert main(["verdict", *paths]) == 0
    text = capsys.readouterr().out
    assert "over 3 runs" in text and "verdict over runs:" in text and "run3.json" in text


def test_mixed_settings_are_refused_unless_forced(tmp_path, capsys):
    paths = _copies(tmp_path, 2) + [str(DFLASH)]
    assert main(["verdict", *paths]) == 2
    err = capsys.readouterr().err
    assert "not one setting" in err and "drafter" in err and "--force" in err and "Traceback" not in err
    assert main(["verdict", *paths, "--force"]) == 0


def test_a_run_without_a_judged_prediction_is_named(tmp_path, capsys):
    paths = _copies(tmp_path, 2) + [str(FIX / "session_v1_demo.json")]
    assert main(["verdict", *paths]) == 2
    err = capsys.readouterr().err
    assert "session_v1_demo.json: no judged prediction" in err and "Traceback" not in err
