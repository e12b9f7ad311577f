"""Runs the profiler worker (``python -m specscope.profiler.run.worker``) in a QProcess and parses its JSON lines: a run,
a sweep, or a measurement besides a run (``RooflineConfig``, ``TuneConfig``: the Verify cost and Tune pages).

A distributed run (``RunConfig.ranks`` / ``hosts`` / ``hostfile``) runs ``profiler.run.launch``'s plan instead: the
guard (its own process group) wrapping ``mlx.launch`` wrapping the ranks; rank 0's events arrive the same way.
It is stopped by ``stop`` on stdin (every rank gets it through mlx.launch) and, past the grace period, by killing
the whole group; a rank that fails is named (``rank_monitor.RankMonitor`` over the merged stderr) and the session is
marked incomplete with that message (``fault``) before ``finished``.
"""

from __future__ import annotations

import os
import signal
import sys

from PySide6 import QtCore

from specscope.profiler.run.config import RunConfig
from specscope.profiler.run.events import SAVE_POINTS, SAVED, STOP_GRACE_SECONDS, EventReader
from specscope.profiler.run.launch import EXIT_RANK_FAULT, RANK_GRACE_SECONDS, DistSpec, LaunchPlan, plan_launch
from specscope.profiler.run.measure_config import Measurement
from specscope.profiler.run.rank_monitor import RankMonitor
from specscope.profiler.run.runner import worker_command, worker_env

STOP_GRACE_MS = int(STOP_GRACE_SECONDS * 1000)
RANK_GRACE_MS = int(RANK_GRACE_SECONDS * 1000)


def qt_env(env: dict) -> QtCore.QProcessEnvironment:
    qenv = QtCore.QProcessEnvironment()
    for k, v in env.items():
        qenv.insert(k, v)
    return qenv


def discard(proc: QtCore.QProcess) -> None:
    """A helper process whose answer is no longer wanted: disconnected (its late answer is dropped), killed, freed."""
    try:
        proc.finished.disconnect()
    except (RuntimeError, TypeError):
        pass
    proc.kill()
    proc.waitForFinished(1000)
    proc.deleteLater()


def _killpg(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass


class WorkerProcess(QtCore.QObject):
    run_event = QtCore.Signal(dict)  # one event of the run (not ``event``: that is QObject's own event handler)
    finished = QtCore.Signal(int, str, bool)  # exit code, stderr tail, stopped by the user
    fault = QtCore.Signal(str)  # distributed runs: the rank that ended the run and why (before ``finished``)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.proc: QtCore.QProcess | None = None
        self.plan: LaunchPlan | None = None  # the launch of a distributed run, else None
        self.monitor: RankMonitor | None = None
        self._reader = EventReader()
        self._err = b""
        self._err_line = b""
        self._pgid = 0
        self.stop_requested = False

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.state() != QtCore.QProcess.ProcessState.NotRunning

    def start(self, cfg: RunConfig | Measurement) -> None:
        """Run ``cfg`` in the worker: a run (a sweep too), or a measurement besides a run (roofline, tune)."""
        if self.is_running():
            raise RuntimeError("a run is already in progress")
        self._cleanup_plan()
        spec = DistSpec.from_config(cfg) if isinstance(cfg, RunConfig) else None
        if spec is not None:  # mlx.launch under the guard (a new process group), rank 0's events on stdout
            assert isinstance(cfg, RunConfig)  # only a run has ranks
            self.plan = plan_launch(cfg, spec)
            self.monitor = RankMonitor(self.plan.hosts, on_fault=self._rank_failed)
            cmd, env = self.plan.argv, self.plan.env
        else:  # it waits at each save point until the window has saved (``_read_out``): no save beside a measurement
            cmd, env = worker_command(cfg), {**worker_env(save_ack=True), **getattr(cfg, "worker_env", {})}
        if self.proc is not None:  # one QProcess per run: release the last one (its pipes, its buffers)
            self.proc.deleteLater()
        self.proc = p = QtCore.QProcess(self)
        p.setProcessEnvironment(qt_env(env))
        p.readyReadStandardOutput.connect(self._read_out)
        p.readyReadStandardError.connect(self._read_err)
        p.finished.connect(self._finished)
        p.errorOccurred.connect(self._error)
        self._reader, self._err, self._err_line, self.stop_requested = EventReader(), b"", b"", False
        self._pgid = 0
        p.started.connect(lambda: setattr(self, "_pgid", p.processId()))  # the guard leads its own group
        p.start(cmd[0], cmd[1:])

    def _rank_failed(self, rank: int) -> None:
        """A rank ended the run: mlx.launch ends the others; whatever is left goes with the group after the grace."""
        proc = self.proc
        if proc is not None:
            QtCore.QTimer.singleShot(RANK_GRACE_MS, proc, lambda: self._kill_if_running(proc))

    def _cleanup_plan(self) -> None:
        if self.plan is not None:
            self.plan.cleanup()
        self.plan, self.monitor = None, None

    def stop(self) -> None:
        """Ask the worker to end the run cleanly (it then emits run_done 'incomplete'); kill it if it does not."""
        proc = self.proc
        if proc is None or not self.is_running():
            return
        self.stop_requested = True
        pid = proc.processId()
        if self.plan is not None:  # every rank reads "stop" (mlx.launch forwards stdin); rank 0 ends the run cleanly
            proc.write(b"stop\n")
            QtCore.QTimer.singleShot(STOP_GRACE_MS, proc, lambda: self._kill_if_running(proc))
            return
        if sys.platform == "win32" or not pid:
            proc.kill()
            return
        # SIGINT: the worker ends the run and says run_done "incomplete"; terminate() would send SIGTERM (same effect).
        try:
            os.kill(pid, signal.SIGINT)
        except OSError:
            proc.terminate()
        # a worker that ignores the request is killed after a grace period; the timer belongs to this run's
        # process, so it can never kill the next run's worker
        QtCore.QTimer.singleShot(STOP_GRACE_MS, proc, lambda: self._kill_if_running(proc))

    def _kill_if_running(self, proc=None) -> None:
        proc = proc or self.proc
        try:
            if proc is not None and proc.state() != QtCore.QProcess.ProcessState.NotRunning:
                if self.plan is not None and proc is self.proc and self._pgid:
                    _killpg(self._pgid)  # the guard's group: mlx.launch and every local rank (remote: by SIGHUP)
                proc.kill()
        except RuntimeError:  # the process object is already gone
            pass

    def stop_and_wait(self, ms: int = STOP_GRACE_MS) -> None:
        """Used when the window closes mid-run: stop the worker and make sure no process is left behind."""
        proc = self.proc
        if proc is None or not self.is_running():
            return
        self.stop()
        if not proc.waitForFinished(ms):
            self._kill_if_running(proc)
            proc.waitForFinished(3000)
        self._read_out()

    def _read_out(self) -> None:
        if self.proc is None:
            return
        proc = self.proc
        for ev in self._reader.feed(bytes(proc.readAllStandardOutput().data())):
            self.run_event.emit(ev)  # direct connections: the window has applied (and saved) it when this returns
            if self.plan is None and ev["event"] in SAVE_POINTS and proc.state() == QtCore.QProcess.ProcessState.Running:
                proc.write((SAVED + "\n").encode())

    def _read_err(self) -> None:
        if self.proc is None:
            return
        data = bytes(self.proc.readAllStandardError().data())
        self._err = (self._err + data)[-20000:]
        if self.monitor is not None:  # fed line by line as it comes: the ranks' hello lines come first
            lines = (self._err_line + data).split(b"\n")
            self._err_line = lines.pop()
            for line in lines:
                self.monitor.feed(line.decode("utf-8", "replace"))

    def _finished(self, code: int, status) -> None:
        self._read_out()
        self._read_err()
        for ev in self._reader.close():
            self.run_event.emit(ev)
        crashed = status == QtCore.QProcess.ExitStatus.CrashExit
        code = -1 if crashed else code
        if self.plan is not None:
            assert self.monitor is not None  # made with the plan
            if self._err_line:
                self.monitor.feed(self._err_line.decode("utf-8", "replace"))
                self._err_line = b""
            if self._pgid:
                _killpg(self._pgid)  # whatever is left of the group: no orphan rank
            msg = None if self.stop_requested else self.monitor.message()
            if msg:
                self.fault.emit(msg)  # before finished: the session is incomplete, with the rank named
                if code == 0:
                    code = EXIT_RANK_FAULT  # mlx.launch itself exits 0 when a rank fails
            self.plan.cleanup()
        self.finished.emit(code, self._err.decode("utf-8", "replace")[-4000:], self.stop_requested)
        assert self.proc is not None  # the process that finished
        self.proc.closeReadChannel(QtCore.QProcess.ProcessChannel.StandardOutput)
        self.proc.closeReadChannel(QtCore.QProcess.ProcessChannel.StandardError)

    def _error(self, err) -> None:
        if err == QtCore.QProcess.ProcessError.FailedToStart:
            assert self.proc is not None  # the process that failed
            if self.plan is not None:
                self.plan.cleanup()
            self.finished.emit(-2, f"could not start the worker: {self.proc.errorString()}", False)
