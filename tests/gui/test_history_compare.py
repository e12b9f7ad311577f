"""History and Compare pages, the verdict's units, ~-relative paths, and the light/dark switch (offscreen)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from PySide6 import QtCore, QtGui

from specscope.profiler.session.session import Session
from specscope.profiler.analysis.verdict import verdict
from specscope.profiler.analysis.summary import summarize

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "session_v1_demo.json"  # a schema-1 session: History lists old sessions too
DAY = 86400.0

pytestmark = pytest.mark.timeout(120)


def _variant(path: Path, *, later: float = DAY, plain_scale: float = 1.0, regime: str | None = None) -> Path:
    """A copy of the fixture session, started ``later`` seconds after it, with plain decoding ``plain_scale``× as fast."""
    d = json.loads(FIXTURE.read_text(encoding="utf-8"))
    d["started_at"] += later
    d["finished_at"] += later
    for c in d["cases"]:
        c["plain"]["repeats_tok_s"] = [x * plain_scale for x in c["plain"]["repeats_tok_s"]]
        c["plain"]["step_ms"] = [x / plain_scale for x in c["plain"]["step_ms"]]  # the steps it was measured from
    if regime:
        d["config"]["sampling"] = {"temp": 0.7, "top_p": 1.0, "seed": 0, "regime": regime}
        d["config"]["temp"] = 0.7
    path.write_text(json.dumps(d), encoding="utf-8")
    return path


@pytest.fixture
def autosaved(window):
    """The window's autosave folder with two good sessions, a truncated one and a JSON file that is no session."""
    d = window.autosave_dir
    d.mkdir(parents=True, exist_ok=True)
    old = d / "session-20261129-102450.json"
    shutil.copy(FIXTURE, old)
    new = _variant(d / "session-20261130-111500.json", plain_scale=1.25)
    broken = d / "session-20261130-111900.json"
    broken.write_text(FIXTURE.read_text(encoding="utf-8")[:3000], encoding="utf-8")  # a run killed mid-write
    alien = d / "notes.json"
    alien.write_text('{"hello": 1}', encoding="utf-8")
    # the newest by modification time: the broken file, then the alien one
    for i, p in enumerate((old, new, broken, alien)):
        os.utime(p, (1_800_000_000 + i, 1_800_000_000 + i))
    return {"old": str(old), "new": str(new), "broken": str(broken), "alien": str(alien)}


def _show_history(window, qtbot):
    window.show_page("history")
    qtbot.waitUntil(lambda: not window.history.busy(), timeout=20_000)
    return window.history


def _double_click(qtbot, view, row: int) -> None:
    idx = view.model().index(row, 2)
    rect = view.visualRect(idx)
    qtbot.mouseClick(view.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.mouseDClick(view.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=rect.center())


def _row_of(history, path: str) -> int:
    for r in range(history.proxy.rowCount()):
        if history._path_at(r) == path:
            return r
    raise AssertionError(f"{path} not listed")


# -- History -----------------------------------------------------------------------------------

def test_history_lists_sessions_and_says_why_a_file_is_unreadable(window, qtbot, autosaved):
    h = _show_history(window, qtbot)
    rows = h.row_texts()
    assert len(rows) == 4
    by_path = {h._path_at(r): rows[r] for r in range(len(rows))}
    old = by_path[autosaved["old"]]
    # date, model, drafter, k, regime, status · cases, plain tok/s, spec tok/s, measured speedup, acceptance
    assert old[0].startswith("2026-11-") and "demo-hybrid-v2" in old[1]
    assert old[2:5] == ["mtp", "2", "greedy"]
    assert old[5] == "complete · 3/3"
    s = summarize(Session.load(autosaved["old"]))
    assert old[6] == f"{s['plain_tok_s']:.1f}" and old[7] == f"{s['spec_tok_s']:.1f}"
    assert old[8] == f"{s['measured_speedup']:.3f}×" and old[9] == f"{s['p'] * 100:.1f}%"
    new = by_path[autosaved["new"]]
    assert float(new[6]) == pytest.approx(s["plain_tok_s"] * 1.25, abs=0.06)
    # newest session first (by when it was measured)
    readable = [h._path_at(r) for r in range(len(rows)) if "unreadable" not in rows[r][1]]
    assert readable == [autosaved["new"], autosaved["old"]]
    # unreadable files: a row that says why, no crash, not openable
    broken, alien = by_path[autosaved["broken"]], by_path[autosaved["alien"]]
    assert broken[1].startswith("unreadable: ") and "invalid JSON" in broken[1] and broken[5] == "unreadable"
    assert "not a specscope session" in alien[1]
    assert str(window.autosave_dir) not in broken[1]  # the reason names the file, not its full path
    assert "4 files (2 unreadable)" in h.where.text()


def test_history_reads_only_new_or_changed_files(window, qtbot, autosaved, monkeypatch):
    from specscope.gui.views import history_reader as reader_mod

    h = _show_history(window, qtbot)
    seen = []
    real = reader_mod.read_entry
    monkeypatch.setattr(reader_mod, "read_entry", lambda p: seen.append(Path(p).name) or real(p))
    extra = _variant(window.autosave_dir / "session-20261201-090000.json", later=2 * DAY)
    h.refresh()
    qtbot.waitUntil(lambda: not h.busy(), timeout=20_000)
    assert seen == [extra.name]
    assert h.row_count() == 5


def test_history_double_click_reopens_and_refreshes_after_a_run(window, qtbot, autosaved):
    h = _show_history(window, qtbot)
    _double_click(qtbot, h.table, _row_of(h, autosaved["new"]))
    qtbot.waitUntil(lambda: window.session_path == autosaved["new"], timeout=5_000)
    assert window.tabs.currentWidget() is window.live
    assert Path(autosaved["new"]).name in window.windowTitle()
    assert summarize(window.model.session)["plain_tok_s"] == pytest.approx(
        summarize(Session.load(autosaved["new"]))["plain_tok_s"])

    # a corrupt row does not open (and does not crash): the page says why
    window.show_page("history")
    qtbot.waitUntil(lambda: not h.busy(), timeout=20_000)
    _double_click(qtbot, h.table, _row_of(h, autosaved["broken"]))
    assert window.session_path == autosaved["new"]
    assert "cannot be opened" in h.note.text() and "invalid JSON" in h.note.text()

    # a finished run's autosave appears without pressing Refresh
    _variant(window.autosave_dir / "session-20261202-090000.json", later=3 * DAY)
    window.run_finished.emit("complete")
    qtbot.waitUntil(lambda: h.row_count() == 5 and not h.busy(), timeout=20_000)


def test_history_open_is_refused_while_running(window, qtbot, autosaved, monkeypatch):
    h = _show_history(window, qtbot)
    monkeypatch.setattr(window, "is_running", lambda: True)
    h.open_requested.emit(autosaved["old"])
    assert window.session_path is None
    assert "run is in progress" in window.run_status.text()


# -- Compare -----------------------------------------------------------------------------------

def test_compare_two_rows_from_history_shows_deltas(window, qtbot, autosaved):
    h = _show_history(window, qtbot)
    h.select_paths([autosaved["new"], autosaved["old"]])
    assert h.compare_btn.isEnabled() and not h.open_btn.isEnabled()
    qtbot.mouseClick(h.compare_btn, QtCore.Qt.MouseButton.LeftButton)
    c = window.compare
    assert window.tabs.currentWidget() is c
    assert c.paths == (autosaved["old"], autosaved["new"])  # older is A
    assert not c.refused.isVisible()
    assert c.why.isVisible() and c.why.text().startswith("Why: ") and "log(speedup A ÷ speedup B)" in c.why.text()
    plain = c.figure("plain_tok_s")
    assert plain["winner"] == "B" and plain["delta"] == pytest.approx(plain["a"] * 0.25, rel=1e-3)
    rows = {r[0].strip(): r for r in c.row_texts()}
    assert [c.table.horizontalHeaderItem(i).text() for i in range(6)] == ["Figure", "A", "B", "Δ (B − A)", "Better", "Winner"]
    row = rows["Plain decoding"]
    assert row[1] == f"{plain['a']:.1f} tok/s" and row[2] == f"{plain['b']:.1f} tok/s"
    assert row[3].startswith("+") and "tok/s (+25.0%)" in row[3]
    assert row[5].startswith("B · 25.0% higher")
    assert rows["Acceptance p"][3] == "+0.0 pts" and rows["Acceptance p"][5] == "no measurable difference"
    assert "Verify ÷ decode per block (lower is cheaper verify)" in rows  # section rows
    assert c.headline.text().startswith(("A wins", "B wins", "Measured speedup: no measurable difference"))
    # two selected rows including an unreadable one: no Compare
    h.select_paths([autosaved["old"], autosaved["broken"]])
    assert not h.compare_btn.isEnabled()


def test_compare_refuses_mixed_regimes_until_timings_only(window, qtbot, tmp_path):
    a = str(_variant(tmp_path / "greedy.json", later=0))
    b = str(_variant(tmp_path / "sampled.json", regime="temperature 0.7"))
    assert window.compare_paths(a, b)
    c = window.compare
    assert c.refused.isVisible()
    assert "refusing to compare acceptance across sampling regimes" in c.refused.text()
    assert "Timings only" in c.refused.text()
    assert c.table.rowCount() == 0
    c.timings_only.setChecked(True)
    assert not c.refused.isVisible() and c.table.rowCount() > 0
    keys = {r["key"] for r in c.result["figures"]}
    assert "plain_tok_s" in keys and "p" not in keys and "measured_speedup" not in keys
    assert any(n.startswith("Timings only") for n in c.result["notes"]) and "Timings only" in c.notes.text()
    c.swap()
    assert c.paths == (b, a) and c.figure("plain_tok_s") is not None


def test_file_menu_compare_sessions(window, qtbot, autosaved, monkeypatch):
    from PySide6 import QtWidgets

    file_menu = window.menuBar().actions()[0].menu()
    assert window.act_compare in file_menu.actions()
    monkeypatch.setattr(QtWidgets.QFileDialog, "getOpenFileNames",
                        staticmethod(lambda *a, **k: ([autosaved["old"], autosaved["new"]], "")))
    window.act_compare.trigger()
    assert window.tabs.currentWidget() is window.compare and window.compare.result is not None
    # one file picked: compared with the session that is open
    window.open_session(autosaved["old"])
    monkeypatch.setattr(QtWidgets.QFileDialog, "getOpenFileNames", staticmethod(lambda *a, **k: ([autosaved["new"]], "")))
    window.compare_sessions_dialog()
    assert window.compare.paths == (autosaved["old"], autosaved["new"])


# -- words and looks ----------------------------------------------------------------------------

def test_verdict_break_even_has_its_unit(window):
    s = summarize(Session.load(FIXTURE))
    text = verdict(s)
    # this session's drafts alone cost more than E·T_decode: out of reach, and no negative multiple is printed
    assert s["break_even_out_of_reach"] and "break-even is out of reach" in text and "≤ -" not in text
    win = {"measured_speedup": 1.3, "k": 2, "verify_multiple": 1.1, "break_even_multiple": 1.22}
    assert "break-even needs ≤ 1.22× T_decode." in verdict(win)
    window.open_session(str(FIXTURE))
    assert "T_decode" in window.verdict.headline.text() and "≤ -" not in window.verdict.headline.text()
    assert window.division.t_be.value.text() == "out of reach"


def test_status_bar_path_is_home_relative(window, tmp_path, monkeypatch):
    from specscope.gui.text import home_relative

    home = tmp_path / "home"
    (home / "runs").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))
    p = home / "runs" / "s.json"
    shutil.copy(FIXTURE, p)
    window.open_session(str(p))
    assert window.run_status.text() == f"opened ~{os.sep}runs{os.sep}s.json"
    assert str(home) not in window.run_status.text()
    assert home_relative(str(home)) == "~"
    assert home_relative("/elsewhere/s.json") == "/elsewhere/s.json"
    assert home_relative("relative/s.json") == "relative/s.json"
    assert home_relative(str(home) + "-other/s.json") == str(home) + "-other/s.json"  # a prefix is not a parent


def test_dark_scheme_switches_palette_and_chart_colours(window, qtbot, monkeypatch):
    from PySide6 import QtWidgets

    from specscope.gui.charts.common import DARK, LIGHT

    app = QtWidgets.QApplication.instance()

    def switch(name):
        monkeypatch.setenv("SPECSCOPE_THEME", name)
        window._scheme_changed()  # what the OS's colorSchemeChanged signal calls
        qtbot.wait(10)

    def colours():
        tp = window.live.throughput
        return {
            "bg": tp.backgroundBrush().color().name(),
            "plain": tp.plain.opts["pen"].color().name(),
            "spec": tp.spec.opts["pen"].color().name(),
            "bar": QtGui.QBrush(window.live.tpr.bars.opts["brush"]).color().name(),
            "window": app.palette().color(QtGui.QPalette.ColorRole.Window).lightness(),
        }

    window.open_session(str(FIXTURE))
    try:
        switch("light")
        light = colours()
        assert window.theme["name"] == "light"
        assert (light["bg"], light["plain"], light["spec"], light["bar"]) == (LIGHT["bg"], LIGHT["plain"], LIGHT["spec"], LIGHT["bar"])
        assert light["window"] >= 128
        switch("dark")
        dark = colours()
        assert window.theme["name"] == "dark"
        assert (dark["bg"], dark["plain"], dark["spec"], dark["bar"]) == (DARK["bg"], DARK["plain"], DARK["spec"], DARK["bar"])
        assert dark["window"] < 128
        assert window.live.throughput.plot_item.getAxis("left").textPen().color().name() == DARK["fg"]
    finally:
        switch("light")  # the palette belongs to the whole test process
    assert colours()["plain"] == LIGHT["plain"]


def test_is_dark_follows_the_os_scheme_then_the_palette(monkeypatch):
    from PySide6 import QtWidgets

    from specscope.gui import theme

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    monkeypatch.delenv("SPECSCOPE_THEME", raising=False)

    class Hints:
        def __init__(self, scheme):
            self.scheme = scheme

        def colorScheme(self):  # noqa: N802
            return self.scheme

    class App:
        def __init__(self, scheme):
            self._hints = Hints(scheme)

        def styleHints(self):  # noqa: N802
            return self._hints

        def palette(self):
            return app.palette()

    assert theme.is_dark(App(QtCore.Qt.ColorScheme.Dark)) is True
    assert theme.is_dark(App(QtCore.Qt.ColorScheme.Light)) is False
    monkeypatch.setattr(theme, "_platform_dark", True)
    assert theme.is_dark(App(QtCore.Qt.ColorScheme.Unknown)) is (True if sys.platform != "darwin" else
                                                                  app.palette().color(QtGui.QPalette.ColorRole.Window).lightness() < 128)
    monkeypatch.setenv("SPECSCOPE_THEME", "light")
    assert theme.is_dark(App(QtCore.Qt.ColorScheme.Dark)) is False


def test_gui_size_option():
    from specscope.gui.app import parse_size

    assert parse_size("1280x800") == (1280, 800)
    assert parse_size(None) is None
    with pytest.raises(ValueError):
        parse_size("big")


def test_a_second_window_leaves_the_first_ones_widgets_unstyled_again(window, qtbot, tmp_path):
    """Each window applies the app's style, palette and style sheet; setting an unchanged one re-polishes every
    widget the app holds (a test process's n-th window took 0.3 s + 0.25 s per window still alive). A second window
    sends the first one's widgets no style or palette change; a switch of scheme still does."""
    from PySide6 import QtCore, QtWidgets

    from specscope.gui.main_window import MainWindow

    seen: list[int] = []
    watched = (QtCore.QEvent.Type.StyleChange, QtCore.QEvent.Type.PaletteChange, QtCore.QEvent.Type.ApplicationPaletteChange)

    class Count(QtCore.QObject):
        def eventFilter(self, obj, ev):  # noqa: N802 (Qt's name)
            if ev.type() in watched:
                seen.append(int(ev.type().value))
            return False

    counter = Count()
    label = window.findChild(QtWidgets.QLabel)
    assert label is not None
    label.installEventFilter(counter)
    settings = QtCore.QSettings(str(tmp_path / "second.ini"), QtCore.QSettings.Format.IniFormat)
    second = MainWindow(settings=settings, autosave_dir=str(tmp_path / "second"))
    qtbot.addWidget(second)
    try:
        assert seen == []
        window._scheme_changed()  # the OS's colorSchemeChanged, unchanged: nothing to set
        assert seen == []
    finally:
        second.setup.inspector.shutdown()
        label.removeEventFilter(counter)
