"""A page that shows one measurement kept in the session (``session[key]``) and can run it now.

The page only says what to measure: ``measurement(cfg)`` turns the setup panel's ``RunConfig`` into the measurement's
config (``RooflineConfig``, ``TuneConfig``, or a sweep's ``RunConfig``). Its start button asks the window
(``start_requested``), which runs that config in the worker as the Run button runs a run: the events arrive through
the same pump, ``Session.apply`` folds them into a new session, and the page draws what the session holds as each
snapshot comes (partial results included). Stop, progress, errors and the one-at-a-time rule are the window's."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from PySide6 import QtCore, QtWidgets

from specscope.profiler.run.config import RunConfig
from specscope.profiler.run.measure_config import Measurement

from ..records import Snapshot
from .common import ElidingLabel


class MeasurementPage(QtWidgets.QWidget):
    start_requested = QtCore.Signal()  # the start button: the window runs ``config_for(setup config)``
    stop_requested = QtCore.Signal()
    key = ""  # the session key the page shows
    measure = ""  # the session's config "measure" when it is this page's measurement (run.measure_config.KINDS)
    what = "measurement"  # how the window names it ("Cannot start the …", "the … is in progress")

    def __init__(self, config=None, session=None, parent=None) -> None:
        super().__init__(parent)
        self.page_layout = QtWidgets.QVBoxLayout(self)  # the page's widgets, top to bottom
        self.page_layout.setContentsMargins(8, 8, 8, 8)
        self._config, self._session = config, session  # the setup panel's RunConfig; the current session's data
        self._result: Any = None  # the page's record (``key``'s in ``SessionData``), or None
        self.measuring = False  # the session is this page's measurement, running (nothing arrived yet: say so)
        self._started = False  # the window runs this page's measurement (from the press, before its first event)
        self.overrides: dict[str, Any] = {}  # fields of the measurement's config set over the page's (tests: fewer repeats)

    def add_button_row(self, label: str, tip: str, *options: QtWidgets.QWidget) -> None:
        """The page's top row: the start button (``start_btn``: ``label``, tooltip ``tip``), the
        measurement's ``options``, Stop (``stop_btn``) and the status text (``status``)."""
        bar = QtWidgets.QHBoxLayout()
        self.start_btn = QtWidgets.QPushButton(label)
        self.start_btn.setToolTip(tip)
        self._start_tip = tip
        self.start_btn.clicked.connect(self.start_requested)
        self.stop_btn = QtWidgets.QPushButton("Stop")
        self.stop_btn.setToolTip("Stop and keep what was measured (Esc)")
        self.stop_btn.setEnabled(False)
        self.stop_btn.clicked.connect(self.stop_requested)
        self.status = ElidingLabel("", 1)  # the run's status line: elided, never widening the page
        for w in (self.start_btn, *options, self.stop_btn):
            bar.addWidget(w)
        bar.addWidget(self.status, 1)
        self.page_layout.addLayout(bar)

    # subclasses: the button row (``add_button_row``), ``measurement(cfg)`` and ``draw``
    def measurement(self, cfg: RunConfig) -> RunConfig | Measurement:  # pragma: no cover - interface
        raise NotImplementedError

    def draw(self, result: Any) -> None:  # pragma: no cover - interface (the result: the page's record, or None)
        raise NotImplementedError

    def config_for(self, cfg: RunConfig) -> RunConfig | Measurement:
        """What the start button measures, from the setup panel's ``cfg`` (and ``overrides``)."""
        return replace(self.measurement(cfg), **self.overrides)

    def set_running(self, mine: bool, why_not: str = "") -> None:
        """The window's state: ``why_not`` says why nothing can start now (empty: nothing runs, the button's own
        tooltip again); ``mine``: what runs is this page's measurement (its Stop is enabled)."""
        self.start_btn.setEnabled(not why_not)
        self.start_btn.setToolTip(why_not or self._start_tip)
        self.stop_btn.setEnabled(bool(why_not) and mine)
        started, self._started = self._started, bool(why_not) and mine
        if started != self._started:  # "measuring" from the press, the idle text again once it ends
            self.update_snapshot(None)

    def measures(self, data) -> bool:
        """Whether the session ``data`` is this page's measurement."""
        return bool(self.measure) and data.get("measure") == self.measure

    def idle_text(self, idle: str, running: str) -> str:
        """The headline of an empty page: ``running`` while its measurement starts, else ``idle``."""
        return running if self.measuring else idle

    def update_snapshot(self, _snap: Snapshot | None) -> None:
        """Show the session's result (none: an empty page); a measurement running fills it in as it comes."""
        data = (self._session() or {}) if self._session else {}
        stored = data.get(self.key)
        self._show_if_new(stored, self._started or (data.get("status") == "running" and self.measures(data)))

    def _show_if_new(self, stored: Any, measuring: bool) -> None:
        if stored is not self._result or measuring != self.measuring:
            self.measuring = measuring
            self._show(stored)

    def _show(self, result: Any) -> None:
        self._result = result
        self.draw(result)
