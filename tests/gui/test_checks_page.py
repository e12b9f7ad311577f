"""The sessions ``check``, ``capture`` and ``trace`` leave open in the app with their page filled: the Checks page
for a check and a capture, the Cases page's trace strip for a traced session (pytest-qt, offscreen)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specscope.profiler.session.session import Session

pytestmark = pytest.mark.timeout(300)

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "session_demo.json"


def test_a_check_session_opens_on_the_checks_page(window, tmp_path, capsys):
    from specscope.profiler.cli.main import main

    f = tmp_path / "check.json"
    assert main(["check", "--demo", "--max-k", "1", "-o", str(f)]) == 0
    printed = capsys.readouterr().out
    window.open_session(str(f))
    page = window.views["checks"]
    assert window.tabs.currentWidget() is page
    assert page.headline.text() == "Check of the model: passed"
    assert page.check_text.toPlainText() == printed.rstrip("\n") and page.check_text.isVisible()
    assert not page.capture_text.isVisible()
    window.model.flush()  # the banner speaks of what was measured: no run, so no verdict (not "still being measured")
    assert window.verdict.headline.text() == ("A check (complete): no run here, so no verdict; the Checks page "
                                              "shows it.")


def test_a_capture_session_opens_on_the_checks_page(window, tmp_path):
    """A capture's session as the worker's events fold it (a capture needs Metal: the events are the worker's)."""
    s = Session()
    s.apply({"event": "run_started", "measure": "capture", "config": {"k": 2}, "environment": {},
             "model": {}, "cases": []})
    desc = {"k": 2, "model": "the demo model", "prompt_tokens": 31, "prompt": {"id": "zh-01"},
            "environment": {"device": "Metal (Apple M2)"},
            "captures": [{"name": "decode", "file": "decode.gputrace", "positions": 1, "start_position": 31},
                         {"name": "verify", "file": "verify-k2.gputrace", "positions": 3, "start_position": 31}]}
    s.apply({"event": "capture", "capture": desc, "out_dir": "/Users/me/traces"})
    s.apply({"event": "run_done", "status": "complete"})
    f = tmp_path / "capture.json"
    s.save(f)
    window.open_session(str(f))
    page = window.views["checks"]
    assert window.tabs.currentWidget() is page and page.headline.text() == "GPU traces captured"
    text = page.capture_text.toPlainText()
    assert "folder: /Users/me/traces" in text and "verify-k2.gputrace: verify, 3 position(s) from 31" in text
    assert "Metal (Apple M2)" in text and not page.check_text.isVisible()


def test_a_run_session_shows_no_check(window):
    window.open_session(str(DEMO))
    page = window.views["checks"]
    assert window.tabs.currentWidget() is not page
    assert page.headline.text().startswith("No check or GPU capture in this session")


# the demo fixture's third case traced by `specscope trace one.json -o session_traced.json --k-max 2` (2026-12-06):
# the trace itself is made and checked against the session's rounds in tests/profiler/cli/test_trace_cli.py
TRACED = Path(__file__).resolve().parent / "fixtures" / "session_traced.json"


def test_a_traced_session_opens_with_the_trace_strip(window, qtbot):
    d = json.loads(TRACED.read_text())
    assert d["cases"][0].get("trace") and d["cases"][0]["id"] == json.loads(DEMO.read_text())["cases"][2]["id"]
    window.open_session(str(TRACED))
    window.show_page("cases")
    cases = window.views["cases"]
    cases.select_case(d["cases"][0]["id"])
    qtbot.waitUntil(lambda: cases.trace.isVisible(), timeout=10_000)
