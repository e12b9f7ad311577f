"""Run → Capture GPU trace…: the same behaviour as ``specscope capture``, in the worker the Run button starts
(pytest-qt, offscreen)."""

from __future__ import annotations

import json
import sys

import pytest

from specscope.gui import gpu_trace_action, run_process
from specscope.gui.inspector import DEMO
from specscope.profiler.run.tool_configs import CaptureConfig

pytestmark = pytest.mark.timeout(300)

NOT_METAL = "GPU trace capture needs Metal (macOS on Apple silicon); this machine runs MLX on "


def _has_metal() -> bool:
    from specscope.engine_adapter.measure.gpu_trace import metal_status

    return metal_status()["metal"]


def _no_folder_dialog(monkeypatch):
    def asked(*a, **k):
        raise AssertionError("a folder was asked for")

    monkeypatch.setattr(gpu_trace_action.GpuCapture, "ask_folder", asked)


def _wait_done(qtbot, w, timeout=120_000):
    with qtbot.waitSignal(w.gpu_capture.done, timeout=timeout) as blocker:
        assert w.act_capture.isEnabled()
        w.act_capture.trigger()
    return blocker.args


def test_the_action_is_in_the_run_menu(window):
    run_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Run")
    assert window.act_capture in run_menu.actions()
    assert window.act_capture.text() == "Capture GPU &trace…"


@pytest.mark.skipif(_has_metal(), reason="this machine has Metal: the refusal cannot happen here")
def test_without_metal_the_action_says_why(qtbot, window, monkeypatch):
    _no_folder_dialog(monkeypatch)
    code, text = _wait_done(qtbot, window)  # the real `specscope capture --check`, in a QProcess
    assert code == 2
    assert text.startswith(NOT_METAL), text
    box = window.gpu_capture.last_dialog
    assert box is not None and box.isVisible()
    assert box.text() == text and box.windowTitle() == gpu_trace_action.UNAVAILABLE_TITLE
    assert not window.gpu_capture.is_running()
    assert window.run_status.text().startswith(NOT_METAL)
    box.close()


FAKE_WORKER = r"""
import json, sys
from pathlib import Path
spec = json.loads(sys.argv[1]); cfg = spec["config"]
say = lambda ev: print(json.dumps(ev), flush=True)
say({"event": "run_started", "config": spec, "environment": {}, "model": {}, "cases": []})
if FAIL and not cfg["check_only"]:
    say({"event": "status", "message": "loading"})
    say({"event": "error", "message": "could not load weights from x", "kind": "input"})
    sys.exit(2)
if not cfg["check_only"]:
    out = Path(cfg["out_dir"]); k = cfg["k"]
    for name in ("decode.gputrace", "verify-k%d.gputrace" % k):
        (out / name).mkdir()
    desc = {"k": k, "model": "the demo model", "prompt_tokens": 30, "prompt": {"id": cfg["prompt_id"]},
            "environment": {"device": "Metal (fake)"},
            "captures": [{"name": "decode", "file": "decode.gputrace", "positions": 1, "start_position": 30}]}
    (out / "capture.json").write_text(json.dumps(desc))
    say({"event": "capture", "capture": desc, "out_dir": cfg["out_dir"]})
say({"event": "run_done", "status": "complete"})
"""


def fake_worker(monkeypatch, fail=False) -> list:
    """The worker replaced by a script that says what a capture worker on Metal says (the app's side is real: the
    WorkerProcess, the fold, the folder, the dialogs); returns the configurations it was started with."""
    started: list = []
    real = run_process.worker_command

    def command(cfg):
        if not isinstance(cfg, CaptureConfig):  # the setup panel's live lines (inspect, pre-flight) run for real
            return real(cfg)
        started.append(cfg)
        return [sys.executable, "-c", f"FAIL = {fail}\n" + FAKE_WORKER, json.dumps({"measure": "capture",
                                                                                   "config": cfg.__dict__})]

    monkeypatch.setattr(run_process, "worker_command", command)
    return started


def test_on_metal_it_asks_for_a_folder_and_captures_there(qtbot, window, monkeypatch, tmp_path):
    """The Metal flow with the worker replaced: a check that passes, a capture that writes the files."""
    base = tmp_path / "picked"
    base.mkdir()
    (base / "other.txt").write_text("not empty")  # a new subfolder is made inside a folder that is not empty
    started = fake_worker(monkeypatch)
    monkeypatch.setattr(gpu_trace_action.GpuCapture, "ask_folder", lambda self: str(base))
    window.setup.set_model(DEMO)
    window.setup.k.setValue(3)

    code, text = _wait_done(qtbot, window)
    assert code == 0, text
    out = window.gpu_capture.out_dir
    assert out.parent == base and out.name.startswith("specscope-capture-")
    assert {p.name for p in out.iterdir()} == {"decode.gputrace", "verify-k3.gputrace", "capture.json"}
    assert "GPU traces written to" in text and "verify-k3.gputrace" in text and "Xcode" in text
    box = window.gpu_capture.last_dialog
    assert box.isVisible() and any(b.text() == "Open folder" for b in box.buttons())
    box.close()
    # the worker was asked first whether it can capture, then for the capture of the setup panel's model and k
    assert [type(c) for c in started] == [CaptureConfig, CaptureConfig] and started[0].check_only
    assert started[1].demo and started[1].k == 3 and started[1].out_dir == str(out.resolve())
    assert started[1].worker_env == {"MTL_CAPTURE_ENABLED": "1"}
    assert window.settings.value("captureDir") == str(base)
    # the capture joined the window's session, and the Checks page shows it
    assert window.model.session.data["capture"]["out_dir"] == str(out.resolve())
    window.show_page("checks")
    assert str(out.resolve()) in window.views["checks"].capture_text.toPlainText()


def test_a_failed_capture_shows_its_error(qtbot, window, monkeypatch, tmp_path):
    fake_worker(monkeypatch, fail=True)
    (tmp_path / "mine.txt").write_text("not empty: a subfolder is made for the capture")
    monkeypatch.setattr(gpu_trace_action.GpuCapture, "ask_folder", lambda self: str(tmp_path))
    code, text = _wait_done(qtbot, window)
    assert code == 2 and text == "could not load weights from x"
    assert window.gpu_capture.last_dialog.windowTitle() == "Capture GPU trace failed"
    out = window.gpu_capture.out_dir
    assert out.parent == tmp_path and not out.exists()  # the folder made for it is gone again
    window.gpu_capture.last_dialog.close()


def test_cancelling_the_folder_dialog_does_nothing(qtbot, window, monkeypatch):
    fake_worker(monkeypatch)
    monkeypatch.setattr(gpu_trace_action.GpuCapture, "ask_folder", lambda self: "")
    window.act_capture.trigger()
    qtbot.waitUntil(lambda: "cancelled" in window.run_status.text(), timeout=60_000)
    assert not window.gpu_capture.is_running() and window.gpu_capture.last_dialog is None


def test_output_dir_in(tmp_path):
    assert gpu_trace_action.output_dir_in(str(tmp_path)) == tmp_path  # empty: used as it is
    (tmp_path / "x").write_text("")
    a = gpu_trace_action.output_dir_in(str(tmp_path))
    assert a.parent == tmp_path and not a.exists()
    a.mkdir()
    b = gpu_trace_action.output_dir_in(str(tmp_path))
    assert b != a and not b.exists()
