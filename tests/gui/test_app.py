"""The desktop app, driven offscreen with pytest-qt."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from specscope.profiler.session.session import Session
from specscope.profiler.analysis.summary import session_case_stats

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "session_demo.json"
CHARTS = ("throughput", "acceptance", "tokens_per_round", "breakdown", "division")
RUN_TIMEOUT_MS = 300_000

pytestmark = pytest.mark.timeout(600)


def _assert_views_filled(w):
    snap = w.model.last_snapshot
    s = snap["summary"]
    assert s["plain_tok_s"] and s["spec_tok_s"]
    # live charts hold data
    assert len(w.live.throughput.plain.getData()[0]) > 0
    assert len(w.live.throughput.spec.getData()[0]) > 0
    assert len(w.live.acceptance.line.getData()[0]) > 0
    assert sum(snap["tokens_per_round"]["counts"]) > 0
    # breakdown chart and table
    assert snap["breakdown"] is not None and w.breakdown.chart.items
    assert w.breakdown.table.rowCount() >= 6
    # division curve and measured point
    assert len(w.division.chart.curve.getData()[0]) == 101
    assert len(w.division.chart.main.getData()[0]) == 1
    # cases table and texts
    assert w.cases.proxy.rowCount() >= 1
    assert w.cases.spec_text.toPlainText().strip()
    assert w.cases.plain_text.toPlainText().strip()
    # verdict line
    assert w.verdict.headline.text().startswith(("Speculation", "So far", "Incomplete"))


def test_chart_image_every_chart_png_and_svg():
    from specscope.gui.charts.export import chart_image

    s = Session.load(FIXTURE)
    for name in CHARTS:
        png = chart_image(name, s, width=640, height=320)
        assert png[:8] == b"\x89PNG\r\n\x1a\n", name
        assert len(png) > 2000, name
        svg = chart_image(name, s, fmt="svg")
        assert b"<svg" in svg[:400], name
    empty = Session()
    for name in CHARTS:
        assert chart_image(name, empty)[:4] == b"\x89PNG"
    with pytest.raises(ValueError):
        chart_image("nope", s)
    with pytest.raises(ValueError):
        chart_image("throughput", s, fmt="gif")


def test_open_fixture_fills_every_view(window, qtbot):
    window.open_session(str(FIXTURE))
    qtbot.waitUntil(lambda: window.model.last_snapshot.get("status") == "complete", timeout=5000)
    _assert_views_filled(window)
    assert window.cases.proxy.rowCount() == 3
    assert "MLX 0.32" in window.sb_mlx.text()
    assert "peak memory" in window.sb_mem.text() and "MiB" in window.sb_mem.text()
    for page in ("live", "breakdown", "division", "cases"):
        window.show_page(page)
        assert not window.grab().isNull()


def test_cases_sort_and_what_if(window, qtbot):
    window.open_session(str(FIXTURE))
    from PySide6 import QtCore

    t = window.cases.table
    t.sortByColumn(5, QtCore.Qt.SortOrder.DescendingOrder)  # spec tok/s
    first = window.cases.proxy.index(0, 0).data()
    rates = {c["id"]: session_case_stats(window.model.session, c)["spec_tok_s"] for c in window.model.session.cases}
    assert first == max(rates, key=rates.get)
    # what-if: a cheaper verify moves the curve up
    before = list(window.division.chart.curve.getData()[1])
    window.division.tv.setValue(window.division.tv.value() / 2)
    after = list(window.division.chart.curve.getData()[1])
    assert after[50] > before[50]
    assert len(window.division.chart.whatif.getData()[0]) == 1
    window.division.reset_calculator()
    assert list(window.division.chart.curve.getData()[1]) == before


def test_text_is_plain_never_html(window, tmp_path):
    d = json.loads(FIXTURE.read_text(encoding="utf-8"))
    evil = "<script>alert(1)</script><b>bold</b> & <i>"
    d["cases"][0]["prompt"] = evil
    d["cases"][0]["plain_text"] = evil
    d["cases"][0]["spec_text"] = evil + " spec"
    # per-token pieces (what the view highlights) carry the hostile text too
    n_plain, n_spec = len(d["cases"][0]["plain"]["tokens"]), len(d["cases"][0]["spec"]["tokens"])
    d["cases"][0]["plain_pieces"] = [evil] + [""] * (n_plain - 1)
    d["cases"][0]["spec_pieces"] = [evil + " spec"] + [""] * (n_spec - 1)
    p = tmp_path / "evil.json"
    p.write_text(json.dumps(d), encoding="utf-8")
    window.open_session(str(p))
    window.cases.select_case(d["cases"][0]["id"])
    assert evil in window.cases.plain_text.toPlainText()
    assert evil + " spec" in window.cases.spec_text.toPlainText()
    assert evil in window.cases.prompt.text()
    from PySide6 import QtCore

    assert window.cases.prompt.textFormat() == QtCore.Qt.TextFormat.PlainText


def test_open_bad_session_raises_clear_error(window, tmp_path):
    from specscope.profiler.session.schema import SessionError

    p = tmp_path / "bad.json"
    p.write_text("{not json", encoding="utf-8")
    with pytest.raises(SessionError):
        window.open_session(str(p))


def test_export_error_is_shown_not_raised(window, tmp_path, monkeypatch):
    from PySide6 import QtWidgets

    window.open_session(str(FIXTURE))
    out = tmp_path / "r.unknownext"
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(out), "")))
    window.export_dialog()
    assert window._last_dialog.isVisible()
    assert "Could not write" in window._last_dialog.text()
    window._last_dialog.close()


def test_run_demo_to_completion_then_stop_mid_run(window, qtbot, small_demo_run):
    """One demo case, 8 tokens, with breakdown: every view fills. Then a second run is stopped mid-way."""
    small_demo_run(window, cases=1)
    with qtbot.waitSignal(window.run_finished, timeout=RUN_TIMEOUT_MS) as blocker:
        assert window.start_run()
        assert window.is_running()
    assert blocker.args == ["complete"], window.model.session.data["errors"]
    window.model.flush()
    _assert_views_filled(window)
    saved = Session.load(window.session_path)  # autosaved, atomically
    assert saved.status == "complete" and len(saved.cases) == 1
    assert "MLX" in window.sb_mlx.text()

    # Stop mid-run: partial results are kept, the session is marked incomplete, nothing is left running.
    small_demo_run(window, max_tokens=64, cases=2)
    assert window.start_run()
    qtbot.waitUntil(lambda: any(c["plain"]["step_ms"] for c in window.model.session.cases), timeout=RUN_TIMEOUT_MS)
    with qtbot.waitSignal(window.run_finished, timeout=60_000) as blocker:
        window.stop_run()
    assert blocker.args == ["incomplete"]
    assert not window.is_running()
    s = window.model.session
    assert s.status == "incomplete"
    assert s.cases and s.cases[0]["plain"]["step_ms"]
    assert Session.load(window.session_path).status == "incomplete"
    assert "Incomplete" in window.verdict.headline.text()


def test_close_mid_run_leaves_no_worker(qtbot, settings, tmp_path, small_demo_run):
    from PySide6 import QtCore

    from specscope.gui.main_window import MainWindow

    w = MainWindow(settings=settings, autosave_dir=str(tmp_path))
    qtbot.addWidget(w)
    w.show()
    small_demo_run(w, max_tokens=64, cases=1)
    assert w.start_run()
    proc = w.worker.proc
    qtbot.waitUntil(lambda: w.model.session.status == "running", timeout=RUN_TIMEOUT_MS)
    w.close()
    assert proc.state() == QtCore.QProcess.ProcessState.NotRunning
    assert w.model.session.status == "incomplete"
    assert Session.load(w.session_path).status == "incomplete"


def test_missing_cjk_font_is_said_once_in_the_status_bar(window, qtbot):
    from PySide6.QtGui import QFontDatabase

    from specscope.gui.fonts import CJK_HINT, missing_cjk_font_message

    has_cjk = bool(QFontDatabase.families(QFontDatabase.WritingSystem.SimplifiedChinese))
    assert missing_cjk_font_message("darwin") is None
    assert missing_cjk_font_message("linux") == (None if has_cjk else CJK_HINT)
    expected = "" if has_cjk or sys.platform == "darwin" else CJK_HINT
    # asked once the window has been painted (the font database is read after the first paint, not before it)
    qtbot.waitUntil(lambda: window.font_hint == (expected or None), timeout=5000)
    assert window.statusBar().currentMessage() == expected
