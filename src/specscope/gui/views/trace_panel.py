"""The Cases page's acceptance-trace strip: A(s) along the selected case's output beside E(k) by content class.

Shown only when the session holds traces (``case["trace"]``); older sessions keep the page as it was."""

from __future__ import annotations

from PySide6 import QtWidgets

from ..charts.trace import TraceChart, TraceClassChart, trace_case_data, trace_class_data
from ..charts.records import ChartTheme


class TracePanel(QtWidgets.QWidget):
    def __init__(self, theme: ChartTheme, parent=None):
        super().__init__(parent)
        lay = QtWidgets.QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.case_chart = TraceChart(theme)
        self.class_chart = TraceClassChart(theme)
        lay.addWidget(self.case_chart, 3)
        lay.addWidget(self.class_chart, 2)
        self.setMinimumHeight(200)
        self.setVisible(False)

    def apply_theme(self, theme: ChartTheme) -> None:
        self.case_chart.apply_theme(theme)
        self.class_chart.apply_theme(theme)

    def set_cases(self, cases: list[dict], selected: dict | None) -> None:
        """All cases (for the classes) and the selected one (for A(s)); hidden when no case has a trace."""
        classes = trace_class_data(cases)
        self.setVisible(classes is not None)
        if classes is None:
            return
        self.class_chart.set_data(classes)
        self.case_chart.set_data(trace_case_data(selected))
