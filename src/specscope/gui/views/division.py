"""Division page: the round model's speedup over α, measured points, break-even, a what-if calculator, and a
communication what-if ("with X ms of communication per forward, the break-even acceptance is …"). Every predicted
figure is ``RoundModel``'s (``from_summary``, then ``what_if``, ``at_alpha``, ``break_even_alpha``)."""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from specscope.profiler.analysis.tree_text import budget_what_if_text
from specscope.profiler.analysis.tree_what_if import budget_what_if
from specscope.profiler.analysis import stats
from specscope.profiler.analysis.formatting import rate
from specscope.profiler.analysis.round_model import REST, RoundModel, communication_what_if
from specscope.profiler.session.records import Summary, engine_facts
from specscope.profiler.analysis.intervals import draft_time_text
from specscope.profiler.analysis.verdict import audit_answers, ledger_text, rollback_term_text

from ..charts import BudgetChart, DivisionChart
from ..charts import data as chart_data
from ..records import Snapshot
from .common import LEDGER_LABEL, Tile, fmt, plain_label, set_speedup_tile
from ..charts.records import ChartTheme


class DivisionView(QtWidgets.QWidget):
    def __init__(self, theme: ChartTheme, model, parent=None):
        super().__init__(parent)
        self.model = model  # SessionModel: the calculator re-derives the curve through the shared data function
        self._snap: Snapshot | None = None
        lay = QtWidgets.QHBoxLayout(self)
        lay.setContentsMargins(8, 8, 8, 8)
        self.chart = DivisionChart(theme)
        # a tree run's budget what-if under the division (hidden for a chain run): the speedup at other budgets
        self.budgets = BudgetChart(theme)
        self.budgets.setVisible(False)
        left = QtWidgets.QVBoxLayout()
        left.setContentsMargins(0, 0, 0, 0)
        left.addWidget(self.chart, 3)
        left.addWidget(self.budgets, 2)
        lay.addLayout(left, 3)

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
        scroll.setMinimumWidth(350)  # the calculator group (334 px at least) and the scroll bar: no text cut at the right
        scroll.setMaximumWidth(470)
        lay.addWidget(scroll, 1)
        self._touched = False
        self.tv.valueChanged.connect(self._calc_changed)
        self.p.valueChanged.connect(self._calc_changed)

    def apply_theme(self, theme: ChartTheme) -> None:
        self.chart.apply_theme(theme)
        self.budgets.apply_theme(theme)

    def reset_calculator(self) -> None:
        s = self._snap["summary"] if self._snap else None
        self._touched = False
        for w in (self.tv, self.p):
            w.blockSignals(True)
        if s and (tv := s["t_verify_ms"]) is not None:
            self.tv.setValue(tv)
        alpha = stats.alpha_for_tokens_per_round(s["tokens_per_round"] if s else None, (s["k"] if s else 0) or 1)
        if alpha is not None:  # the calculator works on the chart's axis: α, placed at the run's E
            self.p.setValue(100 * alpha)
            self.p_slider.blockSignals(True)
            self.p_slider.setValue(round(1000 * alpha))
            self.p_slider.blockSignals(False)
        for w in (self.tv, self.p):
            w.blockSignals(False)
        self.comm_ms.blockSignals(True)
        self.comm_ms.setValue(measured_communication(s)[0] if s else 0.0)
        self.comm_ms.blockSignals(False)
        self._redraw()
        self._comm_changed()

    def _comm_changed(self, *_):
        s = self._snap["summary"] if self._snap and self._snap["division"] else None
        self.comm_result.setText(communication_text(s, self.comm_ms.value()) if s else "")
        self.comm_result.setToolTip(communication_details(s, self.comm_ms.value()) if s else "")

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
        if self._touched and d and (what_if := d["what_if"]):
            self.result.setText(what_if_text(s, self.tv.value(), what_if["p"]))
        elif d:
            self.result.setText("Edit T_verify or α to move the curve.")

    def update_snapshot(self, snap: Snapshot) -> None:
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
            note = (f"{s.get('prediction_formula') or ''} · E = {fmt(s.get('tokens_per_round'), '.2f')} from the run · "
                    f"T_verify {fmt(s.get('t_verify_ms'), '.2f')} ms, "
                    f"T_draft {draft_time_text(s.get('t_draft_ms'), s.get('t_draft_ms_ci95'), unit=' ms')} timed apart"
                    + (f" · {rollback_term_text(s)}" if rollback_term_text(s) else ""))
        else:
            note = f"not available: {s.get('prediction_unavailable') or 'measuring'}"
        self.t_pred.set(fmt(s.get("predicted_speedup"), ".3f", "×"), note)
        self.t_pred.setToolTip(note)
        set_speedup_tile(self.t_meas, s, "Measured speedup",
                         f" · block-sum ruler would say {fmt(s.get('block_sum_predicted_speedup'), '.3f', '×')}")
        self.t_be.set(*break_even_tile(s))
        w = budget_what_if(self.model.session, s) if s.get("tree") and s.get("measured_speedup") is not None else None
        self.budgets.setVisible(w is not None)
        self.budgets.set_data(w)
        if s.get("measured_speedup") is not None:
            tree_what_if = budget_what_if_text(self.model.session, s, w)
            self.audit.setText("\n\n".join([f"{q}\n{a}" for q, a in audit_answers(s)]
                                             + ([tree_what_if] if tree_what_if else [])))
        else:
            self.audit.setText("")


def measured_communication(s: Summary) -> tuple[float, float, float]:
    """(communication per decode step in ms, its share of decode, its share of verify): the barrier-free shares
    of the breakdown applied to the measured T_decode; zeros when the run has no communication (one machine)."""
    bd = s.get("breakdown")
    shares = [cs["barrier_free"] if (cs := phase.get("communication_share")) else None
              for phase in ((bd["decode"], bd["verify"]) if bd else ())] or [None, None]
    sd, sv = (min(max(x or 0.0, 0.0), 1.0) for x in shares)
    return (s.get("t_decode_ms") or 0.0) * sd, sd, sv


def _p_text(p) -> str:
    return "none: speculation cannot win at this k" if p is None else ("any (it wins at α = 0)" if p == 0 else f"α ≥ {p * 100:.1f}%")


def communication_text(s: Summary, comm_ms: float) -> str:
    """What the communication what-if says, from the summary and the chosen communication per forward: the whole
    round's break-even acceptance (``round_model.communication_what_if``), rollback and bookkeeping as timed."""
    model = RoundModel.from_summary(s)
    if model is None or not model.t_decode_ms:
        return ""
    measured, sd, sv = measured_communication(s)
    k = s["k"]
    w = communication_what_if(model, k, sd, sv, comm_ms)
    return (f"With {comm_ms:.2f} ms of communication per forward, the break-even acceptance is "
            f"{_p_text(w['break_even_p'])} (verify = {fmt(w['verify_multiple'], '.2f')}× decode; the whole round).\n"
            f"Measured: {_p_text(model.break_even_alpha(k))}; communication {sd * 100:.0f}% of decode, "
            f"{sv * 100:.0f}% of verify.")


def communication_details(s: Summary, comm_ms: float) -> str:
    """The what-if's inputs, for the tooltip."""
    model = RoundModel.from_summary(s)
    if model is None or not model.t_decode_ms:
        return ""
    measured, sd, sv = measured_communication(s)
    w = communication_what_if(model, s["k"], sd, sv, comm_ms)
    return (f"k = {s['k']}. Compute (measured time less its barrier-free communication share): decode "
            f"{w['compute_decode_ms']:.2f} ms, verify {w['compute_verify_ms']:.2f} ms; each plus {comm_ms:.2f} ms gives "
            f"T_decode {w['t_decode_ms']:.2f} ms and T_verify {w['t_verify_ms']:.2f} ms; T_draft "
            f"{draft_time_text(model.t_draft_ms, s.get('t_draft_ms_ci95'), unit=' ms')} as measured"
            + "".join(f", {name} {v:.2f} ms" for name, v in (("T_rollback", model.t_rollback_ms),
                                                             ("T_bookkeeping", model.t_bookkeeping_ms)) if v is not None)
            + f" as timed apart. Round: {model.formula}. Measured communication: {measured:.2f} ms per decode step. "
            "Geometric acceptance α assumed.")


def what_if_text(s: Summary, t_verify_ms: float, alpha: float) -> str:
    """The calculator's answer: the round model at this T_verify and α (``RoundModel.what_if`` / ``at_alpha``), the
    seed's division beside it where the round pays more, and the break-even verify of the whole round."""
    model = RoundModel.from_summary(s)
    if model is None:
        return ""
    m = model.what_if(t_verify_ms=t_verify_ms).at_alpha(alpha, s["k"])
    ledger = s.get("division_inputs") == "rounds"
    name = LEDGER_LABEL if ledger else "predicted speedup (the whole round)"
    lines = [f"At α = {alpha * 100:.1f}% (E = {m.tokens_per_round:.2f}) and T_verify = {t_verify_ms:.2f} ms:",
             f"{name} {fmt(m.speedup, '.3f', '×')} ({rate(m.predicted_tok_s, ' tok/s')})"]
    if any(getattr(m, t) for t in REST) and m.division is not None:
        lines.append(f"the seed's division, without rollback and bookkeeping: {m.division:.3f}×")
    be = m.break_even_verify_ms
    lines.append(f"verify costs {fmt(m.verify_multiple, '.2f')} plain steps; "
                 + (f"break-even T_verify ≤ {be:.2f} ms ({m.break_even_multiple:.2f}× T_decode; {m.break_even_formula})"
                    if m.break_even_multiple is not None
                    else f"break-even out of reach ({m.break_even_formula} ≤ 0: no verify, however fast, can pay)"))
    lines.append("(geometric acceptance α assumed for the what-if)")
    return "\n".join(lines)


def break_even_tile(s: Summary) -> tuple[str, str]:
    """The break-even tile's value and note, from the summary's whole-round break-even and its formula."""
    formula = s.get("break_even_formula") or "E·T_decode − T_draft"
    measured = f"verify measured {fmt(s.get('verify_multiple'), '.2f')}× T_decode"
    if s.get("break_even_out_of_reach"):
        return "out of reach", f"{formula} ≤ 0: no verify, however fast, can pay; {measured}"
    be = s.get("break_even_verify_ms")
    if be is None:
        return "—", measured
    ledger = f"; from the {LEDGER_LABEL}" if s.get("division_inputs") == "rounds" else ""
    return (f"≤ {fmt(be, '.2f', ' ms')}",
            f"≤ {fmt(s.get('break_even_multiple'), '.2f')}× T_decode ({formula}); {measured}{ledger}")
