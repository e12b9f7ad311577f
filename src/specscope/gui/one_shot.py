"""One measurement whose answer the app shows at once (the model line's ``inspect``, the pre-flight line's
``preflight``): run in the worker as the Run button runs a run (``run_process.WorkerProcess``: the same command, the
same event lines), its result event or its error handed back once.

The owner keeps one at a time: a query whose answer is no longer wanted is ``cancel``-ed (disconnected, its worker
killed), so a late answer never arrives.
"""

from __future__ import annotations

import shiboken6
from PySide6 import QtCore

from specscope.errors import SpecscopeError
from specscope.events import Event
from specscope.profiler.run.measure_config import Measurement, kind_of

from .run_process import WorkerProcess, discard

KILLED = -1  # run_process's code for a worker that was killed or crashed


class OneShot(QtCore.QObject):
    """``cfg`` measured in a worker of its own; ``answered`` with its result event or ``failed`` with a message."""

    answered = QtCore.Signal(dict)  # the measurement's result event (its ``event`` is the measurement's kind)
    failed = QtCore.Signal(str)     # the worker's error message, or how it ended without an answer

    def __init__(self, cfg: Measurement, parent=None) -> None:
        super().__init__(parent)
        self.cfg, self.kind = cfg, kind_of(cfg)
        self.worker = WorkerProcess(self)
        self.worker.run_event.connect(self._on_event)
        self.worker.finished.connect(self._finished)
        self.result: Event | None = None
        self.error: str | None = None
        self.cancelled = False

    @property
    def proc(self) -> QtCore.QProcess | None:
        """The worker's process (None until started)."""
        return self.worker.proc

    def start(self) -> None:
        try:
            self.cfg.validate()  # bad input answered here, without a process that imports MLX
        except SpecscopeError as exc:
            msg = str(exc)
            QtCore.QTimer.singleShot(0, self, lambda: self._fail(msg))  # answered later, as a worker's would be
            return
        self.worker.start(self.cfg)

    def _on_event(self, ev: Event) -> None:
        if ev["event"] == self.kind and not ev.get("partial"):
            self.result = ev
        elif ev["event"] == "error":
            self.error = ev["message"]

    def _finished(self, code: int, stderr_tail: str, stopped: bool) -> None:
        if self.cancelled or not shiboken6.isValid(self):  # went with its owner (a window closed): nobody to tell
            return
        if self.result is not None:
            self.answered.emit(self.result)
            return
        last = next((ln for ln in reversed(stderr_tail.strip().splitlines()) if ln.strip()), "")
        killed = "the worker was killed or crashed" if code == KILLED else ""
        self._fail(self.error or killed or last or f"the worker ended with exit code {code}")

    def _fail(self, message: str) -> None:
        if not self.cancelled:
            self.failed.emit(message)

    def cancel(self) -> None:
        """No answer wanted any more: nothing is emitted from now on, the worker is killed and the objects freed."""
        self.cancelled = True
        if self.worker.proc is not None:
            discard(self.worker.proc)  # disconnected first: its end says nothing
        self.deleteLater()
