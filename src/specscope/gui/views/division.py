"""Division page: predicted speedup over p, measured points, break-even, and a what-if calculator."""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from specscope.profiler import stats
from specscope.profiler.verdict import audit_answers, prediction_error_text

from ..charts import DivisionChart
from ..charts import data as chart_data
from .common import Tile, fmt, plain_label


class DivisionView(QtWidgets.QWidget):
    def __init__(self, theme: dict, model, parent=None):
        super().__init__(parent)
        self.model = model  # SessionModel: the calculator re-derives the curve through the shared data function
        self._snap: dict | None = None
        lay = QtWidgets.QHBoxLayout(self)
        lay.setContentsMargins(8, 8, 8, 8)
        self.chart = DivisionChart(theme)
        lay.addWidget(self.chart, 3)

        side = QtWidgets.QVBoxLayout()
        self.t_pred = Tile("Predicted speedup")
        self.t_meas = Tile("Measured speedup")
        self.t_be = Tile("Break-even verify")
        for t in (self.t_pred, self.t_meas, self.t_be):
            side.addWidget(t)

        calc = QtWidgets.QGroupBox("What-if calculator")
        form = QtWidgets.QFormLayout(calc)
        self.tv = QtWidgets.QDoubleSpinBox()
        self.tv.setRange(0.01, 1e6)
        self.tv.setDecimals(2)
        self.tv.setSuffix(" ms")
        self.tv.setSingleStep(1.0)
        self.tv.setToolTip("T_verify(k): edit it and watch the curve move")
        self.p = QtWidgets.QDoubleSpinBox()
        self.p.setRange(0.0, 100.0)
        self.p.setDecimals(1)
        self.p.setSuffix(" %")
        self.p.setSingleStep(5.0)
        self.p_slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        self.p_slider.setRange(0, 1000)
        self.p_slider.valueChanged.connect(lambda v: self.p.setValue(v / 10.0))
        self.p.valueChanged.connect(lambda v: self.p_slider.setValue(round(v * 10)))
        form.addRow("T_verify", self.tv)
        form.addRow("Acceptance p", self.p)
        form.addRow("", self.p_slider)
        self.result = plain_label("")
        form.addRow(self.result)
        self.reset = QtWidgets.QPushButton("Reset to measured")
        self.reset.clicked.connect(self.reset_calculator)
        form.addRow(self.reset)
        calc.setEnabled(False)
        self.calc = calc
        side.addWidget(calc)
        self.audit = plain_label("")
        self.audit.setObjectName("audit")
        side.addWidget(self.audit)
        side.addStretch(1)
        w = QtWidgets.QWidget()
        w.setLayout(side)
        side.setContentsMargins(0, 0, 0, 0)
        w.setMinimumWidth(330)
        w.setMaximumWidth(460)
        lay.addWidget(w, 1)
        self._touched = False
        self.tv.valueChanged.connect(self._calc_changed)
        self.p.valueChanged.connect(self._calc_changed)

    def apply_theme(self, theme: dict) -> None:
        self.chart.apply_theme(theme)

    def reset_calculator(self) -> None:
        s = (self._snap or {}).get("summary") or {}
        self._touched = False
        for w in (self.tv, self.p):
            w.blockSignals(True)
        if s.get("t_verify_ms") is not None:
            self.tv.setValue(s["t_verify_ms"])
        if s.get("p") is not None:
            self.p.setValue(100 * s["p"])
            self.p_slider.blockSignals(True)
            self.p_slider.setValue(round(1000 * s["p"]))
            self.p_slider.blockSignals(False)
        for w in (self.tv, self.p):
            w.blockSignals(False)
        self._redraw()

    def _calc_changed(self, *_):
        self._touched = True
        self._redraw()

    def _redraw(self) -> None:
        snap = self._snap
        if not snap:
            return
        s = snap["summary"]
        if not self._touched:
            d = snap["division"]
        else:
            d = chart_data.division_data(self.model.session, s, t_verify_ms=self.tv.value(), p=self.p.value() / 100.0)
        self.chart.set_data(d)
        if self._touched and d and d.get("what_if"):
            wi = d["what_if"]
            E = stats.tokens_per_round_from_p(wi["p"], s["k"])
            dv = stats.divide(s["t_decode_ms"], self.tv.value(), s["t_draft_ms"], E)
            self.result.setText(
                f"At p = {wi['p'] * 100:.1f}% and T_verify = {self.tv.value():.2f} ms:\n"
                f"predicted speedup {dv.predicted_speedup:.3f}× ({dv.predicted_tok_s:.1f} tok/s)\n"
                f"verify costs {dv.verify_multiple:.2f} plain steps; break-even ≤ {dv.break_even_verify_ms:.2f} ms "
                f"({dv.break_even_multiple:.2f}× T_decode)\n(i.i.d. acceptance assumed for the what-if)"
            )
        elif d:
            self.result.setText("Edit T_verify or p to move the curve.")

    def update_snapshot(self, snap: dict) -> None:
        self._snap = snap
        s = snap["summary"]
        has = snap["division"] is not None
        self.calc.setEnabled(has)
        if has and not self._touched:
            self.reset_calculator()
        else:
            self._redraw()
        self.t_pred.set(fmt(s.get("predicted_speedup"), ".3f", "×"),
                        f"E = {fmt(s.get('tokens_per_round'), '.2f')} tokens/round · k = {s.get('k')}")
        self.t_meas.set(fmt(s.get("measured_speedup"), ".3f", "×"),
                        f"prediction error {prediction_error_text(s) or '—'}"
                        + {True: " (within noise)", False: " (off)", None: ""}[s.get("prediction_within_noise")]
                        + f" · block-sum ruler would say {fmt(s.get('block_sum_predicted_speedup'), '.3f', '×')}")
        self.t_be.set(f"≤ {fmt(s.get('break_even_verify_ms'), '.2f', ' ms')}",
                      f"≤ {fmt(s.get('break_even_multiple'), '.2f')}× T_decode; measured {fmt(s.get('verify_multiple'), '.2f')}× T_decode")
        if s.get("measured_speedup") is not None:
            self.audit.setText("\n\n".join(f"{q}\n{a}" for q, a in audit_answers(s)))
        else:
            self.audit.setText("")
