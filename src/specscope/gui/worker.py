"""Runs the profiler worker (``python -m specscope.profiler.worker``) in a QProcess and parses its JSON lines."""

from __future__ import annotations

import signal
import sys

from PySide6 import QtCore

from specscope.profiler.config import RunConfig
from specscope.profiler.events import STOP_GRACE_SECONDS, EventReader
from specscope.profiler.runner import worker_command, worker_env

STOP_GRACE_MS = int(STOP_GRACE_SECONDS * 1000)


def qt_env(env: dict) -> QtCore.QProcessEnvironment:
    qenv = QtCore.QProcessEnvironment()
    for k, v in env.items():
        qenv.insert(k, v)
    return qenv


class WorkerProcess(QtCore.QObject):
    event = QtCore.Signal(dict)
    finished = QtCore.Signal(int, str, bool)  # exit code, stderr tail, stopped by the user

    def __init__(self, parent=None):
        super().__init__(parent)
        self.proc: QtCore.QProcess | None = None
        self._reader = EventReader()
        self._err = b""
        self.stop_requested = False

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.state() != QtCore.QProcess.ProcessState.NotRunning

    def start(self, cfg: RunConfig) -> None:
        if self.is_running():
            raise RuntimeError("a run is already in progress")
        cmd = worker_command(cfg)
        if self.proc is not None:  # one QProcess per run: release the last one (its pipes, its buffers)
            self.proc.deleteLater()
        self.proc = p = QtCore.QProcess(self)
        p.setProcessEnvironment(qt_env(worker_env()))
        p.readyReadStandardOutput.connect(self._read_out)
        p.readyReadStandardError.connect(self._read_err)
        p.finished.connect(self._finished)
        p.errorOccurred.connect(self._error)
        self._reader, self._err, self.stop_requested = EventReader(), b"", False
        p.start(cmd[0], cmd[1:])

    def stop(self) -> None:
        """Ask the worker to end the run cleanly (it then emits run_done 'incomplete'); kill it if it does not."""
        if not self.is_running():
            return
        self.stop_requested = True
        pid = self.proc.processId()
        if sys.platform == "win32" or not pid:
            self.proc.kill()
            return
        # SIGINT: the worker ends the run and says run_done "incomplete"; terminate() would send SIGTERM (same effect).
        try:
            import os

            os.kill(pid, signal.SIGINT)
        except OSError:
            self.proc.terminate()
        # a worker that ignores the request is killed after a grace period; the timer belongs to this run's
        # process, so it can never kill the next run's worker
        proc = self.proc
        QtCore.QTimer.singleShot(STOP_GRACE_MS, proc, lambda: self._kill_if_running(proc))

    def _kill_if_running(self, proc=None) -> None:
        proc = proc or self.proc
        try:
            if proc is not None and proc.state() != QtCore.QProcess.ProcessState.NotRunning:
                proc.kill()
        except RuntimeError:  # the process object is already gone
            pass

    def stop_and_wait(self, ms: int = STOP_GRACE_MS) -> None:
        """Used when the window closes mid-run: stop the worker and make sure no process is left behind."""
        if not self.is_running():
            return
        self.stop()
        if not self.proc.waitForFinished(ms):
            self.proc.kill()
            self.proc.waitForFinished(3000)
        self._read_out()

    def _read_out(self) -> None:
        if self.proc is None:
            return
        for ev in self._reader.feed(bytes(self.proc.readAllStandardOutput())):
            self.event.emit(ev)

    def _read_err(self) -> None:
        if self.proc is None:
            return
        self._err = (self._err + bytes(self.proc.readAllStandardError()))[-20000:]

    def _finished(self, code: int, status) -> None:
        self._read_out()
        for ev in self._reader.close():
            self.event.emit(ev)
        crashed = status == QtCore.QProcess.ExitStatus.CrashExit
        self.finished.emit(-1 if crashed else code, self._err.decode("utf-8", "replace")[-4000:], self.stop_requested)
        self.proc.closeReadChannel(QtCore.QProcess.ProcessChannel.StandardOutput)
        self.proc.closeReadChannel(QtCore.QProcess.ProcessChannel.StandardError)

    def _error(self, err) -> None:
        if err == QtCore.QProcess.ProcessError.FailedToStart:
            self.finished.emit(-2, f"could not start the worker: {self.proc.errorString()}", False)
