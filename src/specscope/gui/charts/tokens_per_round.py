"""Histogram of tokens emitted per speculative round (1 … k+1)."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore

from .common import BaseChart, font, nice_ceil
from .records import ChartTheme


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
        self._tick_step = 0
        self.plot_item.vb.sigResized.connect(self._fit_ticks)

    def tick_step(self, width: float) -> int:
        """Label every bar while the labels fit apart (k + 1 = 16 bars on a narrow chart do not): every 2nd, 4th, …
        otherwise, starting at 1; every bar keeps a tick."""
        n = len(self._bins or [])
        if not n or width <= 0:
            return 1
        widest = self.fontMetrics().horizontalAdvance("00") * 9 / max(self.font().pointSizeF(), 1) + 8  # 9 pt tick labels
        step = 1
        while step < n and width * step / n < widest:
            step *= 2
        return step

    def _fit_ticks(self, *_) -> None:
        if not self._bins:
            return
        step = self.tick_step(self.plot_item.vb.width())
        if step == self._tick_step:
            return
        self._tick_step = step
        major = [(b, str(b)) for i, b in enumerate(self._bins) if i % step == 0]
        minor = [(b, "") for i, b in enumerate(self._bins) if i % step]
        self.plot_item.getAxis("bottom").setTicks([major, minor])

    def apply_theme(self, theme: ChartTheme) -> None:
        super().apply_theme(theme)
        for t in getattr(self, "labels", []):
            t.setColor(theme["fg"])

    def _draw(self, d: dict) -> None:
        bins, counts = d["bins"], d["counts"]
        self.bars.setOpts(x=bins, height=counts, width=0.7)
        top = max(counts) if counts else 0
        if bins != self._bins:  # k changed: new ticks, one count label per bar
            self._bins = list(bins)
            self._tick_step = 0
            self._fit_ticks()
            for t in self.labels:
                self.plot_item.removeItem(t)
            self.labels = []
            for _ in bins:
                t = pg.TextItem("", color=self.theme["fg"], anchor=(0.5, 1))
                t.setFont(font(9))
                self.plot_item.addItem(t)
                self.labels.append(t)
        # headroom above the tallest bar's count for the mean's label, which hangs from the top of the range (placed
        # just above the top count it sat on that count when the mean fell on the tallest bar)
        y_max = nice_ceil(max(top * 1.3, 1))
        self.set_range(x=(0.4, len(bins) + 0.6), y=(0.0, y_max))
        for t, b, n in zip(self.labels, bins, counts):
            if t.toPlainText() != str(n):
                t.setText(str(n))
            t.setPos(b, n)
        if d.get("mean"):
            self.mean.setPos(d["mean"])
            self.mean.setVisible(True)
            self.mean_text.setText(f"mean E = {d['mean']:.2f}")
            self.mean_text.setPos(d["mean"], y_max)
            self.mean_text.setVisible(True)
        else:
            self.mean.setVisible(False)
            self.mean_text.setVisible(False)
        self.show_empty(None if top else self.empty_text)
