"""A page that shows one measurement kept in the session (``session[key]``) and can run it now: a
``specscope SUBCOMMAND … --jsonl`` process whose lines ({"status": …} and {key: result so far}) fill the
page in as they come; the finished result is handed to the window (``result_ready``) to keep."""

from __future__ import annotations

from typing import Any

from PySide6 import QtCore, QtWidgets

from ..command_process import CommandProcess, cli_command
from ..records import Snapshot
from .common import plain_label


class MeasurementPage(QtWidgets.QWidget):
    result_ready = QtCore.Signal(dict)
    key = ""  # the session key and the result's key in the command's JSON lines

    def __init__(self, config=None, session=None, parent=None) -> None:
        super().__init__(parent)
        self.page_layout = QtWidgets.QVBoxLayout(self)  # the page's widgets, top to bottom
        self.page_layout.setContentsMargins(8, 8, 8, 8)
        self._config, self._session = config, session  # the setup panel's RunConfig; the current session's data
        self._result: Any = None  # the page's record (``key``'s in ``SessionData``), or None
        self.extra_args: list[str] = []  # more command flags (tests: fewer repeats)
        self.proc = CommandProcess(self)
        self.proc.line.connect(self._line)
        self.proc.done.connect(self._done)

    def add_button_row(self, label: str, tip: str, *options: QtWidgets.QWidget) -> None:
        """The page's top row: the start button (``start_btn``: ``label``, tooltip ``tip``), the
        measurement's ``options``, Stop (``stop_btn``) and the status text (``status``)."""
        bar = QtWidgets.QHBoxLayout()
        self.start_btn = QtWidgets.QPushButton(label)
        self.start_btn.setToolTip(tip)
        self.start_btn.clicked.connect(self.start)
        self.stop_btn = QtWidgets.QPushButton("Stop")
        self.stop_btn.setEnabled(False)
        self.stop_btn.clicked.connect(self.stop)
        self.status = plain_label("", wrap=False)
        for w in (self.start_btn, *options, self.stop_btn):
            bar.addWidget(w)
        bar.addWidget(self.status, 1)
        self.page_layout.addLayout(bar)

    # subclasses: the button row (``add_button_row``), ``command(cfg)`` and ``draw``
    def command(self, cfg) -> tuple[str, list[str]]:  # pragma: no cover - interface
        raise NotImplementedError

    def draw(self, result: Any) -> None:  # pragma: no cover - interface (the result: the page's record, or None)
        raise NotImplementedError

    def start(self) -> None:
        if self._config is None:
            return
        sub, args = self.command(self._config())
        self._show(None)
        self.status.setText("starting…")
        self.start_btn.setEnabled(False)
        self.stop_btn.setEnabled(True)
        self.proc.start(cli_command(sub, [*args, *self.extra_args, "--jsonl"]))

    def stop(self) -> None:
        self.proc.stop()
        self.status.setText("stopped")
        self._idle()

    def update_snapshot(self, _snap: Snapshot) -> None:
        """Show the session's stored result (none: an empty page), unless a run is filling the page in."""
        stored = (self._session() or {}).get(self.key) if self._session else None
        if not self.proc.is_running() and stored is not self._result:
            self._show(stored)

    def _show(self, result: Any) -> None:
        self._result = result
        self.draw(result)

    def _idle(self) -> None:
        self.start_btn.setEnabled(True)
        self.stop_btn.setEnabled(False)

    def _line(self, obj: dict) -> None:
        if obj.get("status"):
            self.status.setText(str(obj["status"]))
        if isinstance(obj.get(self.key), dict):
            self._show(obj[self.key])

    def _done(self, code: int, message: str) -> None:
        self._idle()
        if code == 0 and self._result:
            self.status.setText("done")
            self.result_ready.emit(self._result)
        else:
            self.status.setText(message or f"failed (exit code {code})")
