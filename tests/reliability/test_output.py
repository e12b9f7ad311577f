"""Output: unwritable paths, existing files and a full disk. Writes are atomic (temp file + rename):
a failure leaves the previous file byte-for-byte intact and no temp file behind, and the user gets one
clear line and a non-zero exit code.

Already covered: ``tests/profiler/cli/test_cli.py::test_run_refuses_existing_output`` (run -o),
``tests/profiler/renderers/test_renderers.py::test_cli_report_refuses_to_overwrite_without_force`` (report -o).
"""

from __future__ import annotations

import errno
import json
import os
import sys
from pathlib import Path

import pytest

import specscope.profiler.session.session as session_mod
from specscope.profiler.run import pump, runner
from specscope.profiler.cli.main import main
from specscope.profiler.run.config import RunConfig
from specscope.profiler.renderers import render_to_file
from specscope.profiler.session.file_io import atomic_write
from specscope.profiler.session.session import Session

from .helpers import FIXTURE

pytestmark = pytest.mark.timeout(120)

NOT_A_DIR = "/dev/null"  # a path under a non-directory: unwritable even for root (and os.access says "writable")


def _disk_full(monkeypatch, after: int = 0):
    """Make fsync in atomic_write fail with ENOSPC (after ``after`` successful calls)."""
    real, calls = os.fsync, {"n": 0}

    def fsync(fd):
        calls["n"] += 1
        if calls["n"] > after:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd)

    monkeypatch.setattr(session_mod.os, "fsync", fsync)
    return calls


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# -- unwritable -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("ext", [".html", ".csv", ".json", ".trace.json"])
@pytest.mark.parametrize("folder, message", [
    (NOT_A_DIR, "could not write /dev/null/r{ext}: Not a directory"),  # passes the early check; the write fails
    (NOT_A_DIR + "/sub", "cannot write /dev/null/sub/r{ext}: folder /dev/null/sub does not exist"),  # refused early
])
def test_report_to_unwritable_path(capsys, ext, folder, message):
    assert main(["report", str(FIXTURE), "-o", folder + "/r" + ext]) == 2
    err = capsys.readouterr().err
    assert err == "specscope: error: " + message.format(ext=ext) + "\n"


def test_report_into_read_only_folder(tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(ro, os.W_OK):  # root ignores permission bits: nothing to test honestly
            pytest.skip("running as root (or with CAP_DAC_OVERRIDE): a 0o500 folder is still writable")
        assert main(["report", str(FIXTURE), "-o", str(ro / "r.csv")]) == 2
        assert "not writable" in capsys.readouterr().err
        assert list(ro.iterdir()) == []
    finally:
        ro.chmod(0o700)


def test_run_to_unwritable_path_fails_before_any_work(capsys, monkeypatch):
    started = []
    monkeypatch.setattr(runner.subprocess, "Popen", lambda *a, **k: started.append(a) or pytest.fail("worker started"))
    # the CLI's own check passes for root on /dev/null (it is "writable"); the runner's first save refuses
    rc = main(["run", "--demo", "--cases", "1", "-o", NOT_A_DIR + "/s.json"])
    err = capsys.readouterr().err
    assert rc == 2 and "cannot write the session to /dev/null/" in err and "Traceback" not in err
    assert not started


def test_run_output_is_a_folder(tmp_path, capsys):
    assert main(["run", "--demo", "-o", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_report_into_missing_folder(tmp_path, capsys):
    assert main(["report", str(FIXTURE), "-o", str(tmp_path / "no" / "such" / "r.html")]) == 2
    assert "does not exist" in capsys.readouterr().err


# -- existing file -------------------------------------------------------------------------------------------

def test_compare_refuses_existing_output_without_force(tmp_path, capsys):
    out = tmp_path / "diff.json"
    out.write_text("keep me")
    assert main(["compare", str(FIXTURE), str(FIXTURE), "-o", str(out)]) == 2
    assert "already exists; pass --force" in capsys.readouterr().err
    assert out.read_text() == "keep me"
    assert main(["compare", str(FIXTURE), str(FIXTURE), "-o", str(out), "--force"]) == 0
    assert json.loads(out.read_text())


# -- disk full ----------------------------------------------------------------------------------------------

def test_atomic_write_disk_full_keeps_old_file(tmp_path, monkeypatch):
    p = tmp_path / "s.json"
    p.write_text("old content")
    _disk_full(monkeypatch)
    with pytest.raises(OSError) as exc:
        atomic_write(p, "new content" * 1000)
    assert exc.value.errno == errno.ENOSPC
    assert p.read_text() == "old content"
    assert _leftovers(tmp_path) == []


def test_session_save_disk_full_keeps_old_session(tmp_path, monkeypatch):
    s = Session.load(FIXTURE)
    p = tmp_path / "s.json"
    s.save(p)
    before = p.read_bytes()
    s.data["cases"].pop()
    _disk_full(monkeypatch)
    with pytest.raises(OSError):
        s.save(p)
    assert p.read_bytes() == before and Session.load(p) == Session.load(FIXTURE)
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("ext", [".csv", ".json", ".trace.json", ".html"])
def test_render_to_file_disk_full_is_a_clear_error(tmp_path, monkeypatch, ext):
    from specscope.errors import SpecscopeError

    out = tmp_path / f"r{ext}"
    out.write_bytes(b"previous report")
    _disk_full(monkeypatch)
    with pytest.raises(SpecscopeError, match="could not write .*No space left on device"):
        render_to_file(Session.load(FIXTURE), out)
    assert out.read_bytes() == b"previous report"
    assert _leftovers(tmp_path) == []


def test_cli_report_disk_full(tmp_path, monkeypatch, capsys):
    out = tmp_path / "r.csv"
    out.write_text("previous report")
    _disk_full(monkeypatch)
    assert main(["report", str(FIXTURE), "-o", str(out), "--force"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("specscope: error: could not write") and "No space left on device" in err
    assert "Traceback" not in err
    assert out.read_text() == "previous report" and _leftovers(tmp_path) == []


def test_cli_compare_disk_full(tmp_path, monkeypatch, capsys):
    out = tmp_path / "d.json"
    _disk_full(monkeypatch)
    assert main(["compare", str(FIXTURE), str(FIXTURE), "-o", str(out)]) != 0
    err = capsys.readouterr().err
    assert "No space left on device" in err and "Traceback" not in err
    assert not out.exists() and _leftovers(tmp_path) == []


# -- disk full while a run autosaves (a scripted worker: no model needed) -------------------------------------

FAKE_WORKER = r"""
import json, sys, time
def emit(ev):
    sys.stdout.write(json.dumps(ev) + "\n"); sys.stdout.flush()
case = {"id": "c1", "content_class": "en", "prompt": "hi", "prompt_tokens": [1, 2]}
emit({"event": "run_started", "config": {"num_draft_tokens": 1, "n_cases": 1, "repeats": 1, "max_tokens": 6}, "environment": {}, "model": {"name": "fake"}, "cases": [case]})
emit({"event": "case_started", "case": case, "index": 0, "phase": "plain"})
emit({"event": "prefill", "case": "c1", "mode": "plain", "token": 3, "ms": 5.0, "n_prompt": 2})
for i in range(5):
    emit({"event": "step", "case": "c1", "index": i + 1, "token": 4 + i, "ms": 1.0})
emit({"event": "case_done", "case": "c1", "plain_text": "x", "spec_text": ""})
emit({"event": "run_done", "status": "complete"})
"""


@pytest.fixture
def fake_worker(monkeypatch):
    monkeypatch.setattr(runner, "worker_command", lambda cfg: [sys.executable, "-c", FAKE_WORKER])


def test_run_disk_full_mid_run_keeps_last_good_file_and_rescues(tmp_path, monkeypatch, fake_worker):
    from specscope.errors import SpecscopeError

    out = tmp_path / "s.json"
    _disk_full(monkeypatch, after=1)  # the first save (before the worker starts) succeeds, then the disk is full
    rescued = []
    monkeypatch.setattr(pump, "rescue_copy", lambda s: rescued.append(s) or str(tmp_path / "rescued.json"))
    with pytest.raises(runner.SessionSaveError) as exc:
        runner.run_worker(RunConfig(demo=True), autosave=str(out))
    assert isinstance(exc.value, SpecscopeError)
    msg = str(exc.value)
    assert "could not save the session to" in msg and "No space left on device" in msg and "rescued.json" in msg
    res = exc.value.result
    assert res.session.status == "complete" and len(res.session.cases[0]["plain"]["step_ms"]) == 5  # nothing lost
    assert rescued and rescued[0] is res.session
    assert Session.load(out).status == "empty"  # the last good file, intact
    assert _leftovers(tmp_path) == []


def test_rescue_copy_really_writes(tmp_path, monkeypatch):
    monkeypatch.setattr(pump.tempfile, "tempdir", str(tmp_path))
    p = pump.rescue_copy(Session.load(FIXTURE))
    assert p and Path(p).parent == tmp_path and Session.load(p) == Session.load(FIXTURE)


def test_cli_run_disk_full_message(tmp_path, monkeypatch, capsys, fake_worker):
    out = tmp_path / "s.json"
    _disk_full(monkeypatch, after=1)
    monkeypatch.setattr(pump.tempfile, "tempdir", str(tmp_path / "also-full"))  # no rescue possible either
    rc = main(["run", "--demo", "--cases", "1", "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "could not save the session to" in err and "No space left on device" in err
    assert "no copy could be saved either" in err and "Traceback" not in err


def test_run_recovers_when_space_comes_back(tmp_path, monkeypatch, fake_worker):
    out = tmp_path / "s.json"
    real, calls = os.fsync, {"n": 0}

    def flaky(fd):  # only the second save fails (space freed afterwards)
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd)

    monkeypatch.setattr(session_mod.os, "fsync", flaky)
    res = runner.run_worker(RunConfig(demo=True), autosave=str(out))
    assert calls["n"] > 2
    assert res.save_error is None and res.saved_to == str(out)
    assert Session.load(out).status == "complete"
