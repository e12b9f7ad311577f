"""Live page: throughput over time with the predicted line, the clock probe under it (with the drift
warning), acceptance with its band, tokens per round."""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from specscope.profiler.analysis.verdict import (acceptance_phrase, instrumentation_cost_text, ledger_text, prediction_error_text,
                                       prediction_short)

from ..charts import AcceptanceChart, ThroughputChart, TokensPerRoundChart
from ..charts.probe import ProbeChart
from specscope.profiler.analysis.formatting import rate
from specscope.profiler.analysis.intervals import draft_time_text

from .common import Tile, fmt


def _repeats(iv) -> str:
    """The spread of the repeats around a pooled rate, for a tile's caption ("" for one repeat)."""
    return f" · pooled, repeats {iv[0]:.1f}–{iv[1]:.1f}" if iv else ""


class LiveView(QtWidgets.QWidget):
    def __init__(self, theme: dict, parent=None):
        super().__init__(parent)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(8, 8, 8, 8)
        tile_row = QtWidgets.QWidget()
        # A fixed height: tiles whose text changes must not resize the charts below on every
        # update (each resize repaints every chart, which costs the engine CPU). Each tile's note
        # keeps room for Tile.NOTE_LINES lines and elides past them (the whole note in its tooltip).
        tiles = QtWidgets.QHBoxLayout(tile_row)
        tiles.setContentsMargins(0, 0, 0, 0)
        self.t_plain = Tile("Plain decoding")
        self.t_spec = Tile("Speculative")
        self.t_pred = Tile("Predicted speculative")
        self.t_speed = Tile("Speedup (measured)")
        self.t_acc = Tile("Acceptance")
        for t in (self.t_plain, self.t_spec, self.t_pred, self.t_speed, self.t_acc):
            tiles.addWidget(t)
        tile_row.setFixedHeight(max(t.sizeHint().height() for t in (self.t_plain, self.t_spec)))
        lay.addWidget(tile_row)
        self.throughput = ThroughputChart(theme)
        self.acceptance = AcceptanceChart(theme)
        self.tpr = TokensPerRoundChart(theme)
        self.probe = ProbeChart(theme)
        self.probe.setMinimumHeight(150)
        split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        split.addWidget(self.throughput)
        split.addWidget(self.probe)
        bottom = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        bottom.addWidget(self.acceptance)
        bottom.addWidget(self.tpr)
        bottom.setStretchFactor(0, 3)
        bottom.setStretchFactor(1, 2)
        split.addWidget(bottom)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setStretchFactor(2, 3)
        lay.addWidget(split, 1)
        self.charts = [self.throughput, self.probe, self.acceptance, self.tpr]

    def apply_theme(self, theme: dict) -> None:
        for c in self.charts:
            c.apply_theme(theme)

    def update_snapshot(self, snap: dict) -> None:
        s = snap["summary"]
        self.throughput.set_data(snap["throughput"])
        if "probe" in snap:
            self.probe.set_data(snap["probe"])
        self.acceptance.set_data(snap["acceptance"])
        self.tpr.set_data(snap["tokens_per_round"])
        self.t_plain.caption.setText("Plain decoding" + _repeats(s.get("plain_tok_s_spread")))
        self.t_spec.caption.setText("Speculative" + _repeats(s.get("spec_tok_s_spread")))
        self.t_plain.set(rate(s.get("plain_tok_s"), " tok/s"),
                         f"T_decode {fmt(s.get('t_decode_ms'), '.2f', ' ms')}")
        spec_note = f"T_verify {fmt(s.get('t_verify_ms'), '.2f', ' ms')} · T_draft {draft_time_text(s.get('t_draft_ms'), s.get('t_draft_ms_ci95'), unit=' ms')}"
        if s.get("instrumentation_cost") is not None:
            spec_note += f" · timing apart costs {instrumentation_cost_text(s)}"
        self.t_spec.set(rate(s.get("spec_tok_s"), " tok/s"), spec_note)
        self.t_spec.setToolTip(spec_note)
        pred_note = (f"predicted speedup {fmt(s.get('predicted_speedup'), '.3f', '×')} (timed apart)"
                     if s.get("predicted_speedup") is not None
                     else f"no prediction yet ({s.get('prediction_unavailable') or 'measuring'})")
        self.t_pred.set(rate(s.get("predicted_tok_s"), " tok/s"), pred_note)
        self.t_pred.setToolTip(pred_note + (f"\n{ledger_text(s)}" if ledger_text(s) else ""))
        m = s.get("measured_speedup")
        speed_note = f"prediction error {prediction_error_text(s) or '—'} · {prediction_short(s)}"
        self.t_speed.set(fmt(m, ".3f", "×"), speed_note)
        self.t_speed.setToolTip(((s.get("prediction_verdict") or {}).get("text") or speed_note))
        p = s.get("p")
        phrase = acceptance_phrase(s)
        self.t_acc.set(fmt(p * 100, ".1f", "%") if p is not None else "—",
                       phrase.split(" ", 2)[2] if p is not None else "no rounds yet")
        self.t_acc.setToolTip(acceptance_phrase(s))
