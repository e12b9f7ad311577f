"""The clock probe over the run: each reading's speed as a share of the fastest one, the band of the
probe's own noise, the runs' GPU clock where the machine's sensors recorded it, and the drift warning."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from .common import BaseChart, font, nice_ceil
from .records import ChartTheme

SHORT_TITLE = "Clock probe"
WAITING = "the clock probe is read before and after every repeat…"
TOP = 180.0  # room above 100% for the legend, so it never covers a reading


class ProbeChart(BaseChart):
    title = "Clock probe: device speed over the run"  # short: a title wider than the chart widens the plot past its edge
    x_label = ("run time", "s")
    y_label = ("speed", "% of best")
    legend_cols = 3
    empty_text = WAITING

    def build(self):
        self.band = pg.LinearRegionItem(values=(0, 100), orientation="horizontal", movable=False,
                                        brush=pg.mkBrush(*self.theme["band"]), pen=pg.mkPen(None))
        self.band.setZValue(-5)
        self.band.hide()
        self.plot_item.addItem(self.band)
        self.probe = self.plot_item.plot([], [], pen=self.pen("plain"), symbol="o", symbolSize=5,
                                         symbolBrush=self.theme["plain"], symbolPen=None, name="probe speed")
        self.cool = self.plot_item.plot([], [], pen=None, symbol="x", symbolSize=6, symbolPen=self.pen("muted", 1),
                                        name="while cooling down")
        self.gpu = self.plot_item.plot([], [], pen=self.pen("accept", 1.5, QtCore.Qt.PenStyle.DashLine), symbol="t",
                                       symbolSize=6, symbolBrush=self.theme["accept"], symbolPen=None,
                                       name="GPU clock (% of highest)")
        self._gpu_in_legend = True
        self._legend_gpu(False)  # listed only when the machine's sensors recorded a GPU clock
        self.plot_item.setYRange(0, TOP)

    def title_for(self, width: float, drift: bool) -> str:
        """The title, shortened to what fits ``width`` px (a title wider than the chart widens the plot past its
        right edge, cutting off the latest readings)."""
        tail = " — DRIFT" if drift else ""
        fm = QtGui.QFontMetrics(font(11))
        room = width - self.plot_item.getAxis("left").width() - 24  # the title sits over the plot, right of the axis
        for title in (self.title, SHORT_TITLE):
            if fm.horizontalAdvance(title + tail) * 1.05 <= room:  # rich text lays it out a little wider
                return title + tail
        return (SHORT_TITLE + tail) if not drift else "DRIFT"

    def _fit_title(self, *_) -> None:
        drift = getattr(self, "_drift", False)
        title = self.title_for(self.width(), drift)
        if title != getattr(self, "_shown_title", None):
            self._shown_title: str | None = title
            self.plot_item.setTitle(title, color=self.theme["spec"] if drift else self.theme["fg"], size="11pt")
            pg.GraphicsView.resizeEvent(self, None)  # lay the plot out again: a shorter title lets it shrink back

    def resizeEvent(self, ev) -> None:  # noqa: N802 (Qt naming)
        super().resizeEvent(ev)
        if hasattr(self, "band") and not getattr(self, "closed", False):  # built, and not closing (its scene is gone)
            self._fit_title()

    def apply_theme(self, theme: ChartTheme) -> None:
        super().apply_theme(theme)
        self._shown_title = None  # the base class wrote the plain title: the next fit writes the right one
        if hasattr(self, "band"):
            self._fit_title()

    def _legend_gpu(self, show: bool) -> None:
        if show and not self._gpu_in_legend:
            self.legend.addItem(self.gpu, "GPU clock (% of highest)")
        elif not show and self._gpu_in_legend:
            self.legend.removeItem(self.gpu)
        self._gpu_in_legend = show

    def _draw(self, d: dict) -> None:
        self.probe.setData(np.asarray(d["x"], float), np.asarray(d["y"], float))
        self.cool.setData(np.asarray(d["cool_x"], float), np.asarray(d["cool_y"], float))
        self.gpu.setData(np.asarray(d["gpu_x"], float), np.asarray(d["gpu_y"], float))
        self._legend_gpu(bool(d["gpu_x"]))
        noise = d.get("noise")
        if noise and d["y"]:
            self.band.setRegion((100.0 / (1.0 + noise), 100.0))  # within its own noise of the best reading
            self.band.show()
        else:
            self.band.hide()
        self._drift = bool(d.get("drift"))
        self._fit_title()
        xs = list(d["x"]) + list(d["cool_x"]) + list(d["gpu_x"])
        ys = list(d["y"]) + list(d["cool_y"]) + list(d["gpu_y"])
        if xs:
            low = min(ys)
            floor = 0.0 if low < 50 else 10.0 * int(low // 10 - 1)  # room to see a few percent of drift
            self.set_range(x=(0.0, nice_ceil(max(xs) * 1.02)), y=(floor, TOP))
            self.show_empty(None)
        else:
            self.show_empty(self.empty_text)
