"""Division page: predicted speedup over p, measured points, break-even, a what-if calculator, and a
communication what-if ("with X ms of communication per forward, the break-even acceptance is …")."""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from specscope.profiler.analysis import stats
from specscope.profiler.analysis.round_model import judged_rest_ms
from specscope.profiler.session.records import engine_facts
from specscope.profiler.analysis.intervals import draft_time_text
from specscope.profiler.analysis.verdict import (audit_answers, ledger_text, prediction_error_text, prediction_short,
                                                rollback_term_text, tail_text)

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
        self.t_pred = Tile("Predicted speedup (components timed apart)")
        self.t_meas = Tile("Measured speedup")
        self.t_be = Tile("Break-even verify")
        self.t_comp = Tile("Ledger (a consistency check)")
        for t in (self.t_pred, self.t_meas, self.t_comp, self.t_be):
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
        form.addRow("Acceptance α (per position)", self.p)
        form.addRow("", self.p_slider)
        self.result = plain_label("")
        form.addRow(self.result)
        self.reset = QtWidgets.QPushButton("Reset to measured")
        self.reset.clicked.connect(self.reset_calculator)
        form.addRow(self.reset)
        calc.setEnabled(False)
        self.calc = calc
        side.addWidget(calc)

        comm = QtWidgets.QGroupBox("Communication what-if")
        cform = QtWidgets.QFormLayout(comm)
        self.comm_ms = QtWidgets.QDoubleSpinBox()
        self.comm_ms.setRange(0.0, 1e6)
        self.comm_ms.setDecimals(2)
        self.comm_ms.setSuffix(" ms")
        self.comm_ms.setSingleStep(1.0)
        self.comm_ms.setToolTip("communication per forward (collectives of a sharded model): added to the compute of "
                                "a decode step and of a verify forward alike, since it barely depends on positions. "
                                "Prefilled with the measured communication per decode step (0 on one machine).")
        cform.addRow("Comm. per forward", self.comm_ms)
        self.comm_result = plain_label("")
        self.comm_result.setWordWrap(True)
        cform.addRow(self.comm_result)
        comm.setEnabled(False)
        self.comm = comm
        side.addWidget(comm)
        self.comm_ms.valueChanged.connect(self._comm_changed)
        self.audit = plain_label("")
        self.audit.setObjectName("audit")
        side.addWidget(self.audit)
        side.addStretch(1)
        w = QtWidgets.QWidget()
        w.setLayout(side)
        side.setContentsMargins(0, 0, 0, 0)
        # the tiles, both calculators and the audit answers: scrolled when the window is too short for all of them
        scroll = QtWidgets.QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(w)
        scroll.setMinimumWidth(340)
        scroll.setMaximumWidth(470)
        lay.addWidget(scroll, 1)
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
        alpha = stats.alpha_for_tokens_per_round(s.get("tokens_per_round"), s.get("k") or 1)
        if alpha is not None:  # the calculator works on the chart's axis: α, placed at the run's E
            self.p.setValue(100 * alpha)
            self.p_slider.blockSignals(True)
            self.p_slider.setValue(round(1000 * alpha))
            self.p_slider.blockSignals(False)
        for w in (self.tv, self.p):
            w.blockSignals(False)
        self.comm_ms.blockSignals(True)
        self.comm_ms.setValue(measured_communication(s)[0])
        self.comm_ms.blockSignals(False)
        self._redraw()
        self._comm_changed()

    def _comm_changed(self, *_):
        s = (self._snap or {}).get("summary") or {}
        has = bool((self._snap or {}).get("division"))
        self.comm_result.setText(communication_text(s, self.comm_ms.value()) if has else "")
        self.comm_result.setToolTip(communication_details(s, self.comm_ms.value()) if has else "")

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
            dv = stats.divide(s["t_decode_ms"], self.tv.value(), s["t_draft_ms"] + judged_rest_ms(s), E)  # the round model
            self.result.setText(
                f"At α = {wi['p'] * 100:.1f}% (E = {E:.2f}) and T_verify = {self.tv.value():.2f} ms:\n"
                + ("speedup from the run's own rounds (the ledger, not a prediction)" if s.get("division_inputs") == "rounds"
                   else "predicted speedup")
                + f" {dv.predicted_speedup:.3f}× ({dv.predicted_tok_s:.1f} tok/s)\n"
                f"verify costs {dv.verify_multiple:.2f} plain steps; break-even ≤ {dv.break_even_verify_ms:.2f} ms "
                f"({dv.break_even_multiple:.2f}× T_decode)\n(geometric acceptance α assumed for the what-if)"
            )
        elif d:
            self.result.setText("Edit T_verify or α to move the curve.")

    def update_snapshot(self, snap: dict) -> None:
        self._snap = snap
        s = snap["summary"]
        if s.get("ledger_speedup") is not None:
            err = s.get("ledger_error")
            res = s.get("ledger_residual")
            self.t_comp.set(fmt(s["ledger_speedup"], ".3f", "×"),
                            "rounds = draft + verify + rollback + bookkeeping"
                            + (f", residual {res * 100:+.1f}%" if res is not None else "")
                            + (f" · vs measured {err * 100:+.1f}%" if err is not None else ""))
            self.t_comp.setToolTip(ledger_text(s) or "")
        else:
            eng = engine_facts(self.model.session.config)["name"]
            self.t_comp.set("—", "no instrumented rounds: no ledger" if eng == "specscope"
                            else f"not reported by this engine ({eng} does not time its rounds' parts)")
        has = snap["division"] is not None
        self.calc.setEnabled(has)
        self.comm.setEnabled(has)
        if has and not self._touched:
            self.reset_calculator()
        else:
            self._redraw()
            self._comm_changed()
        if s.get("predicted_speedup") is not None:
            note = (f"E = {fmt(s.get('tokens_per_round'), '.2f')} from the run · T_verify {fmt(s.get('t_verify_ms'), '.2f')} ms, "
                    f"T_draft {draft_time_text(s.get('t_draft_ms'), s.get('t_draft_ms_ci95'), unit=' ms')} timed apart"
                    + (f" · {rollback_term_text(s)}" if rollback_term_text(s) else ""))
        else:
            note = f"not available: {s.get('prediction_unavailable') or 'measuring'}"
        self.t_pred.set(fmt(s.get("predicted_speedup"), ".3f", "×"), note)
        self.t_pred.setToolTip(note)
        meas_note = (f"prediction error {prediction_error_text(s) or '—'} · {prediction_short(s)}"
                     + (f" · judged against the full rounds, {fmt(s.get('judged_measured_speedup'), '.3f', '×')}"
                        if tail_text(s) else "")
                     + f" · block-sum ruler would say {fmt(s.get('block_sum_predicted_speedup'), '.3f', '×')}")
        self.t_meas.set(fmt(s.get("measured_speedup"), ".3f", "×"), meas_note)
        self.t_meas.setToolTip(((s.get("prediction_verdict") or {}).get("text") or "") + "\n" + meas_note)
        be = s.get("break_even_verify_ms")
        if be is not None and be <= 0:  # no negative time: T_draft alone exceeds E·T_decode
            self.t_be.set("out of reach", f"T_draft alone exceeds E·T_decode; verify measured "
                                          f"{fmt(s.get('verify_multiple'), '.2f')}× T_decode")
        else:
            self.t_be.set(f"≤ {fmt(be, '.2f', ' ms')}",
                          f"≤ {fmt(s.get('break_even_multiple'), '.2f')}× T_decode; measured {fmt(s.get('verify_multiple'), '.2f')}× T_decode")
        if s.get("measured_speedup") is not None:
            self.audit.setText("\n\n".join(f"{q}\n{a}" for q, a in audit_answers(s)))
        else:
            self.audit.setText("")


def measured_communication(s: dict) -> tuple[float, float, float]:
    """(communication per decode step in ms, its share of decode, its share of verify): the barrier-free shares
    of the breakdown applied to the measured T_decode; zeros when the run has no communication (one machine)."""
    bd = s.get("breakdown") or {}
    shares = [((bd.get(side) or {}).get("communication_share") or {}).get("barrier_free") for side in ("decode", "verify")]
    sd, sv = (min(max(x or 0.0, 0.0), 1.0) for x in shares)
    return (s.get("t_decode_ms") or 0.0) * sd, sd, sv


def communication_text(s: dict, comm_ms: float) -> str:
    """What the communication what-if says, from the summary and the chosen communication per forward."""
    if not s.get("t_decode_ms") or s.get("t_verify_ms") is None or s.get("t_draft_ms") is None:
        return ""
    measured, sd, sv = measured_communication(s)
    k = s["k"]
    w = stats.communication_what_if(s["t_decode_ms"], s["t_verify_ms"], s["t_draft_ms"], k, sd, sv, comm_ms)
    now = stats.break_even_p(s["t_decode_ms"], s["t_verify_ms"], s["t_draft_ms"], k)

    def p_text(p):
        return "none: speculation cannot win at this k" if p is None else ("any (it wins at α = 0)" if p == 0 else f"α ≥ {p * 100:.1f}%")

    return (f"With {comm_ms:.2f} ms of communication per forward, the break-even acceptance is "
            f"{p_text(w['break_even_p'])} (verify = {fmt(w['verify_multiple'], '.2f')}× decode).\n"
            f"Measured: {p_text(now)}; communication {sd * 100:.0f}% of decode, {sv * 100:.0f}% of verify.")


def communication_details(s: dict, comm_ms: float) -> str:
    """The what-if's inputs, for the tooltip."""
    if not s.get("t_decode_ms") or s.get("t_verify_ms") is None or s.get("t_draft_ms") is None:
        return ""
    measured, sd, sv = measured_communication(s)
    w = stats.communication_what_if(s["t_decode_ms"], s["t_verify_ms"], s["t_draft_ms"], s["k"], sd, sv, comm_ms)
    return (f"k = {s['k']}. Compute (measured time less its barrier-free communication share): decode "
            f"{w['compute_decode_ms']:.2f} ms, verify {w['compute_verify_ms']:.2f} ms; each plus {comm_ms:.2f} ms gives "
            f"T_decode {w['t_decode_ms']:.2f} ms and T_verify {w['t_verify_ms']:.2f} ms; T_draft "
            + (f"{s['t_draft_ms']:.2f} ms as measured." if s["t_draft_ms"] > 0
               else f"below noise ({s['t_draft_ms']:.2f} ms, used as measured).") + f" Measured communication: {measured:.2f} ms per decode step. Geometric acceptance α assumed.")
