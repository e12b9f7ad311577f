"""The session model the views observe.

It owns a ``profiler.session.session.Session``, folds worker events into it, autosaves it
atomically as it grows, and — at most 4 times a second (FRAME_MS), only when something
changed — publishes one snapshot of plain values (the summary and the chart
series) through a Qt signal. Views never compute statistics: they draw what the
snapshot says.

Snapshots are built incrementally (``profiler.analysis.summary.LiveSummary``, ``charts.live_data.LiveChartData``):
each folds only the steps and rounds that arrived since the last one, so a snapshot late in a long
run costs what one early in it does. They equal a full recomputation (tested).
"""

from __future__ import annotations

import time

from PySide6 import QtCore

from specscope.events import Event
from specscope.profiler.run.events import AUTOSAVE_EVENTS, AUTOSAVE_SECONDS
from specscope.profiler.session.session import Session
from specscope.profiler.analysis.session_file import save_session
from specscope.profiler.analysis.summary import LiveSummary

from .charts.live_data import LiveChartData
from .records import Snapshot, SweepSnapshot

# ≤ 4 redraws per second, whatever the token rate: on a 2-core machine every repaint
# (pyqtgraph axes dominate) is CPU taken from the engine being measured; see `specscope bench gui`.
FRAME_MS = 250


class SessionModel(QtCore.QObject):
    snapshot = QtCore.Signal(dict)       # summary + chart series, plain values
    cases_changed = QtCore.Signal(list)  # list of (case dict, case stats) rows for the table
    status_changed = QtCore.Signal(str)  # session status: empty | running | complete | incomplete | failed
    session_replaced = QtCore.Signal()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.session = Session()
        self.autosave_path: str | None = None
        self.autosave_error: str | None = None  # why the last autosave failed, if it did
        self._dirty = False
        self._cases_dirty = False
        self._last_save = 0.0
        self._last_status = self.session.status
        self._timer = QtCore.QTimer(self)
        self._timer.setInterval(FRAME_MS)
        self._timer.timeout.connect(self._publish)
        self._timer.start()
        self.last_snapshot: Snapshot | None = None  # none before the first frame
        self.last_cases: list | None = None  # the rows cases_changed last sent (a page built later starts from them)

    # -- input ------------------------------------------------------------------
    def reset(self, session: Session | None = None, autosave_path: str | None = None) -> None:
        self.session = session or Session()
        self.autosave_path = autosave_path
        self.autosave_error = None
        self._dirty = self._cases_dirty = True
        self.session_replaced.emit()
        self.flush()

    def apply(self, ev: Event) -> None:
        self.session.apply(ev)
        self._dirty = True
        if ev.get("event") in ("case_started", "case_done", "breakdown", "run_started", "run_done", "error", "repeat_done"):
            self._cases_dirty = True
        if self.autosave_path and (ev.get("event") in AUTOSAVE_EVENTS
                                   or time.monotonic() - self._last_save > AUTOSAVE_SECONDS):
            self.save_autosave(compact=ev.get("event") not in ("run_done", "error"))

    def mark_incomplete(self, reason: str) -> None:
        self.session.mark_incomplete(reason)
        self._dirty = self._cases_dirty = True
        self.save_autosave()
        self.flush()

    def save_autosave(self, compact: bool = False) -> None:
        """Write the session atomically; a failure (disk full, folder gone) is remembered, not raised:
        the data stays in memory and the last good file on disk is untouched. ``compact``: one line,
        for the saves during a run (the indented file is written when the run ends)."""
        if self.autosave_path:
            try:
                save_session(self.session, self.autosave_path, live=self._live_data().live, compact=compact)
                self.autosave_error = None
            except OSError as exc:
                self.autosave_error = exc.strerror or str(exc)
            self._last_save = time.monotonic()

    # -- output -----------------------------------------------------------------
    def mark_dirty(self) -> None:
        """Publish with the next frame."""
        self._dirty = True

    def flush(self) -> None:
        """Publish now (used when a run ends or a file is opened)."""
        self._dirty = True
        self._publish()

    def _publish(self) -> None:
        if self.session.status != self._last_status:
            self._last_status = self.session.status
            self.status_changed.emit(self.session.status)
        if not self._dirty:
            return
        self._dirty = False
        s = self.session
        live = self._live_data()
        summary = live.live.summary()
        snap: Snapshot = {**live.chart_data(summary),
                          "status": s.status,
                          "errors": list(s.data.get("errors", [])),
                          "environment": dict(s.data.get("environment", {})),
                          "model": dict(s.data.get("model", {})),
                          "config": dict(s.config),
                          "measure": str(s.data.get("measure") or "run"),
                          "n_cases_done": sum(1 for c in s.cases if c.get("complete")),
                          "n_cases": s.config.get("n_cases") or len(s.cases)}
        sweep = self._sweep_snapshot(s)
        if sweep:
            snap["sweep"] = sweep
        self.last_snapshot = snap
        self.snapshot.emit(snap)
        if self._cases_dirty:
            self._cases_dirty = False
            self.last_cases = [(c, live.live.case_stats(c)) for c in s.cases]
            self.cases_changed.emit(self.last_cases)

    def _sweep_snapshot(self, s: Session) -> SweepSnapshot | None:
        """A sweep's session (its cases are in its points; its top level has none): what the verdict bar and the
        status bar say instead of "No verdict yet" and "0/3 cases". Figures recomputed only when a point changes."""
        sw = s.data.get("sweep")
        if not sw or s.cases:
            return None
        from specscope.profiler.analysis.sweep import dominant_effect, sweep_figures, sweep_status, sweep_verdict

        key = (id(sw), tuple((p.get("context"), p.get("complete"), p.get("visits")) for p in sw.get("points") or []))
        if getattr(self, "_sweep_key", None) != key:
            self._sweep_key, self._sweep_rows = key, sweep_figures(s)
        rows = self._sweep_rows
        return {"status": sweep_status(s), "verdict": sweep_verdict(rows), "effect": dominant_effect(rows),
                "contexts": len(rows)}

    def _live_data(self) -> LiveChartData:
        """The incremental summary and chart series of the current session (new ones for a new session)."""
        live = getattr(self, "_live", None)
        if live is None or live.session is not self.session:
            live = self._live = LiveChartData(self.session, LiveSummary(self.session))
        return live
