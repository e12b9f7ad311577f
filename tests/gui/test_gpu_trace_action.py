"""Run → Capture GPU trace…: the same behaviour as ``specscope capture``, in QProcesses (pytest-qt, offscreen)."""

from __future__ import annotations

import sys

import pytest

from specscope.gui import gpu_trace_action
from specscope.gui.inspector import DEMO
from specscope.profiler.cli.main import build_parser

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


FAKE_CAPTURE = r"""
import json, sys
from pathlib import Path
out = Path(sys.argv[1]); k = int(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
for name in ("decode.gputrace", "verify-k%d.gputrace" % k):
    (out / name).mkdir()
(out / "capture.json").write_text(json.dumps({"k": k}))
print("captured", file=sys.stderr)
"""


def test_on_metal_it_asks_for_a_folder_and_captures_there(qtbot, window, monkeypatch, tmp_path):
    """The Metal flow with its two processes replaced: a check that passes, a capture that writes the files."""
    base = tmp_path / "picked"
    base.mkdir()
    (base / "other.txt").write_text("not empty")  # a new subfolder is made inside a folder that is not empty
    seen = {}
    real = gpu_trace_action.capture_command

    def fake_capture_command(cfg, out_dir):
        seen["real"] = real(cfg, out_dir)
        return [sys.executable, "-c", FAKE_CAPTURE, out_dir, str(cfg.num_draft_tokens)]

    monkeypatch.setattr(gpu_trace_action, "probe_command", lambda: [sys.executable, "-c", "pass"])
    monkeypatch.setattr(gpu_trace_action, "capture_command", fake_capture_command)
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
    # the command the app would really run is one the CLI accepts, with the model and k from the setup panel
    a = build_parser().parse_args(seen["real"][3:])
    assert a.cmd == "capture" and a.demo and a.num_draft_tokens == 3 and a.output == str(out)
    assert window.settings.value("captureDir") == str(base)


def test_a_failed_capture_shows_its_error(qtbot, window, monkeypatch, tmp_path):
    monkeypatch.setattr(gpu_trace_action, "probe_command", lambda: [sys.executable, "-c", "pass"])
    monkeypatch.setattr(gpu_trace_action, "capture_command", lambda cfg, out: [
        sys.executable, "-c", "import sys; print('specscope: loading', file=sys.stderr); "
                              "print('specscope: error: could not load weights from x', file=sys.stderr); sys.exit(2)"])
    monkeypatch.setattr(gpu_trace_action.GpuCapture, "ask_folder", lambda self: str(tmp_path))
    code, text = _wait_done(qtbot, window)
    assert code == 2 and text == "could not load weights from x"
    assert window.gpu_capture.last_dialog.windowTitle() == "Capture GPU trace failed"
    window.gpu_capture.last_dialog.close()


def test_cancelling_the_folder_dialog_does_nothing(qtbot, window, monkeypatch):
    monkeypatch.setattr(gpu_trace_action, "probe_command", lambda: [sys.executable, "-c", "pass"])
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
