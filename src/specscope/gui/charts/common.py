"""Shared look for the charts: colours per theme, axis styling, an empty-state message."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore, QtGui

LIGHT = {
    "name": "light", "bg": "#ffffff", "fg": "#1f2328", "grid": 60, "muted": "#6e7781",
    "plain": "#0969da", "spec": "#d1242f", "pred": "#8250df", "band": (9, 105, 218, 50),
    "accept": "#1a7f37", "bar": "#0969da", "whole": "#57606a", "breakeven": "#9a6700",
    "cats": ["#0969da", "#8250df", "#bf3989", "#1a7f37", "#9a6700", "#6e7781"],
}
DARK = {
    "name": "dark", "bg": "#161b22", "fg": "#e6edf3", "grid": 80, "muted": "#8d96a0",
    "plain": "#58a6ff", "spec": "#ff7b72", "pred": "#d2a8ff", "band": (88, 166, 255, 60),
    "accept": "#3fb950", "bar": "#58a6ff", "whole": "#8d96a0", "breakeven": "#d29922",
    "cats": ["#58a6ff", "#d2a8ff", "#f778ba", "#3fb950", "#d29922", "#8d96a0"],
}

pg.setConfigOptions(antialias=True)


def font(pt: float = 10, bold: bool = False) -> QtGui.QFont:
    f = QtGui.QFont()
    f.setPointSizeF(pt)
    f.setBold(bold)
    return f


class BaseChart(pg.PlotWidget):
    """A PlotWidget with a title, labelled axes (with units), a legend and an empty-state text."""

    title = ""
    x_label = ("", "")
    y_label = ("", "")
    legend_cols = 1
    legend_offset = (10, 5)

    def __init__(self, theme: dict | None = None, parent=None):
        super().__init__(parent=parent)
        self.theme = theme or LIGHT
        self.setMinimumSize(260, 180)
        self.plot_item = self.getPlotItem()
        self._empty = pg.TextItem("", anchor=(0.5, 0.5))
        self._empty.setFont(font(11))
        self.plot_item.vb.addItem(self._empty, ignoreBounds=True)
        self.legend = self.plot_item.addLegend(offset=self.legend_offset, labelTextSize="9pt", colCount=self.legend_cols)
        self.apply_theme(self.theme)
        self.build()

    # subclasses fill these
    def build(self) -> None:
        pass

    def set_data(self, data) -> None:
        pass

    def apply_theme(self, theme: dict) -> None:
        self.theme = theme
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
        pi.showGrid(x=True, y=True, alpha=theme["grid"] / 255)
        if self.legend is not None:
            self.legend.setLabelTextColor(theme["fg"])
            self.legend.setBrush(pg.mkBrush(QtGui.QColor(theme["bg"]).lighter(100)))
            self.legend.setPen(pg.mkPen(theme["muted"]))
        self._empty.setColor(theme["muted"])

    def show_empty(self, message: str | None) -> None:
        """Show a centred message while there is nothing to draw (hidden when message is None)."""
        self._empty.setText(message or "")
        self._empty.setVisible(bool(message))
        if message:
            vr = self.plot_item.vb.viewRange()
            self._empty.setPos((vr[0][0] + vr[0][1]) / 2, (vr[1][0] + vr[1][1]) / 2)

    def pen(self, key: str, width: float = 2, style=QtCore.Qt.PenStyle.SolidLine):
        return pg.mkPen(self.theme[key] if key in self.theme else key, width=width, style=style)
