"""The Verify cost page's tree charts: the cost of a verify by forward width for chains and for trees of each shape
(in plain decode steps, at one context, with the knee's limit), and per block at one width, chain beside trees.

The charts take ``tree_cost_data``'s plain dicts (from a roofline's cost surface), never raw events.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore

from .common import BaseChart

STYLES = {"chain": (QtCore.Qt.PenStyle.SolidLine, "o"), "best-first": (QtCore.Qt.PenStyle.DashLine, "s"),
          "wide": (QtCore.Qt.PenStyle.DotLine, "t"), "deep": (QtCore.Qt.PenStyle.DashDotLine, "d")}
NO_SURFACE = "no tree surface measured (specscope roofline --tree, or tick “with trees”)"


class TreeCostChart(BaseChart):
    """Cost in decode steps against forward width (a chain's n positions; a tree's budget + 1 rows)."""

    title = "Chains and trees: cost by width"
    x_label = ("rows verified in one forward (chain n; tree budget + 1)", "")
    y_label = ("cost", "plain decode steps")
    legend_cols = 2
    empty_text = NO_SURFACE

    def _draw(self, d: dict | None) -> None:
        if not self._redraw(d, "series"):
            self.plot_item.setTitle(self.title, color=self.theme["fg"], size="11pt")
            return
        cats = self.theme["cats"]
        top = [d["limit"]]
        widest = max(max(s["width"]) for s in d["series"])
        self._add(pg.PlotDataItem([1, widest], [1, widest], pen=self.pen("muted", 1.2, QtCore.Qt.PenStyle.DashLine)),
                  "every row re-reads (n × decode)")
        self._add(pg.PlotDataItem([1, widest], [d["limit"], d["limit"]],
                                      pen=self.pen("breakeven", 1.5, QtCore.Qt.PenStyle.DotLine)),
                  f"≤ {d['limit']:g} steps: about one weight read")
        for i, s in enumerate(d["series"]):
            style, symbol = STYLES.get(s["family"], (QtCore.Qt.PenStyle.SolidLine, "o"))
            color = cats[i % len(cats)]
            pen = pg.mkPen(color, width=2.5 if s["family"] == "chain" else 2, style=style)
            self._add(pg.PlotDataItem(s["width"], s["steps"], pen=pen, symbol=symbol, symbolSize=7,
                                          symbolBrush=pg.mkBrush(color), symbolPen=None),
                      s["family"] if s["family"] == "chain" else f"tree, {s['family']}")
            top += s["steps"]
        peak = max(top) * 1.05
        if d.get("knee_width"):
            x = d["knee_width"] + 0.5
            self._add(pg.PlotDataItem([x, x], [0.0, peak], pen=self.pen("accept", 1.5, QtCore.Qt.PenStyle.DashLine)),
                      f"chain knee (widest ≤ {d['limit']:g} steps)")
        ymax = max(top) * self.legend_headroom(1.6)
        self.set_range((0.5, widest + 0.5), (0.0, ymax))
        self.plot_item.setTitle(f"{d['context']:,} tokens of context (1 step = {d['t_decode_ms']:.1f} ms)",
                                color=self.theme["fg"], size="11pt")


class TreeBlocksChart(BaseChart):
    """Per block at one width: the chain's barrier-timed ms beside each tree shape's (the legend gives the distinct
    experts per MoE layer each forward read)."""

    title = "Per block at one width: chain vs trees"
    y_label = ("time per forward", "ms")
    legend_cols = 2
    empty_text = NO_SURFACE

    def build(self):
        self.plot_item.getAxis("bottom").setHeight(40)

    def _draw(self, d: dict | None) -> None:
        ax = self.plot_item.getAxis("bottom")
        if not self._redraw(d, "blocks"):
            ax.setTicks([[]])
            self.plot_item.setTitle(self.title, color=self.theme["fg"], size="11pt")
            return
        fams, blocks = d["families"], d["blocks"]
        k = len(fams)
        bw = 0.8 / k
        cats = self.theme["cats"]
        top = max([m for b in blocks for m in b["ms"] if m is not None] + [1e-6]) * self.legend_headroom(1.9)
        for j, fam in enumerate(fams):
            xs = np.arange(len(blocks), dtype=float) - 0.4 + bw * (j + 0.5)
            hs = [b["ms"][j] or 0.0 for b in blocks]
            name = "chain" if fam == "chain" else f"{fam} (depth {d['depths'][j]})"
            if d["experts"][j] is not None:
                name += f": {d['experts'][j]:.1f} experts/layer"
            self._add(pg.BarGraphItem(x=xs, height=hs, width=bw * 0.95, brush=cats[j % len(cats)],
                                      pen=pg.mkPen(self.theme["bg"])), name)
        ax.setTicks([[(float(i), b["label"]) for i, b in enumerate(blocks)]])
        self.set_range((-0.6, len(blocks) - 0.4), (0.0, top))
        self.plot_item.setTitle(f"per block at width {d['width']}, {d['context']:,} tokens",
                                color=self.theme["fg"], size="11pt")
