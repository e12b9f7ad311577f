"""Which k: predicted speedup over k per drafter with its bootstrap band (2.5–97.5 percentiles), the confirmation runs' measured
points with their 95% intervals, break-even at 1×, and the recommended k."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from .common import BaseChart


class TuneChart(BaseChart):
    title = "Predicted and measured speedup over k (and tree budget B)"
    x_label = ("drafted tokens per round (a chain's k, a tree's budget B)", "")
    y_label = ("speedup over plain decoding", "×")
    legend_cols = 2
    legend_offset = (-10, 5)
    empty_text = "no tuning run yet"

    def _draw(self, d: dict | None) -> None:
        if not self._redraw(d, "drafters"):
            return
        colors = self.theme["cats"]
        kmax, ymax = 1, 1.0
        self._add(pg.PlotDataItem([0.5, 1e3], [1.0, 1.0], pen=self.pen("breakeven", 1.5, QtCore.Qt.PenStyle.DotLine)),
                  "break-even (1×)")
        for i, dr in enumerate(d["drafters"]):
            c = QtGui.QColor(colors[i % len(colors)])
            ks = dr["k"]
            kmax = max([kmax] + ks)
            lo, hi = dr["lo"], dr["hi"]
            if all(v is not None for v in lo + hi) and len(ks) > 1:
                band_c = QtGui.QColor(c)
                band_c.setAlpha(45)
                edge = pg.mkPen(band_c, width=1)  # FillBetweenItem follows the curves' paths: they need a pen
                top = pg.PlotDataItem(ks, hi, pen=edge)
                bot = pg.PlotDataItem(ks, lo, pen=edge)
                self._add(top)
                self._add(bot)
                self._add(pg.FillBetweenItem(top, bot, brush=pg.mkBrush(band_c)))
                ymax = max([ymax] + hi)
            self._add(pg.PlotDataItem(ks, dr["predicted"], pen=pg.mkPen(c, width=2.5), symbol="o", symbolSize=6,
                                      symbolBrush=pg.mkBrush(c), symbolPen=None), f"{dr['name']}: predicted (bootstrap 2.5–97.5%)")
            mk = [(k, m) for k, m in zip(ks, dr["measured"]) if m is not None]
            if mk:
                self._add(pg.PlotDataItem([k for k, _ in mk], [m for _, m in mk], pen=None, symbol="s", symbolSize=11,
                                          symbolBrush=pg.mkBrush(self.theme["bg"]), symbolPen=pg.mkPen(c, width=2.5)),
                          f"{dr['name']}: measured (95% interval)")
                ymax = max([ymax] + [m for _, m in mk])
                ci = [(k, m, iv) for k, m, iv in zip(ks, dr["measured"], dr.get("measured_ci") or [None] * len(ks))
                      if m is not None and iv]
                if ci:  # the confirmation's 95% interval for its median, as whiskers on the measured square
                    self._add(pg.ErrorBarItem(x=np.array([k for k, _, _ in ci], float), y=np.array([m for _, m, _ in ci], float),
                                              top=np.array([iv[1] - m for _, m, iv in ci], float),
                                              bottom=np.array([m - iv[0] for _, m, iv in ci], float), beam=0.08,
                                              pen=pg.mkPen(c, width=1.5)))
                    ymax = max([ymax] + [iv[1] for _, _, iv in ci])
            ymax = max([ymax] + [p for p in dr["predicted"] if p is not None])
        rec = d.get("recommended")
        if rec and rec.get("k") is not None and rec.get("speedup") is not None:
            self._add(pg.PlotDataItem([rec["k"]], [rec["speedup"]], pen=None, symbol="star", symbolSize=20,
                                      symbolBrush=pg.mkBrush(self.theme["accept"]), symbolPen=pg.mkPen(self.theme["fg"])),
                      "recommended")
            # at the first or last k a centred label runs past the plot's edge (clipped in the report's narrower
            # figure): there it starts or ends at the star
            ax = 0.0 if rec["k"] <= 1 else 1.0 if rec["k"] >= kmax else 0.5
            self._text(rec.get("label", ""), rec["k"], rec["speedup"], anchor=(ax, 1.3), bold=True)
        self.plot_item.getAxis("bottom").setTicks([[(float(k), str(k)) for k in range(1, kmax + 1)]])
        self.set_range((0.5, kmax + 0.5), (0.0, ymax * 1.45))  # headroom for the legend
