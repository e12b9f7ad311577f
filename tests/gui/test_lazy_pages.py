"""The window builds a page when it is first shown (it opens sooner): every page is still there, and a page built
after a session was opened shows exactly what a page built before it shows (the session pushed to it when built).

The reference is a window whose pages were all built before anything was opened, as the app did before pages were
built lazily: each page's labels, tables, text panes and chart items are read and compared."""

from __future__ import annotations

from pathlib import Path

import pyqtgraph as pg
import pytest
from PySide6 import QtWidgets

from specscope.gui.main_window import PAGE_TITLES, PAGES, MainWindow

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "tests" / "fixtures" / "session_demo.json"
REAL = ROOT / "tests" / "fixtures" / "session_real_shape.json"

pytestmark = pytest.mark.timeout(600)


def _item(item) -> list[str]:
    if isinstance(item, pg.PlotDataItem):
        x, y = item.getData()
        return [f"curve {item.name()} {[] if x is None else list(x)} {[] if y is None else list(y)}"]
    if isinstance(item, pg.BarGraphItem):
        return [f"bars {sorted((k, repr(v)) for k, v in item.opts.items() if k in ('x', 'x0', 'x1', 'height', 'y0', 'y1', 'width'))}"]
    if isinstance(item, pg.ErrorBarItem):
        return [f"errors {sorted((k, repr(v)) for k, v in item.opts.items() if k in ('x', 'y', 'top', 'bottom', 'height'))}"]
    if isinstance(item, pg.TextItem):
        return [f"text {item.textItem.toPlainText()}"]
    if isinstance(item, pg.InfiniteLine):
        return [f"line {item.value()} {item.isVisible()}"]
    return [f"{type(item).__name__}"]


def shown(page: QtWidgets.QWidget) -> list[str]:
    """What a page shows, as sorted strings: visible labels, table cells, text panes, chart titles and items."""
    out: list[str] = []
    for lab in page.findChildren(QtWidgets.QLabel):
        if lab.isVisibleTo(page):
            full = getattr(lab, "full_text", None)
            out.append(f"label {full() if callable(full) else lab.text()} | {lab.toolTip()}")
    for view in page.findChildren(QtWidgets.QAbstractItemView):
        m = view.model()
        if m is None or not view.isVisibleTo(page):
            continue
        for r in range(m.rowCount()):
            out.append("row " + " | ".join(str(m.index(r, c).data()) for c in range(m.columnCount())))
    for kind in (QtWidgets.QPlainTextEdit, QtWidgets.QTextEdit):
        out.extend(f"pane {pane.toPlainText()}" for pane in page.findChildren(kind))
    for chart in page.findChildren(pg.PlotWidget):
        plot = chart.getPlotItem()
        out.append(f"chart {plot.titleLabel.text}")
        for item in plot.items:
            out.extend(_item(item))
            for child in item.childItems():
                out.extend(_item(child))
    return sorted(out)


@pytest.fixture
def make_window(qtbot, tmp_path):
    def make(name: str) -> MainWindow:
        from PySide6 import QtCore

        settings = QtCore.QSettings(str(tmp_path / f"{name}.ini"), QtCore.QSettings.Format.IniFormat)
        w = MainWindow(settings=settings, autosave_dir=str(tmp_path / "sessions"))
        qtbot.addWidget(w)
        w.resize(1440, 900)
        w.show()
        return w
    return make


def test_the_window_opens_with_the_page_on_screen_built_and_every_tab_there(make_window):
    w = make_window("lazy")
    w.open_session(str(DEMO))
    assert list(w.views.built()) == ["live"]
    assert [w.tabs.tabText(i) for i in range(w.tabs.count())] == [PAGE_TITLES[k] for k in PAGES]
    menu = next(a.menu() for a in w.menuBar().actions() if a.text() == "&View")
    assert [a.text() for a in menu.actions()] == [PAGE_TITLES[k] for k in PAGES]


def test_every_page_reached_after_a_session_is_opened_shows_that_session(make_window, qtbot):
    """Pages reached by their tab (as a click does) after DEMO, then after REAL: each equals the page of a window
    that built every page first; and it differs from a page that shows no session (the check can fail)."""
    eager = make_window("eager")
    empty = {key: shown(eager.views[key]) for key in PAGES}  # every page built, nothing opened yet
    lazy = make_window("lazy")
    for path, keys in ((DEMO, ["breakdown", "division", "tune", "history"]),
                       (REAL, ["verify_cost", "context", "cases", "compare"])):  # REAL holds a verify cost curve
        for w in (eager, lazy):
            w.open_session(str(path))
        for key in keys:
            assert key not in lazy.views.built()
            lazy.tabs.setCurrentIndex(PAGES.index(key))  # the tab, as a click selects it
            eager.show_page(key)
            qtbot.waitUntil(lambda: not any(getattr(v, "busy", lambda: False)() for v in (eager.views[key], lazy.views[key])))
            page = lazy.tabs.currentWidget()
            assert page is lazy.views[key] and key in lazy.views.built()
            assert shown(page) == shown(eager.views[key]), key
            if key in ("breakdown", "division", "verify_cost", "cases"):  # (the sessions hold no tune or sweep)
                assert shown(page) != empty[key], f"{key} shows no session"
    for key in PAGES:  # pages built earlier follow a session opened later, as before
        assert shown(lazy.views[key]) == shown(eager.views[key]), key


def test_a_page_asked_for_before_it_is_shown_has_the_session(make_window):
    w = make_window("lazy")
    w.open_session(str(DEMO))
    assert w.cases.proxy.rowCount() == 3  # built by the attribute, not shown
    assert w.tabs.currentWidget() is w.live and w.tabs.widget(PAGES.index("cases")) is w.cases
    assert len(w.division.chart.curve.getData()[0]) == 101
    w.show_page("breakdown")
    assert w.tabs.currentWidget() is w.breakdown and w.breakdown.table.rowCount() >= 6


def test_a_charts_right_click_menu_is_built_when_first_asked_for(qtbot):
    from specscope.gui.charts import ThroughputChart
    from specscope.gui.charts.common import LIGHT

    chart = ThroughputChart(LIGHT)
    qtbot.addWidget(chart)
    vb = chart.plot_item.vb
    assert vb.menu is None and vb.menuEnabled()
    menu = vb.getMenu(None)
    assert menu is vb.menu and "View All" in [a.text() for a in menu.actions()]
    assert vb.getContextMenus(None) and chart.plot_item.getContextMenus(None) is not None
