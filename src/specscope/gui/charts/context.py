"""One figure over context (x: context tokens): lines with markers, an optional 95% band per series, an optional
stacked-area mode (the block split), and a reference line (break-even 1×)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from .common import BaseChart
from .records import ChartTheme


def _ticks(xs: list[int]) -> list[tuple[float, str]]:
    return [(float(i), f"{x // 1024}k" if x and x % 1024 == 0 else str(x)) for i, x in enumerate(xs)]


class ContextChart(BaseChart):
    """``set_data({"contexts": [...], "series": [{"name", "y", "lo", "hi"}], "stacked": bool, "ref": y})``. The x axis
    is the sweep's points in order (evenly spaced, labelled with their sizes: 0, 1k, 4k, 16k)."""

    title = ""
    x_label = ("context", "tokens")
    y_label = ("", "")
    legend_cols = 1
    legend_offset = (-10, 5)
    empty_text = "no sweep yet: press “Sweep context”"

    def __init__(self, theme: ChartTheme, title: str, y_label: tuple[str, str], parent=None):
        self.title, self.y_label = title, y_label
        super().__init__(theme, parent)

    def _draw(self, d: dict | None) -> None:
        left = self.plot_item.getAxis("left")
        left.setTicks(None)
        d = d or {}
        xs = d.get("contexts") or []
        series = [s for s in d.get("series", []) if any(v is not None for v in s["y"])]
        if not self._redraw(d if xs and series else None):
            return
        colors = self.theme["cats"]
        idx = list(range(len(xs)))
        stacked = bool(d.get("stacked"))
        # the legend in rows of two or three names: one name a row stood as tall as the chart's top third and covered
        # the largest context's area and the verify curve
        names = len(series) + (d.get("ref") is not None)
        self.legend.setColumnCount(3 if stacked or names == 3 and not any(len(s["name"]) > 16 for s in series) else 2)
        ymax, ymin = 0.0, 0.0
        if d.get("ref") is not None:
            self._add(pg.PlotDataItem([-0.5, len(xs) - 0.5], [d["ref"], d["ref"]], pen=self.pen("breakeven", 1.5)),
                      d.get("ref_name", "break-even"))
            ymax = d["ref"]
        base = [0.0] * len(xs)
        prev = None
        for i, s in enumerate(series):
            c = QtGui.QColor(colors[i % len(colors)])
            y = [v if v is not None else 0.0 for v in s["y"]]
            if d.get("stacked"):
                stack_top = [b + v for b, v in zip(base, y)]
                lo_item = prev or self._add(pg.PlotDataItem(idx, base, pen=pg.mkPen(c, width=0)))
                hi_item = self._add(pg.PlotDataItem(idx, stack_top, pen=pg.mkPen(c, width=1.5)))
                fill = QtGui.QColor(c)
                fill.setAlpha(150)
                self._add(pg.FillBetweenItem(lo_item, hi_item, brush=pg.mkBrush(fill)))
                self.legend.addItem(hi_item, s["name"])
                base, prev = stack_top, hi_item
                ymax = max([ymax] + stack_top)
                continue
            pts = [(x, v) for x, v in zip(idx, s["y"]) if v is not None]
            ymin = min([ymin] + [p[1] for p in pts])
            note = s.get("negative_note")
            for x, v in pts:  # a value below zero is drawn where it is (the axis takes it in), and said what it is
                if v < 0 and note:
                    label = pg.TextItem(note, color=c, anchor=(0.0, 0.5))
                    label.setPos(x + 0.08, v)
                    self._add(label)
            if s.get("lo") and s.get("hi"):  # the 95% interval of each point, as error bars
                bars = [(x, v, lo, hi) for x, v, lo, hi in zip(idx, s["y"], s["lo"], s["hi"])
                        if v is not None and lo is not None and hi is not None]
                if bars:
                    self._add(pg.ErrorBarItem(x=np.array([b[0] for b in bars], float), y=np.array([b[1] for b in bars], float),
                                              top=np.array([b[3] - b[1] for b in bars], float),
                                              bottom=np.array([b[1] - b[2] for b in bars], float), beam=0.12,
                                              pen=pg.mkPen(c, width=1.5)))
                    ymax = max([ymax] + [b[3] for b in bars])
                    ymin = min([ymin] + [b[2] for b in bars])
            self._add(pg.PlotDataItem([p[0] for p in pts], [p[1] for p in pts], pen=pg.mkPen(c, width=2.5),
                                      symbol=s.get("symbol", "o"), symbolSize=8, symbolBrush=pg.mkBrush(c), symbolPen=None), s["name"])
            ymax = max([ymax] + [p[1] for p in pts])
        self.plot_item.getAxis("bottom").setTicks([_ticks(xs)])
        if stacked:  # shares: ticks to 100%, headroom above for the legend's row (no "150%" tick)
            left.setTicks([[(float(v), str(v)) for v in range(0, 101, 25)]])
            self.set_range((-0.5, len(xs) - 0.5), (0.0, max(ymax, 100.0) * 1.85))
            return
        top = (ymax or 1.0) * 1.75  # room for the legend
        if ymin < 0:  # a negative value (noise in a difference of times) stays on the chart, under a zero line
            self._add(pg.PlotDataItem([-0.5, len(xs) - 0.5], [0.0, 0.0],
                                      pen=pg.mkPen(self.theme["muted"], width=1, style=QtCore.Qt.PenStyle.DashLine)))
            top = ymax + 1.0 * (ymax - ymin)
            ymin -= 0.08 * (ymax - ymin)
        self.set_range((-0.5, len(xs) - 0.5), (ymin, top))
