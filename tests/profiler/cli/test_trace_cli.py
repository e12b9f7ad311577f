"""``specscope trace``: a saved session's cases gain their acceptance trace, walked E at the session's k equals what
the case's own rounds measured; bad input is a clear message."""

import json
from pathlib import Path

import pytest

from specscope.profiler.cli.main import main
from specscope.profiler.session.session import Session

DEMO = Path(__file__).resolve().parents[2] / "fixtures" / "session_demo.json"


def test_trace_adds_traces_and_matches_the_sessions_own_rounds(tmp_path, capsys):
    d = json.loads(DEMO.read_text())
    d["cases"] = d["cases"][2:]  # one case (code) keeps the test short
    src = tmp_path / "one.json"
    src.write_text(json.dumps(d))
    out = tmp_path / "traced.json"
    assert main(["trace", str(src), "-o", str(out), "--k-max", "3", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    s = Session.load(out)
    c = s.cases[0]
    assert c["trace"]["k_max"] == 3 and len(c["trace"]["A"]) == len(c["plain"]["tokens"]) - 1
    row = res["cases"][0]
    assert row["measured_E_at_k"] == pytest.approx(row["E"][res["k"] - 1], rel=1e-12)  # k = 2, greedy: exact
    assert list(res["classes"]) == [c["content_class"]]


@pytest.mark.parametrize("args, message", [
    (["trace", "/nonexistent/s.json", "-o", "{tmp}/o.json"], "No such file"),
    (["trace", str(DEMO), "-o", "{tmp}/o.json", "--k-max", "0"], "--k-max"),
    (["trace", str(DEMO), "-o", "{tmp}/o.json", "--draws", "0"], "--draws"),
    (["trace", str(DEMO), "-o", "{tmp}"], "directory"),
])
def test_bad_input_is_a_clear_message(tmp_path, capsys, args, message):
    assert main([a.replace("{tmp}", str(tmp_path)) for a in args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("specscope: error:") and message in err and "Traceback" not in err


def test_the_oracle_has_no_trace(tmp_path, capsys):
    d = json.loads(DEMO.read_text())
    d["config"]["drafter"] = {"name": "oracle", "kind": "oracle", "what_if": True}
    src = tmp_path / "oracle.json"
    src.write_text(json.dumps(d))
    assert main(["trace", str(src), "-o", str(tmp_path / "o.json")]) == 2
    assert "i.i.d." in capsys.readouterr().err
