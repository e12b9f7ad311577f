"""Shared look for the charts: colours per theme, axis styling, an empty-state message.

Drawing is what the app costs the engine it measures (on a 2-core machine every repaint is CPU taken
from the run; see ``specscope bench gui``), so the charts draw cheaply: grid lines are opaque (Qt's raster
engine blends a translucent line through its polygon rasterizer, about 10x slower) and behind the data,
a chart given the data it already shows does nothing, and axis ranges move in "nice" steps, so the axes
(whose text and grid pyqtgraph regenerates on every range change) are rebuilt a few times a run, not
at every redraw.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, TypeGuard

import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from .records import ChartTheme

LIGHT: ChartTheme = {
    "name": "light", "bg": "#ffffff", "fg": "#1f2328", "grid": 60, "muted": "#6e7781",
    "plain": "#0969da", "spec": "#d1242f", "pred": "#8250df", "band": (9, 105, 218, 50),
    "accept": "#1a7f37", "bar": "#0969da", "whole": "#57606a", "breakeven": "#9a6700",
    "cats": ["#0969da", "#8250df", "#bf3989", "#1a7f37", "#9a6700", "#6e7781"],
}
DARK: ChartTheme = {
    "name": "dark", "bg": "#161b22", "fg": "#e6edf3", "grid": 80, "muted": "#8d96a0",
    "plain": "#58a6ff", "spec": "#ff7b72", "pred": "#d2a8ff", "band": (88, 166, 255, 60),
    "accept": "#3fb950", "bar": "#58a6ff", "whole": "#8d96a0", "breakeven": "#d29922",
    "cats": ["#58a6ff", "#d2a8ff", "#f778ba", "#3fb950", "#d29922", "#8d96a0"],
}

pg.setConfigOptions(antialias=True)

# Round axis ends, at most ~17% apart: a growing series moves its axis a few dozen times a run,
# never by more than a sixth of the plot.
NICE_STEPS = (1.0, 1.1, 1.2, 1.25, 1.4, 1.5, 1.6, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0, 3.5, 4.0, 4.5, 5.0, 5.5, 6.0, 7.0,
              7.5, 8.0, 9.0, 10.0)


def nice_ceil(x: float) -> float:
    """The smallest of NICE_STEPS × 10^n that is >= x (1 for anything not > 0)."""
    if not (x > 0 and math.isfinite(x)):
        return 1.0
    e = 10.0 ** math.floor(math.log10(x))
    return next(float(f"{m * e:.12g}") for m in NICE_STEPS if m * e >= x * (1 - 1e-12))  # 110, not 110.00000000000001


class GridAxis(pg.AxisItem):
    """An axis whose grid lines are opaque: the colour a translucent line would have over the chart's
    background (``set_background``), which looks the same and draws ~10x faster. The chart puts its
    axes behind the data, so the lines pass under curves and the legend instead of over them."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._bg = QtGui.QColor("#ffffff")

    def set_background(self, color) -> None:
        self._bg = QtGui.QColor(color)
        self.picture = None
        self.update()

    def generateDrawSpecs(self, p):  # noqa: N802 (pyqtgraph naming)
        specs = super().generateDrawSpecs(p)
        if specs is None:
            return None
        axis_spec, tick_specs, text_specs = specs
        bg, out = self._bg, []
        for pen, p1, p2 in tick_specs:
            c = pen.color()
            a = c.alphaF()
            if a < 1.0:
                pen = QtGui.QPen(pen)
                pen.setColor(QtGui.QColor.fromRgbF(bg.redF() + (c.redF() - bg.redF()) * a, bg.greenF() + (c.greenF() - bg.greenF()) * a,
                                                   bg.blueF() + (c.blueF() - bg.blueF()) * a))
            out.append((pen, p1, p2))
        return axis_spec, out, text_specs


_NOTHING = object()


def font(pt: float = 10, bold: bool = False) -> QtGui.QFont:
    f = QtGui.QFont()
    f.setPointSizeF(pt)
    f.setBold(bold)
    return f


class LazyMenuViewBox(pg.ViewBox):
    """pyqtgraph's ViewBox, its right-click menu built when first asked for rather than with the chart (a few ms a
    chart, at the app's start: the Live page has four)."""

    menu: Any  # pyqtgraph's, set in its __init__ (None here until first asked for)

    def __init__(self) -> None:
        super().__init__(enableMenu=False)
        self.state["enableMenu"] = True  # enabled, not built yet

    def _built_menu(self):
        if self.menu is None and self.menuEnabled():
            from pyqtgraph.graphicsItems.ViewBox.ViewBoxMenu import ViewBoxMenu

            self.menu = ViewBoxMenu(self)
            self.updateViewLists()
        return self.menu

    def getMenu(self, ev):  # noqa: N802 (pyqtgraph naming)
        return self._built_menu()

    def getContextMenus(self, event):  # noqa: N802 (pyqtgraph naming)
        self._built_menu()
        return super().getContextMenus(event)


class BaseChart(pg.PlotWidget):
    """A PlotWidget with a title, labelled axes (with units), a legend and an empty-state text (``empty_text``,
    shown until the first data arrives and whenever there is nothing to draw)."""

    title = ""
    x_label = ("", "")
    y_label = ("", "")
    legend_cols = 1
    legend_offset = (10, 5)
    empty_text = ""

    def __init__(self, theme: ChartTheme | None = None, parent=None):
        super().__init__(parent=parent, axisItems={"left": GridAxis("left"), "bottom": GridAxis("bottom")},
                         viewBox=LazyMenuViewBox())
        self.theme = theme or LIGHT
        self._drawn = _NOTHING  # the data on screen (set_data skips a redraw of the same data)
        self.setMinimumSize(260, 180)
        self.plot_item = self.getPlotItem()
        for name in ("left", "bottom"):
            self.plot_item.getAxis(name).setZValue(self.plot_item.vb.zValue() - 1)  # grid lines behind the data
        self._empty = pg.TextItem("", anchor=(0.5, 0.5))
        self._empty.setFont(font(11))
        self.plot_item.vb.addItem(self._empty, ignoreBounds=True)
        self.legend = self.plot_item.addLegend(offset=self.legend_offset, labelTextSize="9pt", colCount=self.legend_cols)
        self.items: list = []  # what the last draw added (``_add``), removed at once by ``_clear``
        self.apply_theme(self.theme)
        self.build()
        self.plot_item.vb.sigResized.connect(self.fit_legend)
        if self.empty_text:
            self.show_empty(self.empty_text)

    # what a redraw replaces: items added with ``_add`` (or ``_text``) and removed all at once by ``_clear``
    def _clear(self) -> None:
        for it in self.items:
            self.plot_item.removeItem(it)
        self.items = []
        self.legend.clear()

    def _add(self, item, name: str | None = None):
        self.plot_item.addItem(item)
        self.items.append(item)
        if name:
            self.legend.addItem(item, name)
        return item

    def _text(self, s: str, x: float, y: float, anchor=(0.5, 0.5), color=None, pt: float = 9, bold: bool = False):
        """A label at (x, y) in data units, removed by the next ``_clear``."""
        t = pg.TextItem(s, color=color or self.theme["fg"], anchor=anchor)
        t.setFont(font(pt, bold))
        t.setPos(x, y)
        return self._add(t)

    def _redraw(self, d: dict | None, needs: str | None = None) -> TypeGuard[dict]:
        """Begin a draw that replaces all the last one added: clear it, and show ``empty_text`` unless there is
        data to draw: ``d`` not empty (and, where ``needs`` names a key, ``d[needs]`` not empty either)."""
        has_data = bool(d and (needs is None or d.get(needs)))
        self._clear()
        self.show_empty(None if has_data else self.empty_text)
        return has_data

    # subclasses fill these
    def build(self) -> None:
        pass

    def _draw(self, data) -> None:
        pass

    def set_data(self, data) -> None:
        """Draw ``data`` (the chart's section of a snapshot), unless it is what the chart already shows."""
        try:
            if self._drawn is not _NOTHING and (data is self._drawn or data == self._drawn):
                return
        except (TypeError, ValueError):  # arrays, or anything else that does not compare plainly: draw
            pass
        self._drawn = _NOTHING  # a draw that fails half-way must not be taken for done
        self._draw(data)
        self._drawn = data
        if self.legend is not None:  # a legend of nothing (no named items, or an empty chart) is an empty box
            self.legend.setVisible(bool(self.legend.items) and not self._empty.isVisible())
            self.fit_legend()

    def legend_width(self, cols: int) -> float:
        """The legend's width laid out in ``cols`` columns (pyqtgraph fills it row by row)."""
        widths = [sample.boundingRect().width() + label.item.boundingRect().width() + 6 for sample, label in self.legend.items]
        return sum(max(widths[c::cols]) for c in range(min(cols, len(widths)))) + 4

    def fit_legend(self, *_) -> None:
        """As many legend columns as fit the plot's width, up to ``legend_cols`` (one long row of entries on a
        narrow chart runs past its right edge, its last entry cut off)."""
        lg = self.legend
        if lg is None or not lg.items or self.legend_cols <= 1:
            return
        room = self.legend_room()
        if room <= 0:
            return
        cols = self.legend_cols
        while cols > 1 and self.legend_width(cols) > room:
            cols -= 1
        if cols != lg.columnCount:  # laid out afresh (pyqtgraph's setColumnCount keeps the old grid's widths)
            entries = [(sample.item, label.text) for sample, label in lg.items]
            lg.clear()
            lg.columnCount = cols
            for item, name in entries:
                lg.addItem(item, name)
        self.legend_changed()

    def legend_room(self) -> float:
        """The width the legend may take: the plot's, less its offset from the edges."""
        return self.plot_item.vb.width() - 2 * abs(self.legend_offset[0])

    def legend_changed(self) -> None:
        """The legend or the plot under it changed size (a chart that keeps room for the legend re-ranges here)."""

    def legend_headroom(self, least: float) -> float:
        """How far above the data the y axis must reach (a factor, at least ``least``) for the data to stay under
        the legend in the top left corner, at the legend's current height."""
        vb_h = self.plot_item.vb.height()
        if self.legend is None or not self.legend.items or vb_h <= 0:
            return least
        under = (self.legend.height() + abs(self.legend_offset[1]) + 6) / vb_h
        return least if under >= 0.8 else max(least, 1.0 / (1.0 - under))

    def set_range(self, x: tuple[float, float] | None = None, y: tuple[float, float] | None = None) -> None:
        """Show exactly these ranges (no padding); a no-op when they are shown already (a range change
        makes pyqtgraph rebuild the axes, which is most of the cost of a redraw)."""
        vb = self.plot_item.vb
        (x0, x1), (y0, y1) = vb.viewRange()
        auto_x, auto_y = vb.autoRangeEnabled()  # auto-range left on would re-range (and rebuild the axes) at every paint
        if x is not None and (auto_x is not False or (x0, x1) != tuple(x)):
            self.plot_item.setXRange(*x, padding=0)
        if y is not None and (auto_y is not False or (y0, y1) != tuple(y)):
            self.plot_item.setYRange(*y, padding=0)

    def apply_theme(self, theme: ChartTheme) -> None:
        self.theme = theme
        self._drawn = _NOTHING  # colours picked while drawing change with the theme: the next data redraws
        self.setBackground(theme["bg"])
        pi = self.plot_item
        pi.setTitle(self.title, color=theme["fg"], size="11pt")
        for name, (text, units) in (("bottom", self.x_label), ("left", self.y_label)):
            ax = pi.getAxis(name)
            ax.setPen(pg.mkPen(theme["muted"]))
            ax.setTextPen(pg.mkPen(theme["fg"]))
            ax.setTickFont(font(9))
            ax.enableAutoSIPrefix(False)
            label = f"{text} ({units})" if units else text
            ax.setLabel(label, color=theme["fg"], **{"font-size": "10pt"})
            if isinstance(ax, GridAxis):
                ax.set_background(theme["bg"])
        pi.showGrid(x=True, y=True, alpha=theme["grid"] / 255)
        if self.legend is not None:
            self.legend.setLabelTextColor(theme["fg"])
            self.legend.setBrush(pg.mkBrush(QtGui.QColor(theme["bg"]).lighter(100)))
            self.legend.setPen(pg.mkPen(theme["muted"]))
        self._empty.setColor(theme["muted"])

    def show_empty(self, message: str | None) -> None:
        """Show a centred message while there is nothing to draw (hidden when message is None). The legend
        (of nothing) hides meanwhile, so it never covers the message, and the message stays centred when
        the view range changes after it was placed."""
        self._empty.setText(message or "")
        self._empty.setVisible(bool(message))
        if self.legend is not None:
            self.legend.setVisible(not message)
        if message:
            self._center_empty()
            if not getattr(self, "_centering", False):
                self.plot_item.vb.sigRangeChanged.connect(self._center_empty)
                self._centering = True

    def _center_empty(self, *_) -> None:
        if self._empty.isVisible():
            vr = self.plot_item.vb.viewRange()
            self._empty.setPos((vr[0][0] + vr[0][1]) / 2, (vr[1][0] + vr[1][1]) / 2)

    def pen(self, key: str, width: float = 2, style=QtCore.Qt.PenStyle.SolidLine):
        roles: Mapping[str, Any] = self.theme  # a role's colour, or a colour given as itself
        return pg.mkPen(roles[key] if key in roles else key, width=width, style=style)
