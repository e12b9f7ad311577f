"""Acceptance over drafted tokens (cumulative) with its 95% band, the round as the unit (not per-token Wilson).

A tree run (``--tree-budget``; the data's ``tree``) is drawn by depth instead: the share of rounds whose accepted path
reached each depth d = 1..k with its 95% band (``tree_acceptance``). A tree drafts its budget of nodes spread over
depths, not k tokens in a row, so "acceptance over drafted tokens" would count drafts it never made."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore

from specscope.profiler.analysis.stats import LOW_SAMPLE_DRAFTED

from .common import BaseChart, nice_ceil

CHAIN_LABELS = (("drafted tokens", "count"), ("acceptance", "%"), "cumulative acceptance")
TREE_LABELS = (("depth", "accepted path length, tokens"), ("reached depth", "%"), "paths reaching depth d")


class AcceptanceChart(BaseChart):
    title = "Acceptance over drafted tokens"
    x_label, y_label = CHAIN_LABELS[0], CHAIN_LABELS[1]
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
        self.line = self.plot_item.plot([], [], pen=self.pen("accept"), name=CHAIN_LABELS[2])
        # legend entry for the band
        self.legend.addItem(pg.BarGraphItem(x=[0], height=[0], width=0, brush=band_brush, pen=pg.mkPen(None)), "95% interval (rounds as unit)")
        self.limit = pg.InfiniteLine(angle=90, pen=pg.mkPen(self.theme["muted"], style=QtCore.Qt.PenStyle.DotLine),
                                     label=f"{LOW_SAMPLE_DRAFTED}: below is noise", labelOpts={"position": 0.92, "color": self.theme["muted"]})
        self.plot_item.addItem(self.limit)
        self.limit.setVisible(False)
        self.plot_item.setYRange(0, 116, padding=0)
        self.plot_item.getAxis("left").setTicks([[(v, str(v)) for v in range(0, 101, 20)]])
        self._tree_mode = False

    def _labels(self, tree: bool) -> None:
        """The axes and the line's legend entry for a chain run's chart or a tree run's (by depth)."""
        (x, y, line) = TREE_LABELS if tree else CHAIN_LABELS
        if tree == self._tree_mode and self.x_label == x:
            return
        self._tree_mode = tree
        self.x_label, self.y_label = x, y
        for name, (text, units) in (("bottom", x), ("left", y)):
            self.plot_item.getAxis(name).setLabel(f"{text} ({units})", color=self.theme["fg"], **{"font-size": "10pt"})
        label = self.legend.getLabel(self.line)
        if label is not None:
            label.setText(line)
        self.line.setSymbol("o" if tree else None)
        self.line.setSymbolSize(6)
        self.line.setSymbolBrush(pg.mkBrush(self.theme["accept"]))
        self.line.setSymbolPen(None)
        # a tree's line falls from the left: its legend goes top right; a chain's stays top left
        self.legend.anchor((1, 0), (1, 0), offset=(-10, 5)) if tree else self.legend.anchor((0, 0), (0, 0), offset=self.legend_offset)
        if not tree:
            self.plot_item.getAxis("bottom").setTicks(None)

    def _draw(self, d: dict) -> None:
        tree = d.get("tree")
        self._labels(bool(tree))
        if tree:
            self._draw_tree(tree, d.get("regime") or "")
            return
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

    def _draw_tree(self, t: dict, regime: str) -> None:
        """The accepted path by depth: the share of full tree rounds whose path reached depth d, with its band."""
        x = np.asarray(t["depths"], float)
        self.line.setData(x, np.asarray(t["y"], float))
        self.lo.setData(x, np.asarray(t["lo"], float))
        self.hi.setData(x, np.asarray(t["hi"], float))
        self.limit.setVisible(False)  # a count of drafted tokens: no meaning by depth
        k = t["depths"][-1] if t["depths"] else t["k"]
        step = 1 if k <= 16 else 2
        self.plot_item.getAxis("bottom").setTicks([[(float(i), str(i)) for i in range(1, k + 1, step)]])
        self.set_range(x=(0.5, k + 0.5), y=(0.0, 116.0))
        self.show_empty(None)
        budget = f" of budget {t['budget']}" if t.get("budget") else ""
        self.plot_item.setTitle(f"Accepted path by depth — {regime}, {t['rounds']} tree rounds{budget}",
                                color=self.theme["fg"], size="11pt")
