"""Live page: throughput over time with the predicted line, the clock probe under it (with the drift
warning), acceptance with its band, tokens per round."""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from specscope.profiler.analysis.verdict import acceptance_phrase, instrumentation_cost_text, ledger_text

from ..charts import AcceptanceChart, ThroughputChart, TokensPerRoundChart
from ..charts.probe import ProbeChart
from specscope.profiler.analysis.formatting import rate
from specscope.profiler.analysis.intervals import draft_time_text
from specscope.profiler.analysis.energy import energy_phrase
from specscope.profiler.session.measured import EnergySummary

from .common import Tile, fmt, set_speedup_tile
from ..records import Snapshot
from ..charts.records import ChartTheme

COMPACT_BELOW = 640  # a Live page shorter than this (px) puts the clock probe beside the throughput


def _repeats(iv) -> str:
    """The spread of the repeats around a pooled rate, for a tile's caption ("" for one repeat)."""
    return f" · pooled, repeats {iv[0]:.1f}–{iv[1]:.1f}" if iv else ""


def energy_tile(e: EnergySummary) -> tuple[str, str, str]:
    """The Energy tile's value, note and tooltip: speculative J per token and the ratio to plain, or why not."""
    if not e["available"]:
        short = "not available here" if "macOS" in (e["reason"] or "") else "not available"
        return "—", short, e["reason"] or "not available"
    spec = e["spec"]
    value = f"{spec['joules_per_token']:.3f} J" if spec and spec["joules_per_token"] is not None else "—"
    ratio = f"{e['ratio']:.2f}× plain's" if e["ratio"] is not None else "no ratio yet"
    note = f"speculative · {ratio}" + (" · GPU only" if e["domain"] == "gpu" else "")
    return value, note, energy_phrase(e) + (f"\n{e['note']}" if e["note"] else "")


class LiveView(QtWidgets.QWidget):
    def __init__(self, theme: ChartTheme, parent=None):
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
        self.t_speed = Tile("Speedup")
        self.t_acc = Tile("Acceptance")
        self.t_energy = Tile("Energy per token")
        for t in (self.t_plain, self.t_spec, self.t_pred, self.t_speed, self.t_acc, self.t_energy):
            tiles.addWidget(t)
        tile_row.setFixedHeight(max(t.sizeHint().height() for t in (self.t_plain, self.t_spec)))
        lay.addWidget(tile_row)
        self.throughput = ThroughputChart(theme)
        self.acceptance = AcceptanceChart(theme)
        self.tpr = TokensPerRoundChart(theme)
        self.probe = ProbeChart(theme)
        self.probe.setMinimumHeight(150)
        # throughput over the clock probe, over acceptance beside tokens per round; on a short page (a 13" laptop)
        # the probe goes beside the throughput instead: three charts stacked there leave each too little height
        self.split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        self.top = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        self.top.addWidget(self.throughput)
        self.top.addWidget(self.probe)
        self.top.setStretchFactor(0, 3)
        self.top.setStretchFactor(1, 2)
        self.split.addWidget(self.top)
        bottom = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        bottom.addWidget(self.acceptance)
        bottom.addWidget(self.tpr)
        bottom.setStretchFactor(0, 3)
        bottom.setStretchFactor(1, 2)
        self.split.addWidget(bottom)
        self.split.setStretchFactor(0, 5)
        self.split.setStretchFactor(1, 3)
        lay.addWidget(self.split, 1)
        self.charts = [self.throughput, self.probe, self.acceptance, self.tpr]

    def compact(self) -> bool:
        """Whether the clock probe sits beside the throughput (a page under COMPACT_BELOW px high)."""
        return self.top.orientation() == QtCore.Qt.Orientation.Horizontal

    def resizeEvent(self, e: QtGui.QResizeEvent) -> None:  # noqa: N802 (Qt naming)
        super().resizeEvent(e)
        compact = e.size().height() < COMPACT_BELOW
        if compact == self.compact():
            return  # sizes the user dragged stay
        self.top.setOrientation(QtCore.Qt.Orientation.Horizontal if compact else QtCore.Qt.Orientation.Vertical)
        along = self.top.width() if compact else self.top.height()
        self.top.setSizes([along * 3 // 5, along - along * 3 // 5])
        h = self.split.height()
        self.split.setSizes([h // 2, h - h // 2] if compact else [h * 5 // 8, h - h * 5 // 8])

    def apply_theme(self, theme: ChartTheme) -> None:
        for c in self.charts:
            c.apply_theme(theme)

    def update_snapshot(self, snap: Snapshot) -> None:
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
        pred_note = (f"predicted speedup {fmt(s.get('predicted_speedup'), '.3f', '×')}: {s.get('prediction_formula')}, "
                     "timed apart"
                     if s.get("predicted_speedup") is not None
                     else f"no prediction yet ({s.get('prediction_unavailable') or 'measuring'})")
        self.t_pred.set(rate(s.get("predicted_tok_s"), " tok/s"), pred_note)
        self.t_pred.setToolTip(pred_note + (f"\n{ledger_text(s)}" if ledger_text(s) else ""))
        # the figure the prediction error is judged against, beside that error (the full rounds where they differ)
        set_speedup_tile(self.t_speed, s, "Speedup")
        p = s.get("p")
        phrase = acceptance_phrase(s)
        tree = s.get("tree")
        if tree:  # a tree run: its acceptance is the accepted path, beside what the tree verified for it
            self.t_acc.caption.setText(f"Accepted path (tree, budget {tree['budget']})")
            E = s.get("tokens_per_round")
            self.t_acc.set(fmt(E - 1 if E is not None else None, ".2f"),
                           f"E {fmt(E, '.2f')} · {fmt(tree['nodes_per_round'], '.1f')} nodes verified a round · "
                           f"{fmt(tree['nodes_per_accepted'], '.2f')} per accepted token")
        else:
            self.t_acc.caption.setText("Acceptance")
            self.t_acc.set(fmt(p * 100, ".1f", "%") if p is not None else "—",
                           phrase.split(" ", 2)[2] if p is not None else "no rounds yet")
        self.t_acc.setToolTip(acceptance_phrase(s))
        value, note, tip = energy_tile(s["energy"])
        self.t_energy.set(value, note)
        self.t_energy.setToolTip(tip)
