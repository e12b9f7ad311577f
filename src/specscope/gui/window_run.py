"""The main window's run control: start and stop a run in the worker process, follow its events, say how it ended,
and keep the buttons and the progress bar (with its ETA) in step.

A page's measurement (Verify cost, Tune, Context: ``views.measurement_page``) runs the same way: its config in the
worker, a new session folded from its events by ``Session.apply``, the same Stop, progress, errors and autosave.
One measurement at a time: while one runs, every start button is disabled and its tooltip says why."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from PySide6 import QtCore, QtGui, QtWidgets

from specscope.events import Event
from specscope.errors import SpecscopeError
from specscope.profiler.run.config import RunConfig
from specscope.profiler.run.events import finish_run
from specscope.profiler.run.measure_config import Measurement
from specscope.profiler.session.session import Session

from .text import home_relative
from .window_files import sessions_dir

if TYPE_CHECKING:
    from .pages import Pages
    from .run_process import WorkerProcess
    from .session_model import SessionModel
    from .setup_panel import SetupPanel
    from .views.common import PlainLabel
    from .views.measurement_page import MeasurementPage

    WindowBase = QtWidgets.QMainWindow
else:
    WindowBase = object

RUN_TIP = "Run the protocol (Ctrl+R)"


class RunControl(WindowBase):
    """Run, Stop and the progress line, mixed into ``MainWindow``."""

    run_finished: Any  # MainWindow's signal
    model: SessionModel
    setup: SetupPanel
    worker: WorkerProcess
    run_status: PlainLabel
    progress: QtWidgets.QProgressBar
    run_btn: QtWidgets.QPushButton
    stop_btn: QtWidgets.QPushButton
    act_run: QtGui.QAction
    act_stop: QtGui.QAction
    act_open: QtGui.QAction
    eta_timer: QtCore.QTimer
    session_path: str | None
    autosave_dir: Path | None
    _run_started: float | None
    _status_msg: str
    show_error: Callable[[str, str], None]
    show_page: Callable[[str], None]
    views: Pages  # the window's pages by key, built when asked for
    _measuring: tuple[str, str] = ("live", "run")  # the page whose measurement runs (or ran last), and its name

    def is_running(self) -> bool:
        return self.worker.is_running()

    def start_run(self) -> bool:
        return self.start_measurement(self.setup.config, "live", "run")

    def start_page_measurement(self, key: str) -> bool:
        """The start button of page ``key`` (a ``MeasurementPage``): its measurement of the setup's model."""
        page: MeasurementPage = self.views[key]  # type: ignore[assignment]
        return self.start_measurement(lambda: page.config_for(self.setup.config()), key, page.what)

    def start_measurement(self, build: Callable[[], RunConfig | Measurement], page: str, what: str) -> bool:
        """Run ``build()``'s config in the worker into a new session (autosaved), showing ``page``; ``what`` names it
        in messages. Refused (False) while anything runs, or with the reason in a dialog when the config is bad."""
        if self.is_running():
            return False
        try:
            cfg = build()
            cfg.validate()
        except SpecscopeError as exc:
            self.show_error(f"Cannot start the {what}", str(exc))
            return False
        self.setup.save_settings()
        if cfg.model:
            self.setup.add_recent(cfg.model)
        d = self.autosave_dir or sessions_dir()
        d.mkdir(parents=True, exist_ok=True)
        path = str(d / f"session-{datetime.now():%Y%m%d-%H%M%S}.json")
        self.session_path = path
        self.model.reset(Session(), autosave_path=path)
        self._run_started = time.monotonic()
        self._status_msg = "starting the worker…"
        self._measuring = (page, what)
        self.worker.start(cfg)
        self.eta_timer.start()
        self._update_buttons()
        self._update_progress()
        self.show_page(page)
        return True

    def stop_run(self) -> None:
        if self.is_running():
            self._status_msg = "stopping: finishing the current step…"
            self.run_status.setText(self._status_msg)
            self._page_status(self._status_msg)
            self.worker.stop()

    def _on_event(self, ev: Event) -> None:
        if ev["event"] == "status":
            self._status_msg = ev["message"]
        elif ev["event"] == "case_started":
            self._status_msg = f"case {ev['case']['id']} ({ev['phase']}, repeat {ev.get('repeat', 0) + 1})"
        elif ev["event"] == "breakdown":
            self._status_msg = f"case {ev['case']}: breakdown measured"
        self.model.apply(ev)

    def _on_worker_finished(self, code: int, stderr_tail: str, stopped: bool) -> None:
        s = self.model.session
        how = {0: None, -1: "killed or crashed", -2: stderr_tail}.get(code, f"exit code {code}")
        finish_run(s, how, stopped_by_user=stopped, stderr_tail=stderr_tail)
        self.model.save_autosave()
        self.model.flush()
        self.eta_timer.stop()
        st = s.status
        reason = (s.data.get("errors") or [""])[-1]
        what = self._measuring[1]
        msg = {"complete": f"{what} complete", "incomplete": f"{what} stopped early: partial results kept",
               "failed": f"{what} failed"}.get(st, st)
        if st in ("incomplete", "failed") and reason and not stopped:
            msg += f" ({reason})"
        saved = self.session_path and not self.model.autosave_error
        if saved:
            msg += f" · saved to {home_relative(self.session_path)}"
        elif self.model.autosave_error:
            msg += f" · NOT saved ({self.model.autosave_error}): use File → Save session as…"
        self._status_msg = msg
        self._update_progress(final=True)
        self._update_buttons()
        if not stopped and (st == "failed" or (st == "incomplete" and code != 0) or self.model.autosave_error):
            # something went wrong that the user did not ask for: say what, and that the data is kept
            n = sum(1 for c in s.cases if c["plain"]["step_ms"] or c["spec"]["rounds"])
            kept = (f"Everything received before that ({n} case{'s' if n != 1 else ''}) is kept and shown"
                    if n else "No measurements had arrived yet")
            where = (f" and saved to {home_relative(self.session_path)}." if saved
                     else f"; it could not be saved ({self.model.autosave_error}): use File → Save session as…"
                     if self.model.autosave_error else ".")
            title = f"The {what} failed" if st == "failed" else f"The {what} ended early"
            self.show_error(title, f"{reason or 'unknown error'}\n\n{kept}{where}")
        self.run_finished.emit(st)

    def _update_buttons(self) -> None:
        running = self.is_running()
        why_not = f"Not now: the {self._measuring[1]} is in progress (stop it first)" if running else ""
        self.run_btn.setEnabled(not running)
        self.run_btn.setToolTip(why_not or RUN_TIP)
        self.act_run.setEnabled(not running)
        self.stop_btn.setEnabled(running)
        self.act_stop.setEnabled(running)
        self.setup.setEnabled(not running)
        self.act_open.setEnabled(not running)
        for key, page in self.views.built().items():
            if hasattr(page, "set_running"):  # a page with a measurement of its own
                page.set_running(key == self._measuring[0], why_not)

    def _page_status(self, text: str) -> None:
        """The status line of the page whose measurement runs (the Run button's is the dock's alone)."""
        page = self.views.built().get(self._measuring[0])
        if page is not None and hasattr(page, "status") and hasattr(page, "set_running"):
            page.status.setText(text)

    def _progress_fraction(self) -> float:
        snap = self.model.last_snapshot
        if not snap or not snap["n_cases"]:
            return 0.0
        cfg, n = snap["config"], snap["n_cases"]
        per = max(1, 2 * int(cfg.get("max_tokens") or 1))
        done = 0.0
        for c in self.model.session.cases:
            if c.get("complete"):
                done += 1
            else:
                done += min(1.0, (len(c["plain"]["tokens"]) + len(c["spec"]["tokens"])) / per) * 0.95
        return min(1.0, done / n)

    def _update_progress(self, final: bool = False) -> None:
        self.run_status.setText(self._status_msg)
        self._page_status(self._status_msg)
        if final:
            st = self.model.session.status
            self.progress.setValue(1000 if st == "complete" else int(1000 * self._progress_fraction()))
            self.progress.setFormat({"complete": "done", "incomplete": "stopped — %p%", "failed": "failed"}.get(st, st))
            return
        if not self.is_running():
            return
        f = self._progress_fraction()
        self.progress.setValue(int(1000 * f))
        elapsed = time.monotonic() - (self._run_started or time.monotonic())
        if f > 0.02 and self.model.session.status == "running":
            eta = elapsed * (1 - f) / f
            self.progress.setFormat(f"%p% · about {_dur(eta)} left")
        else:
            self.progress.setFormat(f"%p% · {_dur(elapsed)} elapsed")

def _dur(s: float) -> str:
    s = int(max(0, s))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {(s % 3600) // 60:02d} min"
