"""The division: the round model's speedup over acceptance α, the seed's division beside it, measured points,
break-even, block-sum ruler."""

from __future__ import annotations

import html
import math

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from specscope.profiler.analysis.intervals import draft_time_text
from specscope.profiler.analysis.round_model import SYMBOLS

from .common import BaseChart

_E = np.zeros(0)


def curve_label(source: str | None) -> str:
    """The curve's name says where its times came from: a curve from the run's own rounds is the ledger, not a
    prediction."""
    if source == "rounds":
        return "ledger (the run's own rounds), not a prediction"
    if source == "verify curve":
        return "predicted (verify curve)"
    return "predicted: whole round, timed apart"


def chart_title(source: str | None) -> str:
    """The title says what the curve is: a prediction, or the ledger standing in for one."""
    if source == "rounds":
        return "Ledger speedup vs acceptance (the run's own rounds, not a prediction)"
    return "Predicted speedup vs acceptance"


DIVISION_NAME = "seed's division (no rollback, bookkeeping)"


def _ci_name(what: str, unit: str | None) -> str:
    return f"{what} (α 95%, {unit or 'rounds'})"


def _finite(ys) -> list[float]:
    return [y for y in ys if y is not None and math.isfinite(y)]


class DivisionChart(BaseChart):
    title = chart_title(None)
    x_label = ("per-position acceptance α (geometric: E = 1 + α + … + α^k)", "%")
    y_label = ("speedup over plain decoding", "×")
    # the legend sits under the plot, in the plot item's layout: inside the plot it covered the left end of the curves
    # and the break-even line (nowhere inside is empty for every run: a DFlash run's curves lie low, a good run's high)
    legend_cols = 2
    legend_offset = (0, 0)
    empty_text = "needs plain and speculative timings"

    def build(self):
        dash = QtCore.Qt.PenStyle.DashLine
        old = self.legend
        old.opts["offset"] = None
        old.setParentItem(None)
        if old.scene() is not None:
            old.scene().removeItem(old)
        # no offset: not anchored to the view box, laid out by the plot item's grid under the x axis
        self.legend = self.plot_item.legend = pg.LegendItem(labelTextSize="9pt", colCount=self.legend_cols)
        self.legend.setParentItem(self.plot_item)  # the plot item owns it (the scene deletes it on close, once)
        self.plot_item.layout.addItem(self.legend, 4, 1)
        self.legend.setLabelTextColor(self.theme["fg"])
        self.legend.setBrush(pg.mkBrush(QtGui.QColor(self.theme["bg"])))
        self.legend.setPen(pg.mkPen(self.theme["bg"]))
        self.breakeven = self.plot_item.plot([0, 100], [1, 1], pen=self.pen("breakeven", 1.5, QtCore.Qt.PenStyle.DotLine),
                                             name="break-even (1×)")
        self.measured_curve = self.plot_item.plot([], [], pen=pg.mkPen(self.theme["muted"], width=1.5),
                                                  name="measured T_verify (before what-if)")
        self.curve = self.plot_item.plot([], [], pen=self.pen("plain", 2.5), name=curve_label(None), connect="finite")
        self.division = self.plot_item.plot([], [], pen=pg.mkPen(self.theme["muted"], width=1.5,
                                                                 style=QtCore.Qt.PenStyle.DashDotLine),
                                            name=DIVISION_NAME, connect="finite")
        self.block = self.plot_item.plot([], [], pen=self.pen("spec", 2, dash), name="block-sum ruler (wrong)",
                                         connect="finite")
        self.err = pg.ErrorBarItem(x=_E, y=_E, left=_E, right=_E, beam=0.02, pen=pg.mkPen(self.theme["fg"], width=1.5))
        self.plot_item.addItem(self.err)
        self.cases = self.plot_item.plot([], [], pen=None, symbol="o", symbolSize=7,
                                         symbolBrush=pg.mkBrush(self.theme["muted"]), symbolPen=None,
                                         name=_ci_name("measured per case", "rounds"))
        self.main = self.plot_item.plot([], [], pen=None, symbol="o", symbolSize=11,
                                        symbolBrush=pg.mkBrush(self.theme["accept"]), symbolPen=pg.mkPen(self.theme["fg"]),
                                        name=_ci_name("measured run", None))
        self.pred = self.plot_item.plot([], [], pen=None, symbol="x", symbolSize=12,
                                        symbolBrush=pg.mkBrush(self.theme["pred"]), symbolPen=pg.mkPen(self.theme["pred"], width=2),
                                        name="predicted at the run's E")
        self.whatif = self.plot_item.plot([], [], pen=None, symbol="d", symbolSize=13,
                                          symbolBrush=pg.mkBrush(self.theme["breakeven"]), symbolPen=pg.mkPen(self.theme["fg"]),
                                          name="what-if")
        self.names = {it: self.legend.getLabel(it).text for it in self._legend_order()}
        # the round's terms under the legend, outside the plot: inside, its two lines crossed the break-even line
        # on a short (report) chart
        self.note = pg.LabelItem("", justify="left", size="9pt", color=self.theme["fg"])
        self.note.setParentItem(self.plot_item)
        self.plot_item.layout.addItem(self.note, 5, 1)
        self.plot_item.setXRange(0, 100, padding=0.02)

    def legend_room(self) -> float:
        # the legend sits in the plot item's grid: the view box's width grows with it, so measure the widget
        return self.width() - self.plot_item.getAxis("left").width() - 24

    def legend_changed(self) -> None:
        # a legend laid out afresh in fewer columns leaves the grid's old minimum width behind: lay the plot item out
        # again at the widget's size (it ran past the widget's right edge, cutting the x axis's last label)
        self.legend.updateGeometry()
        self.plot_item.layout.invalidate()
        pg.GraphicsView.setRange(self, self.range, padding=0, disableAutoPixel=False)

    def resizeEvent(self, ev) -> None:  # noqa: N802 (Qt naming)
        super().resizeEvent(ev)
        # only while built and open: Qt resizes the widget before ``build`` has run, and again while closing, after
        # the scene deleted the legend's items (touching them then crashed the report's chart export)
        if "names" in self.__dict__ and not self.__dict__.get("closed") and self.__dict__.get("plotItem") is not None:
            self.fit_legend()

    def _legend_order(self) -> list:
        return [self.breakeven, self.curve, self.division, self.measured_curve, self.block, self.cases, self.main,
                self.pred, self.whatif]

    def _relegend(self, names: dict) -> None:
        """The legend names what is drawn, and only that (an empty what-if or a missing curve is no entry)."""
        entries = [(it, names.get(it, self.names[it])) for it in self._legend_order()
                   if it is self.breakeven or len(it.getData()[0] if it.getData()[0] is not None else [])]
        if [(s.item, lab.text) for s, lab in self.legend.items] == entries:
            return
        self.legend.clear()
        for it, name in entries:
            self.legend.addItem(it, name)

    def _name(self, item, name: str) -> None:
        label = self.legend.getLabel(item)
        if label is not None and label.text != name:
            label.setText(name)

    def _draw(self, d: dict | None) -> None:
        if not d:
            for it in (self.curve, self.division, self.block, self.cases, self.main, self.pred, self.whatif,
                       self.measured_curve):
                it.setData([], [])
            self.err.setData(x=_E, y=_E, left=_E, right=_E)
            self.note.setText("", color=self.theme["fg"])
            self.show_empty(self.empty_text)
            return
        self.show_empty(None)
        source = d.get("source")
        if self.title != chart_title(source):
            self.title = chart_title(source)
            self.plot_item.setTitle(self.title, color=self.theme["fg"], size="11pt")
        xs = [100 * p for p in d["ps"]]
        self.curve.setData(xs, d["curve"])
        self.division.setData(xs if d.get("division_curve") else [], d.get("division_curve") or [])
        self.block.setData(xs if d["block_curve"] else [], d["block_curve"] or [])
        self.measured_curve.setData(xs if d["measured_curve"] else [], d["measured_curve"] or [])
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
        if wi is not None and wi.get("speedup") is not None:
            self.whatif.setData([100 * wi["p"]], [wi["speedup"]])
        else:
            self.whatif.setData([], [])
        self._relegend({self.curve: curve_label(source), self.main: _ci_name("measured run", d.get("p_ci95_unit"))})
        ys = _finite(list(d["curve"] or []) + list(d.get("division_curve") or []) + list(d["block_curve"] or [])
                     + [q["speedup"] for q in pts] + [1.0])
        ytop = max(ys) * 1.08
        self.plot_item.setYRange(0, ytop, padding=0)
        self.plot_item.setXRange(0, 100, padding=0.02)
        draft = "T_draft " + draft_time_text(d["t_draft_ms"], d.get("t_draft_ms_ci95"), unit=" ms")
        rest = "".join(f"   {name} {v:.2f} ms" for name, v in (("T_rollback", d.get("t_rollback_ms")),
                                                                ("T_bookkeeping", d.get("t_bookkeeping_ms"))) if v is not None)
        untimed = f"   not timed: {', '.join(SYMBOLS[t] for t in d.get('untimed') or [])}" if d.get("untimed") and source == "components" else ""
        # two lines: the round's terms on one overran a 1280-wide window's plot
        lines = (f"k = {d['k']}   T_decode {d['t_decode_ms']:.2f} ms   T_verify {d['t_verify_ms']:.2f} ms",
                 f"{draft}{rest}{untimed}")
        self.note.setText("<br>".join(html.escape(x).replace("  ", "&nbsp; ") for x in lines), color=self.theme["fg"])


class BudgetChart(BaseChart):
    """A tree run's budget what-if (``analysis.tree_what_if``): the predicted speedup at each budget timed, with E's
    95% interval carried through the round model, the run's own budget (its prediction) and the best marked. Budgets
    evenly spaced (1, 2, 4, 8, 16 and the run's); a budget with no E (no trace, above the run's) is named under the
    plot, not drawn."""

    title = "Predicted speedup by tree budget"
    x_label = ("node budget (--tree-budget)", "")
    y_label = ("predicted speedup", "×")
    empty_text = "no budget what-if (a chain run, or a tree run that timed no other budget)"

    legend_cols = 2

    def build(self):
        self.setMinimumSize(260, 150)
        self.plot_item.getAxis("bottom").enableAutoSIPrefix(False)
        self.plot_item.getAxis("left").enableAutoSIPrefix(False)
        # the legend under the plot, as the division's (inside, it covered the best budget's label)
        old = self.legend
        old.opts["offset"] = None
        old.setParentItem(None)
        if old.scene() is not None:
            old.scene().removeItem(old)
        self.legend = self.plot_item.legend = pg.LegendItem(labelTextSize="9pt", colCount=self.legend_cols)
        self.legend.setParentItem(self.plot_item)
        self.plot_item.layout.addItem(self.legend, 4, 1)
        self.legend.setLabelTextColor(self.theme["fg"])
        self.legend.setBrush(pg.mkBrush(QtGui.QColor(self.theme["bg"])))
        self.legend.setPen(pg.mkPen(self.theme["bg"]))
        self.note = pg.LabelItem("", justify="left", size="9pt", color=self.theme["fg"])
        self.note.setParentItem(self.plot_item)
        self.plot_item.layout.addItem(self.note, 5, 1)

    def legend_room(self) -> float:
        return self.width() - self.plot_item.getAxis("left").width() - 24

    def _draw(self, w) -> None:
        if not self._redraw(w, needs="points"):
            self.note.setText("", color=self.theme["fg"])
            return
        pts = w["points"]
        xs = list(range(len(pts)))
        self.plot_item.getAxis("bottom").setTicks([[(x, str(p["budget"])) for x, p in zip(xs, pts)]])
        priced = [(x, p) for x, p in zip(xs, pts) if p["speedup"] is not None]
        if priced:
            self._add(pg.PlotDataItem([x for x, _ in priced], [p["speedup"] for _, p in priced],
                                      pen=self.pen("pred", 2), symbol="o", symbolSize=8,
                                      symbolBrush=pg.mkBrush(self.theme["pred"]), symbolPen=None),
                      "predicted (the round model at each budget)")
        band = [(x, p) for x, p in priced if p["speedup_ci95"]]
        if band:
            lo = np.array([p["speedup"] - p["speedup_ci95"][0] for _, p in band])
            hi = np.array([p["speedup_ci95"][1] - p["speedup"] for _, p in band])
            self._add(pg.ErrorBarItem(x=np.array([x for x, _ in band]), y=np.array([p["speedup"] for _, p in band]),
                                      bottom=lo, top=hi, beam=0.12, pen=pg.mkPen(self.theme["fg"], width=1.2)))
        own = [(x, p) for x, p in priced if p["this_run"]]
        if own:
            self._add(pg.PlotDataItem([own[0][0]], [own[0][1]["speedup"]], pen=None, symbol="star", symbolSize=16,
                                      symbolBrush=pg.mkBrush(self.theme["accept"]), symbolPen=pg.mkPen(self.theme["fg"])),
                      "this run's budget: its prediction")
        best = [(x, p) for x, p in priced if p["budget"] == w["best"]]
        tops = [p["speedup_ci95"][1] if p["speedup_ci95"] else p["speedup"] for _, p in priced]
        ytop = max(tops + [0.0]) * 1.25 or 1.0
        if ytop > 0.7:  # the break-even line where it is near the figures (at 0.2× it would flatten them)
            ytop = max(ytop, 1.1)
            self._add(pg.InfiniteLine(pos=1.0, angle=0, pen=self.pen("breakeven", 1.5, QtCore.Qt.PenStyle.DotLine)))
        if best:
            x, p = best[0]
            close = f" · within 5%: {', '.join(map(str, w['close']))}" if w["close"] else ""
            self._text(f"best: {p['budget']} ({p['speedup']:.3f}×){close}", x, p["speedup"], anchor=(0.5, 1.6),
                       color=self.theme["pred"], bold=True)
        self.plot_item.setYRange(0, ytop, padding=0)
        self.plot_item.setXRange(-0.5, len(pts) - 0.5, padding=0)
        unknown = [str(p["budget"]) for p in pts if p["speedup"] is None]
        lines = ["bars: E's 95% interval (times as measured); T_draft, keep, bookkeeping at the run's budget"]
        if unknown:
            lines.append(f"budget {', '.join(unknown)}: verify timed, no E (no trace: run --trace)")
        self.note.setText("<br>".join(html.escape(x) for x in lines), color=self.theme["fg"])
