"""One ``specscope`` subcommand in a QProcess whose stdout is JSON lines (``--jsonl``): each line is
handed on as it arrives, so a page fills in live; the app never imports MLX and never blocks.
A run started while another is going stops the old one first: its late lines are dropped."""

from __future__ import annotations

import json
import sys

from PySide6 import QtCore

from specscope.profiler.run.config import RunConfig
from specscope.profiler.run.runner import worker_env

from .run_process import qt_env

ERROR_PREFIX = "specscope: error: "


def error_text(stderr: str, code: int, what: str) -> str:
    """The command's own "specscope: error: …" line, else the tail of what it printed."""
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    for ln in reversed(lines):
        if ln.startswith(ERROR_PREFIX):
            return ln[len(ERROR_PREFIX):]
    tail = "\n".join(lines[-8:])
    return f"{what} failed (exit code {code})" + (f":\n{tail}" if tail else "")


def model_args(cfg: RunConfig) -> list[str]:
    """The model the setup panel names, as CLI flags."""
    args = ["--demo"] if cfg.demo else ["--model", str(cfg.model)]
    if cfg.allow_oversize:
        args.append("--allow-oversize")
    return args


def cli_command(subcommand: str, args: list[str]) -> list[str]:
    return [sys.executable, "-m", "specscope.profiler.cli", subcommand, *args]


class CommandProcess(QtCore.QObject):
    line = QtCore.Signal(dict)  # one JSON line of the current run
    done = QtCore.Signal(int, str)  # exit code, and the command's error message ("" on success)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.proc: QtCore.QProcess | None = None
        self._buf = b""
        self._err = b""

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.state() != QtCore.QProcess.ProcessState.NotRunning

    def start(self, cmd: list[str]) -> None:
        self.stop()
        self.proc = p = QtCore.QProcess(self)
        p.setProcessEnvironment(qt_env(worker_env()))
        self._buf, self._err = b"", b""
        p.readyReadStandardOutput.connect(lambda: self._read(p))
        p.readyReadStandardError.connect(lambda: self._read_err(p))
        p.finished.connect(lambda code, _status: self._finished(p, code))
        p.errorOccurred.connect(lambda err: self._failed(p, err))
        p.start(cmd[0], cmd[1:])

    def stop(self) -> None:
        p, self.proc = self.proc, None  # a stopped run's late output is stale: its signals no longer match
        if p is not None and p.state() != QtCore.QProcess.ProcessState.NotRunning:
            p.kill()
            p.waitForFinished(3000)
        if p is not None:
            p.deleteLater()

    def _read(self, p: QtCore.QProcess) -> None:
        if p is not self.proc:
            return
        self._buf += bytes(p.readAllStandardOutput().data())
        *lines, self._buf = self._buf.split(b"\n")
        for raw in lines:
            try:
                obj = json.loads(raw)
            except ValueError:
                continue  # not a record (a stray print): skip it
            if isinstance(obj, dict):
                self.line.emit(obj)

    def _read_err(self, p: QtCore.QProcess) -> None:
        if p is self.proc:
            self._err = (self._err + bytes(p.readAllStandardError().data()))[-20000:]

    def _finished(self, p: QtCore.QProcess, code: int) -> None:
        if p is not self.proc:
            return
        self._read(p)
        if self._buf.strip():  # a last line without its newline
            self._buf += b"\n"
            self._read(p)
        self.done.emit(code, "" if code == 0 else error_text(self._err.decode(errors="replace"), code, "the measurement"))

    def _failed(self, p, err) -> None:
        if p is self.proc and err == QtCore.QProcess.ProcessError.FailedToStart:
            self.done.emit(-1, f"could not start {sys.executable}")
