"""Where verify time goes: stacked per-category bars for decode (1 position) and verify (k+1),
each beside the whole-graph time (the two rulers), with verify/decode ratios printed."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore

from specscope.profiler.intervals import time_text

from .common import BaseChart, font


class BreakdownChart(BaseChart):
    title = "Where the time goes: decode vs verify"
    x_label = ("", "")
    y_label = ("time per forward pass", "ms")
    legend_cols = 2

    def build(self):
        self.items = []
        self.plot_item.getAxis("bottom").setHeight(36)
        self.show_empty("no breakdown measured yet")

    def _clear(self):
        for it in self.items:
            self.plot_item.removeItem(it)
        self.items = []
        self.legend.clear()

    def _text(self, s, x, y, anchor=(0.5, 0.5), color=None, pt=9, bold=False):
        t = pg.TextItem(s, color=color or self.theme["fg"], anchor=anchor)
        t.setFont(font(pt, bold))
        t.setPos(x, y)
        self.plot_item.addItem(t)
        self.items.append(t)

    def _draw(self, d: dict | None) -> None:
        self._clear()
        if not d:
            self.plot_item.getAxis("bottom").setTicks([[]])
            self.show_empty("no breakdown measured yet")
            return
        self.show_empty(None)
        cats, colors = d["categories"], self.theme["cats"]
        groups = [("decode", 0.0), ("verify", 2.8)]
        ticks = []
        # data units per pixel once the y range is set below (0 .. 1.5 × the tallest bar): keeps ratio labels apart
        tallest = max(max(d[side]["block_sum_ms"] or 0.0, d[side]["whole_ms"] or 0.0) for side, _ in groups)
        per_px = (tallest * 1.5 or 1.0) / max(self.plot_item.vb.height(), 150.0)
        label_y = -1e9
        top = 0.0
        for gi, (side, x0) in enumerate(groups):
            sd = d[side]
            y0 = 0.0
            for i, (c, v) in enumerate(zip(cats, sd["blocks"])):
                v = max(v or 0.0, 0.0)
                bar = pg.BarGraphItem(x=[x0], y0=[y0], height=[v], width=0.8, brush=colors[i % len(colors)],
                                      pen=pg.mkPen(self.theme["bg"], width=1))
                self.plot_item.addItem(bar)
                self.items.append(bar)
                if gi == 0:
                    self.legend.addItem(bar, d["labels"][i])
                if side == "verify" and d["ratios"][i] is not None:
                    label_y = max(y0 + v / 2, label_y + 15 * per_px)  # thin segments: labels stack, never overlap
                    self._text(f"×{d['ratios'][i]:.2f}", x0 - 0.42, label_y, anchor=(1, 0.5), pt=9, bold=True)
                y0 += v
            whole = sd["whole_ms"] or 0.0
            wb = pg.BarGraphItem(x=[x0 + 1.0], y0=[0], height=[whole], width=0.8, brush=self.theme["whole"],
                                 pen=pg.mkPen(self.theme["bg"], width=1))
            self.plot_item.addItem(wb)
            self.items.append(wb)
            if gi == 0:
                self.legend.addItem(wb, "whole graph (no barriers)")
            gap = sd["inter_block_ms"]
            self._text(f"{sd['block_sum_ms']:.1f} ms", x0, y0, anchor=(0.5, 1))
            self._text(f"{whole:.1f} ms", x0 + 1.0, whole, anchor=(0.5, 1))
            if gap is not None:  # never a negative time: an overhead whose spread reaches zero is below noise
                gap_text = time_text(gap, (sd.get("spread") or {}).get("inter_block_ms"), ".1f", " ms")
                self._text(f"inter-block overhead {gap_text}", x0 + 0.5, max(y0, whole), anchor=(0.5, 2.1),
                           color=self.theme["muted"])
            if side == "verify" and d.get("ratio_whole"):
                self._text(f"×{d['ratio_whole']:.2f}", x0 + 1.0, whole / 2, anchor=(0.5, 0.5), color="#ffffff", bold=True)
            pos = sd["positions"]
            name = f"{side} ({pos} pos.)"
            ticks += [(x0, f"{name}\nsum of blocks"), (x0 + 1.0, f"{name}\nwhole graph")]
            top = max(top, y0, whole)
        self.plot_item.getAxis("bottom").setTicks([ticks])
        self.plot_item.setXRange(-0.6, 4.4, padding=0)
        self.plot_item.setYRange(0, top * 1.5 if top else 1, padding=0)
