"""Acceptance over drafted tokens (cumulative) with its 95% band, the round as the unit (not per-token Wilson)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore

from specscope.profiler.analysis.stats import LOW_SAMPLE_DRAFTED

from .common import BaseChart, nice_ceil


class AcceptanceChart(BaseChart):
    title = "Acceptance over drafted tokens"
    x_label = ("drafted tokens", "count")
    y_label = ("acceptance", "%")
    legend_cols = 2
    empty_text = "no speculative rounds yet"

    def build(self):
        band_brush = pg.mkBrush(*self.theme["band"])
        self.lo = pg.PlotDataItem([], [], pen=pg.mkPen(None))
        self.hi = pg.PlotDataItem([], [], pen=pg.mkPen(None))
        self.band = pg.FillBetweenItem(self.lo, self.hi, brush=band_brush)
        self.plot_item.addItem(self.lo)
        self.plot_item.addItem(self.hi)
        self.plot_item.addItem(self.band)
        self.line = self.plot_item.plot([], [], pen=self.pen("accept"), name="cumulative acceptance")
        # legend entry for the band
        self.legend.addItem(pg.BarGraphItem(x=[0], height=[0], width=0, brush=band_brush, pen=pg.mkPen(None)), "95% interval (rounds as unit)")
        self.limit = pg.InfiniteLine(angle=90, pen=pg.mkPen(self.theme["muted"], style=QtCore.Qt.PenStyle.DotLine),
                                     label=f"{LOW_SAMPLE_DRAFTED}: below is noise", labelOpts={"position": 0.92, "color": self.theme["muted"]})
        self.plot_item.addItem(self.limit)
        self.limit.setVisible(False)
        self.plot_item.setYRange(0, 116, padding=0)
        self.plot_item.getAxis("left").setTicks([[(v, str(v)) for v in range(0, 101, 20)]])

    def _draw(self, d: dict) -> None:
        x = np.asarray(d["x"], float)
        self.line.setData(x, np.asarray(d["y"], float))
        self.lo.setData(x, np.asarray(d["lo"], float))
        self.hi.setData(x, np.asarray(d["hi"], float))
        self.set_range(y=(0.0, 116.0))
        if len(x):
            lim = d.get("low_sample_limit") or LOW_SAMPLE_DRAFTED
            self.limit.setPos(lim)
            self.limit.setVisible(bool(x[-1] >= lim * 0.5))
            self.set_range(x=(0.0, nice_ceil(max(x[-1], 1))))
            self.show_empty(None)
            regime = d.get("regime") or ""
            self.plot_item.setTitle(f"Acceptance over drafted tokens — {regime}, {int(x[-1])} drafted",
                                    color=self.theme["fg"], size="11pt")
        else:
            self.limit.setVisible(False)
            self.show_empty(self.empty_text)
