"""What verify costs: the whole-graph curve over n positions beside the two bounds, per-block
floors with their efficiency, and the MoE expert union (distinct experts vs n × top-k).

The charts take the plain dicts of ``specscope.profiler.verify_cost_data`` (computed from a session's
or a live ``roofline`` measurement), never raw events.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore

from .common import BaseChart

_E = np.zeros(0)


class VerifyCurveChart(BaseChart):
    title = "Verify cost over positions"
    x_label = ("positions verified in one forward (n)", "")
    y_label = ("cost", "plain decode steps")
    legend_offset = (10, 5)
    empty_text = "no verify cost measured yet"

    def build(self):
        dash, dot = QtCore.Qt.PenStyle.DashLine, QtCore.Qt.PenStyle.DotLine
        self.naive = self.plot_item.plot([], [], pen=self.pen("muted", 1.5, dash), name="every position re-reads (n × decode)")
        self.ideal = self.plot_item.plot([], [], pen=self.pen("pred", 2, dash),
                                         name="each weight read once, at decode's efficiency")
        self.floor = self.plot_item.plot([], [], pen=self.pen("accept", 2, dot), name="roofline floor (bytes ÷ bandwidth, FLOPs ÷ peak)")
        self.measured = self.plot_item.plot([], [], pen=self.pen("spec", 2.5), symbol="o", symbolSize=7,
                                            symbolBrush=pg.mkBrush(self.theme["spec"]), symbolPen=None,
                                            name="measured (whole graph, median)")
        self.err = pg.ErrorBarItem(x=_E, y=_E, top=_E, bottom=_E, beam=0.15, pen=pg.mkPen(self.theme["fg"], width=1))
        self.plot_item.addItem(self.err)

    def _draw(self, d: dict | None) -> None:
        if not d or not d.get("n"):
            for it in (self.naive, self.floor, self.ideal, self.measured):
                it.setData([], [])
            self.err.setData(x=_E, y=_E, top=_E, bottom=_E)
            self.plot_item.setTitle(self.title, color=self.theme["fg"], size="11pt")
            self.show_empty(self.empty_text)
            return
        self.show_empty(None)
        n = d["n"]
        self.naive.setData(n, [float(x) for x in n])
        self.measured.setData(n, d["measured"])
        fl = [(x, y) for x, y in zip(n, d["floor"]) if y is not None]
        self.floor.setData([x for x, _ in fl], [y for _, y in fl])
        idl = [(x, y) for x, y in zip(n, d.get("ideal") or []) if y is not None]
        self.ideal.setData([x for x, _ in idl], [y for _, y in idl])
        lo, hi = d.get("measured_lo"), d.get("measured_hi")
        if lo and hi and all(v is not None for v in lo + hi):
            ys = np.array(d["measured"], dtype=float)
            self.err.setData(x=np.array(n, dtype=float), y=ys, top=np.array(hi) - ys, bottom=ys - np.array(lo))
        else:
            self.err.setData(x=_E, y=_E, top=_E, bottom=_E)
        top = max([max(n)] + list(d["measured"]) + list(hi or [])) * 1.1
        self.set_range((0.5, max(n) + 0.5), (0.0, top))
        self.plot_item.setTitle(f"{self.title} ({d['note']})", color=self.theme["fg"], size="11pt")


class BlockFloorChart(BaseChart):
    """At one n: measured time per block beside its roofline floor, with the efficiency printed."""

    title = "Per block: measured vs floor"
    legend_cols = 2
    y_label = ("time per forward", "ms")
    empty_text = "no verify cost measured yet"

    def build(self):
        self.plot_item.getAxis("bottom").setHeight(40)

    def _draw(self, d: dict | None) -> None:
        ax = self.plot_item.getAxis("bottom")
        if not self._redraw(d, "blocks"):
            ax.setTicks([[]])
            return
        cats = d["blocks"]
        xs = np.arange(len(cats), dtype=float)
        meas = [max(c["ms"] or 0.0, 0.0) for c in cats]
        floor = [max(c["floor_ms"] or 0.0, 0.0) for c in cats]
        mb = pg.BarGraphItem(x=xs - 0.2, height=meas, width=0.38, brush=self.theme["bar"], pen=pg.mkPen(self.theme["bg"]))
        fb = pg.BarGraphItem(x=xs + 0.2, height=floor, width=0.38, brush=self.theme["accept"], pen=pg.mkPen(self.theme["bg"]))
        for it, name in ((mb, "measured (barrier ruler)"), (fb, "roofline floor")):
            self._add(it, name)
        top = max(meas + floor + [1e-6]) * 1.9  # headroom: the legend sits above the bars, not on them
        for x, c, m in zip(xs, cats, meas):
            eff = c.get("efficiency")
            text = "—" if eff is None else (f"{100 * eff:.0f}%" if eff >= 0.005 else "<1%")
            self._text(text, x - 0.2, m + top * 0.01 + top * 0.06, anchor=(0.5, 1), bold=True)
        ax.setTicks([[(float(x), c["label"]) for x, c in zip(xs, cats)]])
        self.set_range((-0.6, len(cats) - 0.4), (0.0, top))
        # short: a title wider than the chart widens the plot past the widget's edge
        self.plot_item.setTitle(f"n = {d['positions']}: measured vs floor (% = efficiency)", color=self.theme["fg"], size="11pt")


class ExpertUnionChart(BaseChart):
    """Distinct experts per MoE layer that n tokens routed to, against n × top-k (every token its own)."""

    title = "MoE: experts read per layer"
    legend_offset = (-10, 5)  # top right, over the headroom: at the bottom it covered a small model's few experts
    legend_cols = 2
    x_label = ("positions (n)", "")
    y_label = ("experts per MoE layer", "")
    empty_text = "no verify cost measured yet"  # whether the model routes experts is known only then

    def build(self):
        dash = QtCore.Qt.PenStyle.DashLine
        self.bound = self.plot_item.plot([], [], pen=self.pen("muted", 1.5, dash), name="n × top-k (none shared)")
        self.cap = self.plot_item.plot([], [], pen=self.pen("breakeven", 1.5, QtCore.Qt.PenStyle.DotLine), name="in the layer")
        self.union = self.plot_item.plot([], [], pen=self.pen("pred", 2.5), symbol="o", symbolSize=7,
                                         symbolBrush=pg.mkBrush(self.theme["pred"]), symbolPen=None,
                                         name="distinct, measured")

    def _draw(self, d: dict | None) -> None:
        if not d or not d.get("n"):
            for it in (self.bound, self.cap, self.union):
                it.setData([], [])
            self.show_empty("no MoE layers in this model" if d is not None else self.empty_text)
            return
        self.show_empty(None)
        n = d["n"]
        self.union.setData(n, d["distinct"])
        self.bound.setData(n, d["bound"] if d.get("bound") else [])
        n_exp = d.get("n_experts")
        self.cap.setData([min(n), max(n)] if n_exp else [], [n_exp, n_exp] if n_exp else [])
        ys = [y for y in list(d["distinct"]) + list(d.get("bound") or []) if y is not None]
        self._span = (max(n), max(ys + [n_exp or 0, 1]))
        self._fit()

    def _fit(self) -> None:
        """The lines under the legend (top right): the y axis reaches as far above them as the legend needs."""
        if getattr(self, "_span", None) is not None:
            n_max, y_max = self._span
            self.set_range((0.5, n_max + 0.5), (0.0, y_max * self.legend_headroom(1.1)))

    def legend_changed(self) -> None:
        self._fit()
