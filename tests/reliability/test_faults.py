"""Faults: a worker killed mid-run, Ctrl+C in ``specscope run``, the parent process killed.

In every case the worker ends, no process is left behind, everything received is kept, and the
session on disk loads, says *incomplete* with the reason, and exports.

Already covered: ``tests/gui/test_app.py`` (Stop mid-run, window closed mid-run).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import pytest

from specscope.profiler.run.config import RunConfig
from specscope.profiler.renderers import render_to_file
from specscope.profiler.run.runner import run_worker
from specscope.profiler.session.schema import SessionError
from specscope.profiler.session.session import Session

from .helpers import ROOT, needs_proc, unique_suite, wait_until, worker_pids

pytestmark = [pytest.mark.timeout(240), needs_proc]

EXPORTS = (".csv", ".json", ".trace.json")


def _exports_ok(session: Session, folder) -> None:
    for ext in EXPORTS:
        out = folder / f"export{ext}"
        render_to_file(session, out)
        text = out.read_text(encoding="utf-8")
        assert text.strip()
        if ext == ".json":
            assert Session.from_dict(json.loads(text)) == session
        elif ext == ".trace.json":
            assert json.loads(text)["traceEvents"]
        else:
            assert len(text.splitlines()) == 1 + len(session.cases)


def _load_when(path, pred):
    try:
        s = Session.load(path)
    except SessionError:  # not written yet
        return None
    return s if pred(s) else None


def test_worker_sigkill_mid_run_keeps_everything(tmp_path):
    suite = unique_suite(tmp_path)
    out = tmp_path / "s.json"
    cfg = RunConfig(demo=True, cases=2, max_tokens=16, warmup=0, breakdown_reps=1, component_reps=1, suite=str(suite))
    state = {"pid": None, "at_kill": None}

    def on_event(ev, session):
        if ev.get("event") == "case_done" and state["at_kill"] is None:
            os.kill(state["pid"], signal.SIGKILL)
            state["at_kill"] = json.loads(session.to_json())  # everything received up to the kill

    res = run_worker(cfg, on_event=on_event, autosave=str(out), on_start=lambda p: state.update(pid=p.pid))
    s = res.session
    assert state["at_kill"] and res.returncode == -signal.SIGKILL
    assert s.status == "incomplete"
    assert s.data["errors"][-1] == "the worker ended unexpectedly (killed by SIGKILL)"
    first = s.cases[0]
    assert first["complete"] and len(first["plain"]["tokens"]) == 16 and len(first["spec"]["tokens"]) == 16
    assert first["breakdown"]["decode"]["positions"] == 1
    # every event received before the kill is still in the session (later ones may only add to it)
    before = state["at_kill"]
    assert before["cases"] and len(s.cases) >= len(before["cases"])
    for old, now in zip(before["cases"], s.cases):
        assert now["id"] == old["id"]
        for side in ("plain", "spec"):
            assert now[side]["tokens"][: len(old[side]["tokens"])] == old[side]["tokens"], (now["id"], side)
    # the autosaved file holds exactly what was received, and exports
    saved = Session.load(out)
    assert saved == s and saved.status == "incomplete"
    _exports_ok(saved, tmp_path)
    assert worker_pids(str(suite)) == []


def _start_cli(tmp_path, *extra, new_session=True):
    suite = unique_suite(tmp_path)
    out = tmp_path / "s.json"
    cmd = [sys.executable, "-m", "specscope.profiler.cli.main", "run", "--demo", "--suite", str(suite), "--cases", "6",
           "--max-tokens", "16", "--warmup", "0", "--no-breakdown", "--component-reps", "1", "-o", str(out), *extra]
    # the trained demo, one component rep a call (not the subject here), six cases: a signal sent after the first case
    # lands while later ones still run (the random demo and two cases took 45 s of the default suite for the same)
    env = dict(os.environ)
    # SIGINT at its default, as in a terminal: a shell without job control (a background CI job) starts its children
    # with SIGINT ignored, and Python then installs no KeyboardInterrupt handler
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=new_session, env=env,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    return p, out, suite


# SIGTERM takes the same path as Ctrl+C once it reaches the CLI (pump._terminate_as_interrupt): `kill <cli pid>` on
# `specscope run` is tested with every other measurement (test_measurement_faults.py's SIGTERM test, -m slow)
@pytest.mark.parametrize("to", ["group", pytest.param("cli-only", marks=pytest.mark.slow)])
def test_ctrl_c_in_specscope_run(tmp_path, to):
    """Ctrl+C in a terminal signals the whole foreground group; ``kill -INT <cli pid>`` only the CLI: either ends the
    run with what was measured saved, summarised and exportable."""
    p, out, suite = _start_cli(tmp_path)
    try:
        first_case = wait_until(lambda: _load_when(out, lambda s: any(c["complete"] for c in s.cases)), timeout=180)
        assert first_case, "no case completed"
        assert worker_pids(str(suite)), "the worker should be running"
        if to == "group":
            os.killpg(p.pid, signal.SIGINT)
        else:
            p.send_signal(signal.SIGINT)
        stdout, stderr = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "run incomplete: stopped by the user" in stderr and f"session saved to {out}" in stderr
    # the summary of what was measured is still printed, with numbers
    assert re.search(r"^  plain +\d+\.\d tok/s", stdout, re.M) and "status incomplete" in stdout, stdout
    s = Session.load(out)
    assert s.status == "incomplete" and "stopped by the user" in s.data["errors"]
    assert s.cases[0]["complete"] and len(s.cases[0]["plain"]["tokens"]) == 16
    _exports_ok(s, tmp_path)
    assert wait_until(lambda: worker_pids(str(suite)) == [], timeout=10), "a worker was left behind"


def test_parent_killed_leaves_no_orphan_worker(tmp_path):
    """SIGKILL the CLI (no chance to clean up): the worker notices and exits by itself."""
    p, out, suite = _start_cli(tmp_path, "--max-tokens", "64")
    try:
        assert wait_until(lambda: _load_when(out, lambda s: s.status == "running"), timeout=180), "run did not start"
        workers = worker_pids(str(suite))
        assert len(workers) == 1
        p.kill()  # the CLI only, not its process group
        p.wait(timeout=10)
        assert wait_until(lambda: worker_pids(str(suite)) == [], timeout=10), "orphan worker left running"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for pid in worker_pids(str(suite)):
            os.kill(pid, signal.SIGKILL)
    # what the CLI had autosaved before it died still loads (it stays "running": nobody was left to mark it)
    assert Session.load(out).status == "running"


def test_callback_error_kills_worker_and_keeps_data(tmp_path):
    """A bug on the reading side (here: a callback that raises) must not leave the worker running."""
    suite = unique_suite(tmp_path)
    out = tmp_path / "s.json"
    cfg = RunConfig(demo=True, cases=1, max_tokens=64, warmup=0, breakdown=False, suite=str(suite))

    def on_event(ev, session):
        if ev.get("event") == "step" and ev.get("index") == 3:
            raise RuntimeError("boom in a progress callback")

    with pytest.raises(RuntimeError, match="boom"):
        run_worker(cfg, on_event=on_event, autosave=str(out))
    assert worker_pids(str(suite)) == []
    s = Session.load(out)
    assert s.status == "incomplete" and "RuntimeError: boom" in s.data["errors"][-1]
    assert len(s.cases[0]["plain"]["step_ms"]) >= 3
