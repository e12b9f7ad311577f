"""The desktop app under faults and hostile text, driven offscreen with pytest-qt.

Already covered in tests/gui/test_app.py: Stop mid-run, window closed mid-run, ``<script>`` shown as text,
export errors shown in a dialog.
"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from specscope.profiler.session.session import Session

from .helpers import FIXTURE, RUN_TIMEOUT_MS, needs_proc

pytestmark = pytest.mark.timeout(300)


@needs_proc
@pytest.mark.slow  # ~10 s; a killed worker keeping everything is tested by default from the CLI (test_faults.py)
def test_worker_sigkill_in_the_app(window, qtbot, tmp_path, small_demo_run):
    """The app says what happened, keeps and shows everything received; the autosave loads and exports."""
    small_demo_run(window, max_tokens=32, cases=2, breakdown=False)
    assert window.start_run()
    pid = window.worker.proc.processId()
    qtbot.waitUntil(lambda: any(c["complete"] for c in window.model.session.cases), timeout=RUN_TIMEOUT_MS)
    received = json.loads(window.model.session.to_json())
    with qtbot.waitSignal(window.run_finished, timeout=30_000) as blocker:
        os.kill(pid, signal.SIGKILL)
    assert blocker.args == ["incomplete"]
    assert not window.is_running()
    s = window.model.session
    reason = "the worker ended unexpectedly (killed or crashed)"
    assert s.status == "incomplete" and s.data["errors"][-1] == reason
    # nothing received is lost: every case and token from before the kill is still there
    assert len(s.cases) >= len(received["cases"])
    for before, now in zip(received["cases"], s.cases):
        assert now["plain"]["tokens"][: len(before["plain"]["tokens"])] == before["plain"]["tokens"]
        assert now["spec"]["tokens"][: len(before["spec"]["tokens"])] == before["spec"]["tokens"]
    assert s.cases[0]["complete"] and len(s.cases[0]["plain"]["tokens"]) == 32
    # ... and shown: the verdict banner, the status line and a dialog say what happened
    window.model.flush()
    assert window.verdict.error.isVisibleTo(window) and reason in window.verdict.error.text()
    assert reason in window.run_status.text() and "saved to" in window.run_status.text()
    dlg = window._last_dialog
    assert dlg.isVisible() and "The run ended early" in dlg.windowTitle()
    assert reason in dlg.text() and "is kept and shown" in dlg.text()
    dlg.close()
    assert window.cases.proxy.rowCount() == len(s.cases)
    assert len(window.live.throughput.plain.getData()[0]) > 0
    # the autosaved session loads and exports
    saved = Session.load(window.session_path)
    assert saved == s
    for ext in (".csv", ".json", ".html"):
        out = tmp_path / f"after-kill{ext}"
        window.export_report(str(out))
        assert out.stat().st_size > 100
    assert Session.load(tmp_path / "after-kill.json") == s
    # and a new run can start afterwards
    assert not window.worker.is_running()


def test_autosave_failure_is_shown_and_data_kept(window, qtbot, monkeypatch, tmp_path):
    """Disk full while the app autosaves: the run goes on, the user is told, Save as… still works."""
    import errno

    import specscope.gui.session_model as sm

    def full(self, path, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    window.model.reset(Session(), autosave_path=str(tmp_path / "auto.json"))
    window.session_path = str(tmp_path / "auto.json")
    monkeypatch.setattr(sm.Session, "save", full)
    for ev in _events():
        window.model.apply(ev)
    assert window.model.autosave_error == "No space left on device"
    window._on_worker_finished(-1, "", False)
    assert "NOT saved (No space left on device)" in window.run_status.text()
    assert "could not be saved" in window._last_dialog.text()
    window._last_dialog.close()
    monkeypatch.undo()
    out = tmp_path / "saved-later.json"
    window.model.session.save(out)
    assert Session.load(out).cases[0]["plain"]["tokens"] == [5, 6, 7]


def _events():
    case = {"id": "c1", "content_class": "en", "prompt": "hi", "prompt_tokens": [1, 2]}
    yield {"event": "run_started", "config": {"num_draft_tokens": 1, "n_cases": 1, "max_tokens": 4}, "environment": {},
           "model": {"name": "m"}, "cases": [case]}
    yield {"event": "case_started", "case": case, "index": 0, "phase": "plain"}
    yield {"event": "prefill", "case": "c1", "mode": "plain", "token": 5, "ms": 3.0, "n_prompt": 2}
    yield {"event": "step", "case": "c1", "index": 1, "token": 6, "ms": 1.0}
    yield {"event": "step", "case": "c1", "index": 2, "token": 7, "ms": 1.0}


def test_save_as_to_unwritable_path_shows_dialog(window, monkeypatch):
    from PySide6 import QtWidgets

    window.open_session(str(FIXTURE))
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: ("/dev/null/s.json", "")))
    window.save_session_dialog()
    assert window._last_dialog.isVisible() and "Could not write /dev/null/s.json" in window._last_dialog.text()
    window._last_dialog.close()


HOSTILE = '<img src=x onerror="alert(1)"><a href="javascript:alert(2)">x</a> &amp; <b>'


def test_img_onerror_and_very_long_lines_are_plain_text(window, tmp_path):
    from PySide6 import QtCore

    d = json.loads(FIXTURE.read_text(encoding="utf-8"))
    long_line = "A" * 200_000  # one line, no spaces
    d["cases"][0]["prompt"] = HOSTILE + long_line
    d["cases"][0]["plain_text"] = HOSTILE + "\n" + long_line
    d["cases"][0]["spec_text"] = HOSTILE + " spec\n" + "中" * 50_000
    d["cases"][0]["plain_pieces"] = d["cases"][0]["spec_pieces"] = None
    d["model"]["name"] = HOSTILE
    d["errors"] = [HOSTILE + long_line]
    d["status"] = "incomplete"
    p = tmp_path / "hostile.json"
    p.write_text(json.dumps(d), encoding="utf-8")
    t0 = time.monotonic()
    window.open_session(str(p))
    window.cases.select_case(d["cases"][0]["id"])
    window.model.flush()
    for page in ("live", "breakdown", "division", "cases"):
        window.show_page(page)
        assert not window.grab().isNull()
    elapsed = time.monotonic() - t0
    assert elapsed < 30, f"hostile text took {elapsed:.1f} s to show"
    from specscope.gui.views.common import ZWSP

    prompt = window.cases.prompt.text()
    assert HOSTILE in prompt and "more characters)" in prompt  # shown literally, clipped to a sane length
    assert window.cases.prompt.textFormat() == QtCore.Qt.TextFormat.PlainText
    # the output panes keep the whole text (long runs get invisible break points only)
    assert (HOSTILE + "\n" + long_line) in window.cases.plain_text.toPlainText().replace(ZWSP, "")
    assert HOSTILE + " spec" in window.cases.spec_text.toPlainText()
    # no widget turned the markup into an image or a link
    assert "<img" not in window.cases.plain_text.toHtml().replace("&lt;img", "")
    banner = window.verdict.error
    assert HOSTILE in banner.text() and banner.textFormat() == QtCore.Qt.TextFormat.PlainText
    # a long line does not blow the layout up: labels stay narrow, the window keeps its size
    for lab in (window.cases.prompt, banner):
        assert lab.minimumSizeHint().width() < 1500
    assert window.width() <= 1600
