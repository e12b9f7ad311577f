"""Histogram of tokens emitted per speculative round (1 … k+1)."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore

from .common import BaseChart, font, nice_ceil


class TokensPerRoundChart(BaseChart):
    title = "Tokens per round"
    x_label = ("tokens emitted per round", "tokens")
    y_label = ("rounds", "count")
    empty_text = "no speculative rounds yet"

    def build(self) -> None:
        self.bars = pg.BarGraphItem(x=[], height=[], width=0.7, brush=self.theme["bar"], pen=pg.mkPen(None))
        self.plot_item.addItem(self.bars)
        self.legend.setVisible(False)  # one series: the axis labels say it all
        self.mean = pg.InfiniteLine(angle=90, pen=pg.mkPen(self.theme["pred"], width=2, style=QtCore.Qt.PenStyle.DashLine))
        self.plot_item.addItem(self.mean)
        self.mean_text = pg.TextItem("", color=self.theme["pred"], anchor=(0, 0))
        self.mean_text.setFont(font(9))
        self.plot_item.addItem(self.mean_text)
        self.mean.setVisible(False)
        self.labels: list[pg.TextItem] = []
        self._bins: list | None = None
        self.plot_item.getAxis("bottom").setTickSpacing(1, 1)

    def apply_theme(self, theme: dict) -> None:
        super().apply_theme(theme)
        for t in getattr(self, "labels", []):
            t.setColor(theme["fg"])

    def _draw(self, d: dict) -> None:
        bins, counts = d["bins"], d["counts"]
        self.bars.setOpts(x=bins, height=counts, width=0.7)
        top = max(counts) if counts else 0
        if bins != self._bins:  # k changed: new ticks, one count label per bar
            self._bins = list(bins)
            self.plot_item.getAxis("bottom").setTicks([[(b, str(b)) for b in bins]])
            for t in self.labels:
                self.plot_item.removeItem(t)
            self.labels = []
            for _ in bins:
                t = pg.TextItem("", color=self.theme["fg"], anchor=(0.5, 1))
                t.setFont(font(9))
                self.plot_item.addItem(t)
                self.labels.append(t)
        self.set_range(x=(0.4, len(bins) + 0.6), y=(0.0, nice_ceil(max(top * 1.2, 1))))
        for t, b, n in zip(self.labels, bins, counts):
            if t.toPlainText() != str(n):
                t.setText(str(n))
            t.setPos(b, n)
        if d.get("mean"):
            self.mean.setPos(d["mean"])
            self.mean.setVisible(True)
            self.mean_text.setText(f"mean E = {d['mean']:.2f}")
            self.mean_text.setPos(d["mean"], max(top * 1.15, 1))
            self.mean_text.setVisible(True)
        else:
            self.mean.setVisible(False)
            self.mean_text.setVisible(False)
        self.show_empty(None if top else self.empty_text)
