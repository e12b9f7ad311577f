"""The verdict line at the top: profiler.analysis.verdict's plain words, plus the acceptance phrase."""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from specscope.profiler.analysis.drift import drift_warning
from specscope.profiler.analysis.verdict import (SAMPLED_NOTE, tail_text, acceptance_phrase, divergence_note, engine_fault_line,
                                        measurement_headline, prediction_error_text, verdict)

from .common import FittingLabel, plain_label
from ..records import Snapshot

# Lines each part of the bar may take before it ends in "…" (the whole text in its tooltip), for a window
# under COMPACT_BELOW px high (a 13" laptop) and for a taller one: a long verdict must leave the page room.
COMPACT_BELOW = 900
LINES = {"compact": {"headline": 3, "detail": 2, "drift": 2}, "tall": {"headline": 5, "detail": 3, "drift": 3}}


def _fitting(text: str, lines: int) -> FittingLabel:
    lab = FittingLabel(text, lines)
    lab.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
    return lab


class VerdictBar(QtWidgets.QFrame):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("verdict")
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(14, 8, 14, 8)
        lay.setSpacing(2)
        tall = LINES["tall"]
        self.headline = _fitting("Pick a model and press Run (Ctrl+R), or open a saved session (Ctrl+O).", tall["headline"])
        self.headline.setObjectName("verdictHead")
        self.detail = _fitting("", tall["detail"])
        self.detail.setObjectName("verdictDetail")
        self.error = plain_label("")
        self.error.setObjectName("errorBanner")
        self.error.hide()
        self.drift = _fitting("", tall["drift"])  # the clock probe's speed changed by more than its own noise
        self.drift.setObjectName("driftWarning")
        self.drift.hide()
        lay.addWidget(self.headline)
        lay.addWidget(self.detail)
        lay.addWidget(self.drift)
        lay.addWidget(self.error)

    def fit_window_height(self, height: int) -> None:
        """Give each part its line budget for a window ``height`` px high (the window calls it on resizes)."""
        budget = LINES["compact" if height < COMPACT_BELOW else "tall"]
        for key, n in budget.items():
            getattr(self, key).set_max_lines(n)

    def update_snapshot(self, snap: Snapshot) -> None:
        s = snap["summary"]
        status = snap.get("status")
        if status == "empty":
            return
        head = verdict(s)
        if status == "running":
            head = "Running — " + head if s.get("measured_speedup") is None else "So far: " + head
        elif status == "incomplete":
            head = "Incomplete run — " + head
        self.headline.setText(head)
        bits = [acceptance_phrase(s)]
        if s.get("predicted_speedup") is not None and s.get("measured_speedup") is not None:
            err = prediction_error_text(s)
            full = tail_text(s) is not None
            judged = f"{s['judged_measured_speedup']:.3f}× over the full rounds" if full else f"{s['measured_speedup']:.3f}×"
            # the error next to the figure it is judged against; the end-to-end figure after it, named
            bits.append(f"predicted {s['predicted_speedup']:.3f}× (components timed apart) vs measured "
                        f"{judged}" + (f" (error {err})" if err is not None else "")
                        + (f"; end to end, all rounds {s['measured_speedup']:.3f}×" if full else ""))
        if s.get("ledger_speedup") is not None:
            bits.append(f"ledger {s['ledger_speedup']:.3f}× (a consistency check)")
        if s.get("regime", "greedy") != "greedy":
            bits.append(SAMPLED_NOTE)  # never a "greedy match" for outputs that differ by design
        elif (note := divergence_note(s)) and not engine_fault_line(s):
            bits.append(note)  # a near-tie (kernel rounding), or a divergence never measured
        sweep = snap.get("sweep")
        if sweep:  # a context sweep: no single verdict, one per context (the Context page)
            self.headline.setText(sweep["verdict"])
            bits = [sweep["status"]] + ([sweep["effect"]] if sweep.get("effect") else [])
        measured = measurement_headline(snap.get("measure"), status)
        if measured:  # not a run (a page's measurement, a check, a benchmark): no verdict; its page says it all
            self.headline.setText(measured)
            bits = []
        if snap.get("model", {}).get("demo"):
            from specscope.demo_labels import demo_note

            bits.append(demo_note(snap["model"]["demo"]))
        self.detail.setText("  ·  ".join(bits))
        warn = drift_warning(s.get("probe"))
        self.drift.setText(f"⚠ {warn[0].upper() + warn[1:]}" if warn else "")
        self.drift.setVisible(bool(warn))
        errs = snap.get("errors") or []
        fault = engine_fault_line(s)
        if fault:  # the headline leads with it too; the banner says it whatever the status
            self.error.setText("Run failed — " + fault)
            self.error.show()
        elif errs and status in ("failed", "incomplete"):
            self.error.setText(("Run failed: " if status == "failed" else "Run ended early: ") + errs[-1])
            self.error.show()
        else:
            self.error.hide()
