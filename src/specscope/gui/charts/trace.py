"""The acceptance trace: A(s) along the generated text (one case), and E(k) walked on the traces per content class.

``trace_case_data(case)`` and ``trace_class_data(cases)`` turn session records into chart data (pure Python;
the reports use them too); ``TraceChart`` and ``TraceClassChart`` draw it. A(s) is the number of the
drafter's next K_max proposals from position s of the target's own output that agree with it: where the
drafter agrees, and how far. Under sampling the trace is an estimate (the mean over seeded draws) and says so.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from specscope.profiler.analysis import trace_walk
from specscope.profiler.run.suite import CONTENT_CLASS_NAMES

from .common import BaseChart
from .records import TraceCaseData, TraceClass, TraceClassData

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
