"""The Cases page's acceptance-trace strip: A(s) along the selected case's output beside E(k) by content class; for a
tree run (``--tree-budget``) a second row with the tree traces walked: E by budget (the run's budget marked) and, at
the run's budget, the accepted path by depth (the depth histogram and the acceptance by depth).

Shown only when the session holds traces (``case["trace"]``); older sessions keep the page as it was, and a chain
run's strip is the one row it always was."""

from __future__ import annotations

from PySide6 import QtWidgets

from ..charts.trace import (TraceChart, TraceClassChart, TreeBudgetChart, TreeDepthChart, trace_case_data,
                            trace_class_data, trace_tree_data)
from ..charts.records import ChartTheme

CHAIN_HEIGHT, TREE_HEIGHT = 200, 400  # the strip's least height: one row of charts, or two for a tree run


class TracePanel(QtWidgets.QWidget):
    def __init__(self, theme: ChartTheme, parent=None):
        super().__init__(parent)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        chain = QtWidgets.QHBoxLayout()
        self.case_chart = TraceChart(theme)
        self.class_chart = TraceClassChart(theme)
        chain.addWidget(self.case_chart, 3)
        chain.addWidget(self.class_chart, 2)
        lay.addLayout(chain, 1)
        self.tree_row = QtWidgets.QWidget()
        tree = QtWidgets.QHBoxLayout(self.tree_row)
        tree.setContentsMargins(0, 0, 0, 0)
        self.budget_chart = TreeBudgetChart(theme)
        self.depth_chart = TreeDepthChart(theme)
        tree.addWidget(self.budget_chart, 1)
        tree.addWidget(self.depth_chart, 1)
        lay.addWidget(self.tree_row, 1)
        self.tree_row.setVisible(False)
        self.setMinimumHeight(CHAIN_HEIGHT)
        self.setVisible(False)

    def apply_theme(self, theme: ChartTheme) -> None:
        for chart in (self.case_chart, self.class_chart, self.budget_chart, self.depth_chart):
            chart.apply_theme(theme)

    def set_cases(self, cases: list[dict], selected: dict | None) -> None:
        """All cases (for the classes and the tree) and the selected one (for A(s)); hidden when no case has a
        trace; the tree row shown only for a tree run traced with its tree."""
        classes = trace_class_data(cases)
        self.setVisible(classes is not None)
        if classes is None:
            return
        self.class_chart.set_data(classes)
        self.case_chart.set_data(trace_case_data(selected))
        tree = trace_tree_data(cases)
        self.tree_row.setVisible(tree is not None)
        self.setMinimumHeight(TREE_HEIGHT if tree is not None else CHAIN_HEIGHT)
        if tree is not None:
            self.budget_chart.set_data(tree)
            self.depth_chart.set_data(tree)
