"""Tune page: which k, with which drafter — predicted speedup for every k from the acceptance trace (E(k)
walked at every k), the verify curve and draft steps timed apart, confirmed by interleaved runs; from the
session, or run now in the worker (``TuneConfig``, as ``specscope tune`` runs it). The table shows E(k) from the trace beside what the K_max rounds
would have read and what the confirmation runs measured."""

from __future__ import annotations

from typing import Sequence

from PySide6 import QtCore, QtWidgets

from specscope.errors import SpecscopeError
from specscope.profiler.analysis.formatting import DASH
from specscope.profiler.session.measured import TuneResult, TuneRow, recommendation

from ..charts.cost_data import tune_data
from ..charts.tune import TuneChart
from specscope.profiler.run.config import RunConfig
from specscope.profiler.run.measure_config import TuneConfig

from .common import fmt, plain_label, read_only_table, headline_label, spin_box
from .measurement_page import MeasurementPage
from ..charts.records import ChartTheme

DEFAULT_K_MAX, MAX_K_MAX = 4, 16  # specscope tune --k-max: default 4, 1..16 (a DFlash block of 16 drafts 15)
IDLE_TEXT = "Press “Tune k”: every drafter available for the model, every k up to K_max."
RUNNING_TEXT = "Tuning: the predictions come after one speculative run at K_max per drafter; then the confirmation runs."
# the predicted band is the bootstrap's 2.5–97.5 percentiles (its coverage is not tested, so it is not called 95%);
# the measured interval's is (tests/profiler/analysis/test_tune_confirm.py)
COLUMNS = ["drafter", "k or\ntree B", "E(k)\ntrace", "E(k)\nK_max rounds", "E(k)\nmeasured", "predicted", "bootstrap\n2.5–97.5 pct",
           "measured (95%,\npaired repeats)", "error", "at ±5%"]
AGREEMENT = {"agrees": "agrees", "off": "off", "too_little_data": "undecided"}  # the table's word; the tooltip says it all


def budgets_of(text: str) -> list[int] | None:
    """The tree budgets typed on the page ("2, 4, 8"), or None: none typed (chains only). Anything else is refused
    with the reason (the window shows it, and nothing starts)."""
    try:
        out = [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise SpecscopeError(f"tree budgets: {text!r} is not a list of node budgets (e.g. 2,4,8)") from None
    return out or None


def _pct(x) -> str:
    return fmt(None if x is None else 100 * x, "+.1f", "%")


def _measured(m, iv) -> str:
    if m is None:
        return DASH
    return fmt(m, ".3f", "×") + (f" ({fmt(iv[0], '.2f')}–{fmt(iv[1], '.2f')})" if iv else "")


def _agreement_word(row: TuneRow) -> str:
    agreement = row.get("agreement")
    state = agreement["state"] if agreement else None
    return AGREEMENT.get(state, DASH) if state else DASH


def _trace_note(tune: TuneResult) -> str:
    """Each drafter's trace in a line: positions, what it cost, E(k) walked on it."""
    parts = []
    for name, d in (tune.get("drafters") or {}).items():
        t = d.get("trace")
        if t and t.get("budgets"):  # a tree setting: E by budget
            es = ", ".join(f"B={b}: {fmt(e, '.2f')}" for b, e in zip(t["budgets"], t.get("tokens_per_round") or []))
            parts.append(f"{d.get('label', name)}: E(B) = {es}")
        elif t:
            es = " ".join(fmt(e, ".2f") for e in t.get("tokens_per_round") or [])
            cost = f", {ms / 1000:.1f} s" if (ms := t.get("cost_ms")) else ""
            parts.append(f"{d.get('label', name)}: {t['positions']} positions{cost}, E(k) = {es}"
                         + (" (an estimate)" if t.get("estimate") else ""))
    return ("\nAcceptance traces — " + "; ".join(parts)) if parts else ""


class TuneView(MeasurementPage):
    key = "tune"
    measure = "tune"
    what = "tune"

    def __init__(self, theme: ChartTheme, config=None, session=None, parent=None):
        super().__init__(config, session, parent)
        lay = self.page_layout
        self.k_max = spin_box(1, MAX_K_MAX, DEFAULT_K_MAX, "K_max = ")
        self.tree_budgets = QtWidgets.QLineEdit()
        self.tree_budgets.setPlaceholderText("tree budgets, e.g. 2,4,8")
        self.tree_budgets.setToolTip("Tune trees too (DFlash drafters, greedy): each budget B is a tree of at most B "
                                     "drafted nodes at the depth limit K_max, predicted and confirmed beside the chains")
        self.tree_budgets.setMaximumWidth(190)
        self.add_button_row("Tune k", "One speculative run at K_max per drafter, predictions for every k, then "
                            "confirmation runs", self.k_max, self.tree_budgets)
        self.run_btn = self.start_btn
        self.recommendation = headline_label(IDLE_TEXT)
        lay.addWidget(self.recommendation)
        self.assumption = plain_label("")
        self.assumption.setObjectName("tileNote")
        lay.addWidget(self.assumption)
        # chart above the table: the table's eleven columns need the page's width (a user can drag the split)
        split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        self.chart = TuneChart(theme)
        split.addWidget(self.chart)
        self.table = read_only_table(COLUMNS)
        split.addWidget(self.table)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setSizes([540, 420])  # rows for every k of three drafters at K_max 4 without scrolling, at 900 px high
        lay.addWidget(split, 1)

    def follow_k(self, k: int) -> None:
        """Tune up to the setup's k at least (DFlash: 15), never below the default 4."""
        self.k_max.setValue(min(self.k_max.maximum(), max(DEFAULT_K_MAX, k)))

    def apply_theme(self, theme: ChartTheme) -> None:
        self.chart.apply_theme(theme)

    def measurement(self, cfg: RunConfig) -> TuneConfig:
        """The setup's model (and draft model) and tokens per run, tuned up to the page's K_max."""
        return TuneConfig(model=cfg.model, demo=cfg.demo, allow_oversize=cfg.allow_oversize,
                          draft_model=cfg.draft_model or None, k_max=self.k_max.value(), max_tokens=cfg.max_tokens,
                          tree_budgets=budgets_of(self.tree_budgets.text()))

    def set_tune(self, tune: TuneResult | None) -> None:
        self._show(tune)

    def draw(self, tune: TuneResult | None) -> None:
        self.chart.set_data(tune_data(tune))
        rec = recommendation(tune)
        if not tune:
            self.recommendation.setText(self.idle_text(IDLE_TEXT, RUNNING_TEXT))
            self.assumption.setText("")
            self.table.setRowCount(0)
            return
        if tune.get("partial"):  # predictions in, confirmations still running: no recommendation yet
            self.recommendation.setText("tuning… predictions are in; the confirmation runs fill the measured column")
        else:
            self.recommendation.setText((rec.get("text") if rec else None) or "tuning…")
        self.assumption.setText(tune.get("assumption", "") + _trace_note(tune))
        rows = tune.get("rows") or []
        self.table.setRowCount(len(rows))
        for i, r in enumerate(rows):
            ci: Sequence[float | None] = r.get("predicted_ci95") or [None, None]
            trace = r.get("acceptance_source") == "trace"
            k = f"B={r['k']}" if r.get("tree_budget") else str(r.get("k", ""))  # a tree setting's budget
            cells = [r.get("drafter", ""), k,
                     fmt(r.get("tokens_per_round") if trace else None, ".2f"),
                     fmt(r.get("tokens_per_round_k_max_rounds", None if trace else r.get("tokens_per_round")), ".2f"),
                     fmt(r.get("measured_tokens_per_round"), ".2f"), fmt(r.get("predicted_speedup"), ".3f", "×"),
                     f"{fmt(ci[0], '.2f')}–{fmt(ci[1], '.2f')}" if ci[0] is not None else DASH,
                     _measured(r.get("measured_speedup"), r.get("measured_ci95")),
                     _pct(r.get("prediction_error")), _agreement_word(r)]
            for j, text in enumerate(cells):
                item = QtWidgets.QTableWidgetItem(text)
                if j:
                    item.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
                if rec and r.get("drafter") == rec.get("drafter") and r.get("k") == rec.get("k"):
                    f = item.font()
                    f.setBold(True)
                    item.setFont(f)
                if j == len(cells) - 1 and (agreement := r.get("agreement")):
                    item.setToolTip(agreement["text"])
                self.table.setItem(i, j, item)
