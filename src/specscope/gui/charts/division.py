"""The division: predicted speedup over acceptance p, measured points, break-even, block-sum ruler."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore

from .common import BaseChart, font

_E = np.zeros(0)


def curve_label(source: str | None) -> str:
    """The curve's name says where its times came from: a curve from the run's own rounds is the ledger, not a
    prediction."""
    if source == "rounds":
        return "ledger (not a prediction)"
    if source == "verify curve":
        return "predicted (verify curve)"
    return "predicted (timed apart)"


class DivisionChart(BaseChart):
    title = "Predicted speedup vs acceptance"
    x_label = ("per-position acceptance α (geometric: E = 1 + α + … + α^k)", "%")
    y_label = ("speedup over plain decoding", "×")
    # one column at the top left, under the note: the curves rise to the right and the measured points sit low in the
    # middle, so that corner is empty; two columns at the bottom right overflowed the plot's left edge at 1280×800
    legend_cols = 1
    legend_offset = (10, 42)
    empty_text = "needs plain and speculative timings"

    def build(self):
        dash = QtCore.Qt.PenStyle.DashLine
        self.breakeven = self.plot_item.plot([0, 100], [1, 1], pen=self.pen("breakeven", 1.5, QtCore.Qt.PenStyle.DotLine),
                                             name="break-even (1×)")
        self.measured_curve = self.plot_item.plot([], [], pen=pg.mkPen(self.theme["muted"], width=1.5),
                                                  name="measured T_verify (before what-if)")
        self.curve = self.plot_item.plot([], [], pen=self.pen("plain", 2.5), name=curve_label(None))
        self.block = self.plot_item.plot([], [], pen=self.pen("spec", 2, dash), name="block-sum ruler (wrong)")
        self.err = pg.ErrorBarItem(x=_E, y=_E, left=_E, right=_E, beam=0.02, pen=pg.mkPen(self.theme["fg"], width=1.5))
        self.plot_item.addItem(self.err)
        self.cases = self.plot_item.plot([], [], pen=None, symbol="o", symbolSize=7,
                                         symbolBrush=pg.mkBrush(self.theme["muted"]), symbolPen=None,
                                         name="measured, per case (α 95% CI)")
        self.main = self.plot_item.plot([], [], pen=None, symbol="o", symbolSize=11,
                                        symbolBrush=pg.mkBrush(self.theme["accept"]), symbolPen=pg.mkPen(self.theme["fg"]),
                                        name="measured, all (α 95% CI)")
        self.pred = self.plot_item.plot([], [], pen=None, symbol="x", symbolSize=12,
                                        symbolBrush=pg.mkBrush(self.theme["pred"]), symbolPen=pg.mkPen(self.theme["pred"], width=2),
                                        name="predicted at the run's E")
        self.whatif = self.plot_item.plot([], [], pen=None, symbol="d", symbolSize=13,
                                          symbolBrush=pg.mkBrush(self.theme["breakeven"]), symbolPen=pg.mkPen(self.theme["fg"]),
                                          name="what-if")
        self.note = pg.TextItem("", color=self.theme["fg"], anchor=(0, 0))
        self.note.setFont(font(9))
        self.plot_item.addItem(self.note)
        self.plot_item.setXRange(0, 100, padding=0.02)

    def _name(self, item, name: str) -> None:
        label = self.legend.getLabel(item)
        if label is not None and label.text != name:
            label.setText(name)

    def _draw(self, d: dict | None) -> None:
        if not d:
            for it in (self.curve, self.block, self.cases, self.main, self.pred, self.whatif, self.measured_curve):
                it.setData([], [])
            self.err.setData(x=_E, y=_E, left=_E, right=_E)
            self.note.setText("")
            self.show_empty(self.empty_text)
            return
        self.show_empty(None)
        xs = [100 * p for p in d["ps"]]
        self.curve.setData(xs, d["curve"])
        self._name(self.curve, curve_label(d.get("source")))
        self.block.setData(xs, d["block_curve"] or [])
        self.measured_curve.setData(xs, d["measured_curve"] or [])
        pts = d["points"]
        main = [q for q in pts if q["main"]]
        other = [q for q in pts if not q["main"]]
        self.cases.setData([100 * q["p"] for q in other], [q["speedup"] for q in other])
        self.main.setData([100 * q["p"] for q in main], [q["speedup"] for q in main])
        if pts:
            self.err.setData(x=np.array([100 * q["p"] for q in pts]), y=np.array([q["speedup"] for q in pts]),
                             left=np.array([100 * (q["p"] - q["p_lo"]) for q in pts]),
                             right=np.array([100 * (q["p_hi"] - q["p"]) for q in pts]))
        else:
            self.err.setData(x=_E, y=_E, left=_E, right=_E)
        pr = d.get("predicted")
        self.pred.setData([100 * pr["p"]] if pr else [], [pr["speedup"]] if pr else [])
        wi = d.get("what_if")
        self.whatif.setData([100 * wi["p"]] if wi else [], [wi["speedup"]] if wi else [])
        ys = list(d["curve"]) + list(d["block_curve"] or []) + [q["speedup"] for q in pts] + [1.0]
        ytop = max(ys) * 1.12
        self.plot_item.setYRange(0, ytop, padding=0)
        self.plot_item.setXRange(0, 100, padding=0.02)
        draft = (f"T_draft {d['t_draft_ms']:.2f} ms" if d["t_draft_ms"] > 0
                 else f"T_draft below noise ({d['t_draft_ms']:.2f} ms, used as measured)")
        rollback = f"   T_rollback {d['t_rollback_ms']:.2f} ms" if d.get("t_rollback_ms") else ""
        if d.get("t_bookkeeping_ms"):
            rollback += f"   T_bookkeeping {d['t_bookkeeping_ms']:.2f} ms"
        # two lines: the round's terms on one overran a 1280-wide window's plot
        self.note.setText(f"k = {d['k']}   T_decode {d['t_decode_ms']:.2f} ms   T_verify {d['t_verify_ms']:.2f} ms\n"
                          f"{draft}{rollback}")
        self.note.setPos(2, ytop * 0.99)
