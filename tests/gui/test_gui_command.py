"""`specscope gui` scripted, as the README uses it: --autorun, --exit-when-done, --screenshot, --view.

Each test runs the real command in a process of its own (the app owns the process: it exits when done),
offscreen, with a private XDG data folder, so the autosaved sessions land in the test's folder.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "session_demo.json"

pytestmark = pytest.mark.timeout(300)


def gui(tmp_path, *args, timeout=240):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_DATA_HOME": str(tmp_path / "data")}
    return subprocess.run([sys.executable, "-m", "specscope", "gui", *map(str, args)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=timeout)


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def autosaved(tmp_path) -> list[dict]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted((tmp_path / "data").rglob("session-*.json"))]


def _autorun(tmp_path, *model_args):
    r = gui(tmp_path, *model_args, "--autorun", "--screenshot", "live.png", "--exit-when-done", "--cases", "1",
            "--max-tokens", "4")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "screenshot saved to live.png" in r.stderr and "Traceback" not in r.stderr
    assert png_size(tmp_path / "live.png") == (1440, 900)
    (s,) = autosaved(tmp_path)  # the run was measured to the end and autosaved
    assert s["status"] == "complete" and len(s["cases"]) == 1
    assert len(s["cases"][0]["plain"]["tokens"]) == 4 and len(s["cases"][0]["spec"]["tokens"]) == 4
    return s


@pytest.mark.slow  # a whole run in the app from the command line (~12 s); a screenshot of a chosen view and the app's own run stay in the default run
def test_autorun_screenshot_exit_when_done(tmp_path):
    """The README's screenshot command on the small demo model: runs, takes the picture, exits 0."""
    from specscope.engine_adapter.model.demo_model import demo_model_path

    s = _autorun(tmp_path, "--model", demo_model_path("draft"), "--drafter", "ngram")
    assert s["config"]["drafter"]["kind"] == "ngram" and s["config"]["max_tokens"] == 4


@pytest.mark.slow
def test_readme_demo_screenshot_command(tmp_path):
    """Exactly the README's command (the MTP demo model, breakdowns on), shortened to 1 case × 4 tokens."""
    s = _autorun(tmp_path, "--demo")
    assert s["model"]["demo"] and s["cases"][0]["breakdown"]


def test_session_screenshot_of_a_chosen_view(tmp_path):
    r = gui(tmp_path, "--session", FIXTURE, "--screenshot", "first.png")
    assert r.returncode == 0, r.stderr[-3000:]
    r = gui(tmp_path, "--session", FIXTURE, "--screenshot", "breakdown.png", "--view", "breakdown")
    assert r.returncode == 0, r.stderr[-3000:]
    assert png_size(tmp_path / "first.png") == png_size(tmp_path / "breakdown.png") == (1440, 900)
    assert (tmp_path / "first.png").read_bytes() != (tmp_path / "breakdown.png").read_bytes()  # another page
    assert autosaved(tmp_path) == []  # opening a session runs nothing and writes no new session


def test_an_unknown_view_is_a_clear_error(tmp_path):
    r = gui(tmp_path, "--session", FIXTURE, "--screenshot", "x.png", "--view", "summary")
    assert r.returncode == 2 and "unknown --view 'summary'" in r.stderr and "division" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "x.png").exists()


def test_screenshot_of_a_bad_session_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "specscope.session"', encoding="utf-8")
    r = gui(tmp_path, "--session", bad, "--screenshot", "x.png")
    assert r.returncode == 2 and "specscope: error: " in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "x.png").exists()
