"""A DFlash session (block drafting: k = 15 drafts a round, a 16-position verify) on a 13" laptop's window.

The session is a real run of the demo with the trained DFlash drafter (``specscope run --demo --drafter dflash
--cases 3 --max-tokens 64``): its verdict is five lines long at 1280 px, tokens per round has 16 bars, and the
clock probe drifted (the probe chart's title grows " — DRIFT")."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6 import QtCore, QtWidgets

from test_layout_fit import clipped_labels

DFLASH = Path(__file__).resolve().parent / "fixtures" / "session_dflash_quick.json"

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def dflash_window(qtbot, settings, tmp_path):
    from specscope.gui.main_window import MainWindow

    path = tmp_path / DFLASH.name
    shutil.copy(DFLASH, path)
    w = MainWindow(settings=settings, autosave_dir=str(tmp_path / "sessions"))
    qtbot.addWidget(w)
    w.show()
    w.open_session(str(path))
    yield w
    w.setup.inspector.shutdown()


def _settle(w, size=None):
    if size:
        w.resize(*size)
    for _ in range(6):
        QtWidgets.QApplication.processEvents()


def test_the_session_is_a_dflash_one():
    import json

    d = json.loads(DFLASH.read_text())
    assert d["config"]["drafter"]["kind"] == "dflash" and d["config"]["num_draft_tokens"] == 15


def test_a_long_verdict_leaves_a_small_window_its_page(dflash_window):
    """At 1280×800 the verdict (headline, detail, drift warning) took a third of the window and the Live page's
    lower charts were cut off; now each part has a line budget and ends in "…", its whole text in the tooltip."""
    w = dflash_window
    _settle(w, (1280, 800))
    bar = w.verdict
    assert (w.width(), w.height()) == (1280, 800)
    assert bar.height() <= 0.22 * w.height(), bar.height()
    assert bar.headline.elided and "more cases" in bar.headline.text() and "more cases" in bar.headline.toolTip()
    assert bar.drift.isVisible() and "Drift warning" in bar.drift.text()
    # a taller window shows more of it again
    _settle(w, (1600, 1000))
    assert bar.headline.max_lines > 3 and not bar.headline.elided


def test_a_short_verdict_takes_one_line(qtbot):
    from specscope.gui.views.common import FittingLabel

    lab = FittingLabel("Speculation pays", 3)
    qtbot.addWidget(lab)
    lab.resize(600, 200)
    one = lab.heightForWidth(600)
    lab.setText("word " * 400)
    assert lab.heightForWidth(600) == pytest.approx(3 * (one - lab.contentsMargins().top() - lab.contentsMargins().bottom())
                                                  + lab.contentsMargins().top() + lab.contentsMargins().bottom())


@pytest.mark.parametrize("size", [(1280, 800), (1600, 1000)])
def test_live_page_charts_are_whole(dflash_window, size):
    """Every Live chart on screen gets at least its minimum height, inside the page (nothing cut at its bottom)."""
    w = dflash_window
    w.show_page("live")
    _settle(w, size)
    live = w.views["live"]
    page = live.rect()
    for chart in live.charts:
        assert chart.height() >= chart.minimumHeight(), (type(chart).__name__, chart.height())
        r = QtCore.QRect(chart.mapTo(live, QtCore.QPoint(0, 0)), chart.size())
        assert page.contains(r), (type(chart).__name__, r, page)
    assert live.compact() == (size[1] < 900)
    assert not clipped_labels(w)


def test_legends_fit_their_chart(dflash_window):
    """A three-entry legend in one row ran past the throughput chart's right edge at 1280 px; it now takes as
    many columns as fit, and the y axis keeps the data under it."""
    w = dflash_window
    w.show_page("live")
    _settle(w, (1280, 800))
    live = w.views["live"]
    for chart in live.charts:
        lg = chart.legend
        if lg is not None and lg.isVisible() and lg.items:
            assert lg.width() + 2 * abs(chart.legend_offset[0]) <= chart.plot_item.vb.width() + 1, type(chart).__name__
    thr = live.throughput
    top = thr.plot_item.vb.viewRange()[1][1]
    under = thr.legend.height() + abs(thr.legend_offset[1])
    ymax = max(max(thr.plain.getData()[1]), max(thr.spec.getData()[1]))
    assert ymax <= top * (1 - under / thr.plot_item.vb.height()), (ymax, top)


def test_legend_columns_come_back_when_wide(qtbot):
    from specscope.gui.charts import ThroughputChart

    c = ThroughputChart()
    qtbot.addWidget(c)
    c.show()
    c.set_data({"plain_x": [0, 1], "plain_y": [100, 120], "spec_x": [0, 1], "spec_y": [40, 50], "predicted_tok_s": 36})
    widths = []
    for width in (1200, 450, 1200):
        c.resize(width, 300)
        for _ in range(4):
            QtWidgets.QApplication.processEvents()
        widths.append((c.legend.columnCount, round(c.legend.width())))
    assert widths[0][0] == 3 and widths[1][0] == 1 and widths[2] == widths[0]


def test_sixteen_bars_keep_readable_ticks(dflash_window):
    """Tokens per round for k = 15 has 16 bars; on a narrow chart every label at once overlapped ("10111213")."""
    w = dflash_window
    w.show_page("live")
    _settle(w, (1280, 800))
    tpr = w.views["live"].tpr
    assert tpr._bins == list(range(1, 17))
    ticks = tpr.plot_item.getAxis("bottom")._tickLevels
    major = [t for t in ticks[0]]
    assert major[0] == (1, "1") and len(major) + len(ticks[1]) == 16
    per_label = tpr.plot_item.vb.width() * (major[1][0] - major[0][0]) / 16 if len(major) > 1 else tpr.plot_item.vb.width()
    assert per_label >= tpr.fontMetrics().horizontalAdvance("16") + 4
    assert tpr.tick_step(2000) == 1


def test_probe_title_fits(dflash_window):
    """The drift title is wider than a narrow probe chart, which widened its plot past the right edge."""
    w = dflash_window
    w.show_page("live")
    _settle(w, (1280, 800))
    probe = w.views["live"].probe
    assert probe._shown_title.endswith("DRIFT")
    from specscope.gui.charts.common import font
    from PySide6 import QtGui

    assert QtGui.QFontMetrics(font(11)).horizontalAdvance(probe._shown_title) < probe.width()
    assert probe.plot_item.titleLabel.item.boundingRect().width() <= probe.plot_item.vb.width()
    assert probe.title_for(2000, True) == "Clock probe: device speed over the run — DRIFT"


def test_probe_title_fits_without_drift(qtbot):
    """No drift: the full title (303 px rendered) on a 330 px chart widened its plot past the right edge."""
    from specscope.gui.charts.probe import ProbeChart

    c = ProbeChart()
    qtbot.addWidget(c)
    c.resize(330, 220)
    c.show()
    c.set_data({"x": [1, 2], "y": [100, 90], "cool_x": [], "cool_y": [], "gpu_x": [], "gpu_y": [], "noise": 0.4, "drift": False})
    for _ in range(4):
        QtWidgets.QApplication.processEvents()
    assert c.plot_item.titleLabel.item.boundingRect().width() <= c.plot_item.vb.width()
    axis = c.plot_item.getAxis("left").width()
    assert c.plot_item.vb.width() <= c.width() - axis, "the plot runs past the chart's right edge"


@pytest.mark.parametrize("size", [(1280, 800), (1600, 1000)])
def test_breakdown_ratio_labels_keep_apart(dflash_window, size):
    """The verify bar's five "×ratio" labels were placed for the plot's height before the window's resize reached it,
    and overlapped on a 1280×800 window."""
    import pyqtgraph as pg

    w = dflash_window
    w.resize(*size)
    w.show_page("breakdown")
    _settle(w)
    chart = w.views["breakdown"].chart
    vb = chart.plot_item.vb
    ys = sorted(vb.mapViewToScene(t.pos()).y() for t in chart.items
                if isinstance(t, pg.TextItem) and t.toPlainText().startswith("×") and t.anchor.x() == 1)
    assert len(ys) == 5, ys
    assert min(b - a for a, b in zip(ys, ys[1:])) >= 12, ys
