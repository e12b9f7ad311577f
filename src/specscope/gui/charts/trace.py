"""The acceptance trace: A(s) along the generated text (one case), and E(k) walked on the traces per content class;
for a tree run (``--tree-budget``) also the tree traces walked: E at every budget with the run's marked
(``TreeBudgetChart``), and at the run's budget how deep the accepted paths went (``TreeDepthChart``).

``trace_case_data(case)``, ``trace_class_data(cases)`` and ``trace_tree_data(cases)`` turn session records into chart
data (pure Python; the reports use them too); ``TraceChart``, ``TraceClassChart`` and the tree charts draw it. A(s) is the number of the
drafter's next K_max proposals from position s of the target's own output that agree with it: where the
drafter agrees, and how far. Under sampling the trace is an estimate (the mean over seeded draws) and says so.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from specscope.profiler.analysis import trace_walk, tree_trace
from specscope.profiler.analysis.rounds import full_round
from specscope.profiler.run.suite import CONTENT_CLASS_NAMES

from .common import BaseChart
from .records import TraceCaseData, TraceClass, TraceClassData, TraceTreeData

CLASS_NAMES = CONTENT_CLASS_NAMES


def trace_case_data(case: dict | None) -> TraceCaseData | None:
    """A(s) of one case, with its pieces of text (when the session has them) for the hover text."""
    case = case or {}
    t = case.get("trace")
    if not isinstance(t, dict) or not t.get("A"):
        return None
    A = t["A"]
    pieces = case.get("plain_pieces") or []
    facts = trace_walk.summary(t)
    return {"A": list(A), "k_max": t["k_max"], "drafter": t.get("drafter") or "", "estimate": bool(t.get("estimate")),
            "case": case.get("id", ""), "content_class": case.get("content_class", ""),
            "pieces": [pieces[s + 1] if s + 1 < len(pieces) else "" for s in range(len(A))],
            "mean_A": facts["mean_A"], "first_draft_agrees": facts["first_draft_agrees"]}


def trace_class_data(cases: list[dict]) -> TraceClassData | None:
    """E(k) walked on the traces of each content class (cases pooled), k = 1..K_max."""
    by = trace_walk.by_class([c for c in cases if not c.get("discarded")])
    if not by:
        return None
    out: list[TraceClass] = []
    for cat in sorted(by, key=lambda c: list(CLASS_NAMES).index(c) if c in CLASS_NAMES else 9):
        curve = by[cat]
        out.append({"name": CLASS_NAMES.get(cat, cat), "k": [c["k"] for c in curve],
                    "E": [c["tokens_per_round"] for c in curve], "estimate": any(c["estimate"] for c in curve),
                    "traces": curve[0]["traces"] if curve else 0})
    return {"classes": out}


def run_budget(cases: list[dict]) -> int:
    """The tree budget the cases' rounds ran (``--tree-budget``); 0 for a chain run."""
    budgets = [int(t.get("budget") or t["nodes"]) for c in cases for r in (c.get("spec") or {}).get("rounds") or []
               if (t := r.get("tree"))]
    return max(budgets, default=0)


def trace_tree_data(cases: list[dict]) -> TraceTreeData | None:
    """A tree run's tree traces walked (pooled over the cases): E at every budget 1..b, and at the run's own budget
    the share of paths reaching each depth and the depth histogram, beside E from the cases' own full tree rounds
    (first repeat). None for a chain run, or a tree run recorded without ``--trace``."""
    cases = [c for c in cases if not c.get("discarded")]
    traces = tree_trace.tree_traces(cases)
    budget = run_budget(cases)
    if not traces or budget < 1:
        return None
    depth = min(int(t["depth"]) for t in traces)
    curve = tree_trace.curve(traces, depth)
    at = tree_trace.at_budget(traces, budget, depth)
    paths = [r["accepted"] for c in cases for r in c["spec"]["rounds"]
             if r.get("tree") and not r.get("repeat") and r.get("pass", "measured") in ("measured", None)
             and full_round(r, depth)]
    return {"budget": budget, "depth": depth, "budgets": [x["budget"] for x in curve],
            "E": [x["tokens_per_round"] for x in curve], "E_at_budget": at["tokens_per_round"],
            "full_rounds": at["full_rounds"], "acceptance_by_depth": at["acceptance_by_depth"],
            "depth_histogram": at["depth_histogram"], "measured_E": 1.0 + sum(paths) / len(paths) if paths else None,
            "traces": len(traces)}


class TraceChart(BaseChart):
    title = "Acceptance trace A(s): how far the drafter agrees from each position"  # the drawn one names its case
    x_label = ("position in the generated text", "token")
    y_label = ("A(s)", "drafts")
    legend_offset = (-10, 5)
    empty_text = "no acceptance trace for this case"

    def _draw(self, d: dict | None) -> None:
        if not self._redraw(d):
            self.plot_item.setTitle(self.title, color=self.theme["fg"], size="11pt")
            return
        self.legend.setVisible(False)  # one series, described in the title
        A, k_max = d["A"], d["k_max"]
        est = " (an estimate: mean of seeded draws)" if d["estimate"] else ""
        facts = "" if d.get("mean_A") is None else (f": mean {d['mean_A']:.2f}, the first draft right at "
                                                     f"{d['first_draft_agrees']:.0%} of positions")
        self.plot_item.setTitle(f"A(s) along {d['case']} ({d['drafter']}){facts}{est}", color=self.theme["fg"], size="11pt")
        agree = QtGui.QColor(self.theme["accept"])
        self._add(pg.BarGraphItem(x=list(range(len(A))), height=A, width=0.85, brush=pg.mkBrush(agree), pen=None))
        if d.get("mean_A") is not None:
            self._add(pg.PlotDataItem([-0.5, len(A) - 0.5], [d["mean_A"]] * 2,
                                      pen=self.pen("fg", 1.2, QtCore.Qt.PenStyle.DashLine)))  # the mean (in the title)
        self.plot_item.getAxis("left").setTicks([[(float(i), str(i)) for i in range(k_max + 1)]])
        self.set_range((-0.5, max(len(A), 8) - 0.5), (0.0, k_max + 0.3))


class TraceClassChart(BaseChart):
    title = "Tokens per round E(k) from the traces, by content"
    x_label = ("draft tokens per round (k)", "")
    y_label = ("E(k)", "tokens per round")
    legend_offset = (10, 5)
    empty_text = "no acceptance traces in this session"

    def _draw(self, d: dict | None) -> None:
        if not self._redraw(d, "classes"):
            return
        colors = self.theme["cats"]
        kmax, ymax = 1, 2.0
        for i, c in enumerate(d["classes"]):
            pts = [(k, e) for k, e in zip(c["k"], c["E"]) if e is not None]
            if not pts:
                continue
            col = QtGui.QColor(colors[i % len(colors)])
            item = pg.PlotDataItem([k for k, _ in pts], [e for _, e in pts], pen=pg.mkPen(col, width=2.5), symbol="o",
                                   symbolSize=7, symbolBrush=pg.mkBrush(col), symbolPen=None)
            self._add(item, f"{c['name']} ({c['traces']} case{'s' if c['traces'] != 1 else ''})"
                      + (", estimate" if c["estimate"] else ""))
            kmax = max(kmax, pts[-1][0])
            ymax = max([ymax] + [e for _, e in pts])
        self.plot_item.getAxis("bottom").setTicks([[(float(k), str(k)) for k in range(1, kmax + 1)]])
        self.set_range((0.5, kmax + 0.5), (1.0, 1.0 + (ymax - 1.0) * 1.9))  # headroom for the legend, top left


class TreeBudgetChart(BaseChart):
    """E by tree budget walked from the traces (the budget what-if), the run's budget marked."""
    title = "Tokens per round E by tree budget, walked from the traces"
    x_label = ("tree budget", "drafted nodes")
    y_label = ("E", "tokens per round")
    legend_offset = (10, 5)
    legend_cols = 3  # one row where it fits: the chart is short
    empty_text = "no tree traces in this session"
    _span: tuple[int, float] | None = None  # the largest budget and E drawn (the range, fitted under the legend)

    def _draw(self, d: dict | None) -> None:
        self._span = None
        if not self._redraw(d, "budgets"):
            return
        pts = [(b, e) for b, e in zip(d["budgets"], d["E"]) if e is not None]
        if not pts:
            self.show_empty(self.empty_text)
            return
        line = QtGui.QColor(self.theme["spec"])
        self._add(pg.PlotDataItem([b for b, _ in pts], [e for _, e in pts], pen=pg.mkPen(line, width=2.5), symbol="o",
                                  symbolSize=6, symbolBrush=pg.mkBrush(line), symbolPen=None),
                  f"E walked ({d['traces']} case{'s' if d['traces'] != 1 else ''})")
        budget = d["budget"]
        self._add(pg.InfiniteLine(pos=budget, angle=90, pen=self.pen("breakeven", 1.5, QtCore.Qt.PenStyle.DashLine)))
        if d["E_at_budget"] is not None:
            mark = QtGui.QColor(self.theme["breakeven"])
            self._add(pg.ScatterPlotItem([budget], [d["E_at_budget"]], size=13, symbol="d", brush=pg.mkBrush(mark),
                                         pen=None), f"this run's budget {budget}: {d['E_at_budget']:.2f}")
        if d["measured_E"] is not None:
            self._add(pg.ScatterPlotItem([budget], [d["measured_E"]], size=17, symbol="o", brush=None,
                                         pen=self.pen("fg", 1.5)), f"measured: {d['measured_E']:.2f}")
        bmax = d["budgets"][-1]
        step = 1 if bmax <= 16 else 2
        self.plot_item.getAxis("bottom").setTicks([[(float(b), str(b)) for b in range(step, bmax + 1, step)]])
        self._span = (bmax, max([e for _, e in pts] + [d["measured_E"] or 1.0]))
        self._fit()

    def _fit(self) -> None:
        if self._span is None:
            return
        bmax, ymax = self._span
        self.set_range((0.5, bmax + 0.5), (1.0, 1.0 + max(ymax - 1.0, 0.5) * self.legend_headroom(1.25)))

    def legend_changed(self) -> None:
        self._fit()


class TreeDepthChart(BaseChart):
    """How deep the accepted paths went at the run's budget: the share of rounds whose path ended at each depth
    (bars: the depth histogram) and the share that reached each depth (the line: acceptance by depth)."""
    title = "Accepted path by depth"
    x_label = ("depth", "accepted path length, tokens")
    y_label = ("share of rounds", "")
    legend_offset = (-10, 5)
    legend_cols = 2
    empty_text = "no tree traces in this session"
    _depth: int | None = None

    def _draw(self, d: dict | None) -> None:
        self._depth = None
        if not self._redraw(d, "depth_histogram"):
            self.plot_item.setTitle(self.title, color=self.theme["fg"], size="11pt")
            return
        n = d["full_rounds"]
        self.plot_item.setTitle(f"Accepted path by depth at budget {d['budget']} ({n} rounds walked)",
                                color=self.theme["fg"], size="11pt")
        if not n:
            self.show_empty("no full tree round walked")
            return
        k = self._depth = min(d["depth"], d["budget"])  # a path holds at most the budget's nodes
        hist = [h / n for h in d["depth_histogram"][:k + 1]]
        bar = QtGui.QColor(self.theme["bar"])
        bar.setAlpha(170)
        self._add(pg.BarGraphItem(x=list(range(len(hist))), height=hist, width=0.7, brush=pg.mkBrush(bar), pen=None),
                  "path ended at depth d")
        reach = [(i, a) for i, a in enumerate(d["acceptance_by_depth"][:k], start=1) if a is not None]
        col = QtGui.QColor(self.theme["accept"])
        self._add(pg.PlotDataItem([i for i, _ in reach], [a for _, a in reach], pen=pg.mkPen(col, width=2.5),
                                  symbol="o", symbolSize=6, symbolBrush=pg.mkBrush(col), symbolPen=None),
                  "path reached depth d")
        step = 1 if k <= 16 else 2
        self.plot_item.getAxis("bottom").setTicks([[(float(i), str(i)) for i in range(0, k + 1, step)]])
        self.plot_item.getAxis("left").setTicks([[(v, f"{v:g}") for v in (0.0, 0.25, 0.5, 0.75, 1.0)]])  # a share
        self._fit()

    def _fit(self) -> None:
        if self._depth is not None:  # shares: 0..1, and room above for the legend, top right
            self.set_range((-0.5, self._depth + 0.5), (0.0, self.legend_headroom(1.15)))

    def legend_changed(self) -> None:
        self._fit()
