"""Live throughput: plain and speculative tok/s over time, with the division's predicted tok/s."""

from __future__ import annotations

import numpy as np
from PySide6 import QtCore

from .common import BaseChart, nice_ceil


class ThroughputChart(BaseChart):
    title = "Throughput over time"
    x_label = ("generation time, each mode on its own clock", "s")
    y_label = ("throughput", "tok/s")
    legend_cols = 3
    empty_text = "waiting for the first tokens…"

    def build(self):
        self.plain = self.plot_item.plot([], [], pen=self.pen("plain"), name="plain decoding (rolling 8 steps)")
        self.spec = self.plot_item.plot([], [], pen=self.pen("spec"), name="speculative (rolling 8 rounds)")
        self.pred = self.plot_item.plot([], [], pen=self.pen("pred", 2, QtCore.Qt.PenStyle.DashLine),
                                        name="predicted speculative (plain × predicted speedup)")
        for curve in (self.plain, self.spec):  # long runs: draw only what is in view, at most a point per pixel
            curve.setClipToView(True)
            curve.setDownsampling(auto=True, method="peak")
        self.plot_item.setYRange(0, 1)

    def _draw(self, d: dict) -> None:
        self.plain.setData(np.asarray(d["plain_x"], float), np.asarray(d["plain_y"], float))
        self.spec.setData(np.asarray(d["spec_x"], float), np.asarray(d["spec_y"], float))
        xmax = max(d["plain_x"][-1] if d["plain_x"] else 0.0, d["spec_x"][-1] if d["spec_x"] else 0.0)
        if d.get("predicted_tok_s") and xmax > 0:
            self.pred.setData([0.0, xmax], [d["predicted_tok_s"]] * 2)
        else:
            self.pred.setData([], [])
        ys = list(d["plain_y"]) + list(d["spec_y"]) + ([d["predicted_tok_s"]] if d.get("predicted_tok_s") else [])
        self._top: tuple[float, float] | None = (xmax, max(ys)) if ys else None
        if ys:
            self._fit_range()
            self.show_empty(None)
        else:
            self.show_empty(self.empty_text)

    def _fit_range(self) -> None:
        # 0 .. a nice number: the axes move a few times a run, not at every redraw; room above for the legend
        # (three rows of it on a narrow chart)
        if self._top is None:
            return
        xmax, ymax = self._top
        self.set_range(x=(0.0, nice_ceil(xmax)), y=(0.0, nice_ceil(ymax * self.legend_headroom(1.6))))

    def legend_changed(self) -> None:
        if getattr(self, "_top", None) is not None:
            self._fit_range()
