"""The event pump: a child process's event lines folded into a Session, with autosave, Ctrl+C and cleanup.

One pump serves both headless paths: ``runner.run_worker`` (one worker process) and ``launch.run_distributed``
(the ranks under ``mlx.launch``). What differs between them is only how the child is asked to stop and how it
is killed, which the caller passes in. The guarantees (tested in ``tests/reliability``):

- the session file (``autosave``) is written before the child starts (``EventPump`` refuses an unwritable path
  with a ``SpecscopeError``), rewritten atomically as events arrive and once more at the end;
- Ctrl+C asks the child to stop, keeps everything it sent; a second Ctrl+C, or a child that does not stop
  within ``STOP_GRACE_SECONDS``, kills it;
- whatever happens on this side (an exception in a callback), the child is killed, what was measured is kept
  and saved, and the exception goes on;
- if the session cannot be saved at the end (disk full), a copy is written to the temp folder when possible
  and ``SessionSaveError`` says where.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Callable

import specscope
from specscope.errors import SpecscopeError

from specscope.profiler.run.events import (AUTOSAVE_EVENTS, AUTOSAVE_SECONDS, SAVE_ACK_ENV, SAVE_POINTS, SAVED,
                                          STOP_GRACE_SECONDS, parse)
from specscope.profiler.session.session import Session
from specscope.profiler.analysis.session_file import save_session


def _terminate_as_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


WAKE_S = 0.1  # the longest the main thread waits for a child's line before it looks at signals again


def _queued(lines: "queue.Queue[str | None]"):
    """The lines a reader thread queued, until its end (None), waiting at most ``WAKE_S`` at a time."""
    while True:
        try:
            line = lines.get(timeout=WAKE_S)
        except queue.Empty:
            continue
        if line is None:
            lines.put(None)  # the end stays the end for a later drain
            return
        yield line


class RunResult:
    def __init__(self, session: Session, returncode: int | None, stderr: str, save_error: str | None = None,
                 saved_to: str | None = None):
        self.session, self.returncode, self.stderr = session, returncode, stderr
        self.save_error = save_error  # why the last save to ``autosave`` failed, or None
        self.saved_to = saved_to      # where the session is on disk (the autosave path, or a rescue copy)


class SessionSaveError(SpecscopeError):
    """The run ended but its session could not be written where asked; ``result`` holds it."""

    def __init__(self, message: str, result: RunResult):
        super().__init__(message)
        self.result = result


def worker_env(save_ack: bool = False) -> dict[str, str]:  # dict: environment variables (names are data)
    """The environment of a child process of a run (worker, guard, ranks): this specscope, unbuffered output.
    ``save_ack``: the reader answers every save point on the worker's stdin (``events.SAVE_POINTS``)."""
    env = dict(os.environ)
    env.pop(SAVE_ACK_ENV, None)
    if save_ack:
        env[SAVE_ACK_ENV] = "1"
    # The worker must import the same specscope as this process, wherever it is run from.
    root = str(Path(specscope.__file__).resolve().parents[1])  # the folder that holds the package
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def os_error_text(exc: OSError) -> str:
    """'No space left on device' rather than '[Errno 28] No space left on device: '/x/.s.json.tmp''."""
    return exc.strerror or str(exc) or type(exc).__name__


def describe_exit(rc: int | None) -> str:
    if rc is None:
        return "still running"
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        return f"killed by {name}"
    return f"exit code {rc}"


def rescue_copy(session: Session) -> str | None:
    """Disk full or path gone at the end of a run: try the temp folder so the measurements survive."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f"specscope-session-{time.strftime('%Y%m%d-%H%M%S')}-", suffix=".json")
        os.close(fd)
        save_session(session, tmp)
        return tmp
    except OSError:
        return None


class EventPump:
    """One run's session, fed from a child's stdout (one JSON event a line) and saved to ``autosave``.

    ``on_event(event, session)`` is called for every event (not for what is drained after a Ctrl+C).
    """

    def __init__(self, autosave: str | None = None, on_event: Callable | None = None):
        self.session = Session()
        self.autosave = autosave
        self.on_event = on_event
        self.save_error: str | None = None  # why the last save failed, or None
        self._last_save = time.monotonic()
        self._timers: list[threading.Timer] = []
        self._kill: Callable[[], None] = lambda: None
        self._ack_to: IO[str] | None = None  # the worker's stdin when it waits at save points (``drain(save_ack=True)``)
        if autosave:
            self.save()  # an unwritable path is refused here, before a model is loaded
            if self.save_error:
                raise SpecscopeError(f"cannot write the session to {autosave}: {self.save_error}")

    def save(self) -> None:
        if not self.autosave:
            return
        try:
            save_session(self.session, self.autosave)
            self.save_error = None
        except OSError as exc:  # keep running: the data is in memory, the previous file is intact
            self.save_error = os_error_text(exc)

    def feed(self, line: str, callback: bool = True) -> None:
        """Fold one line of the child's stdout into the session (lines that are not events are skipped)."""
        ev = parse(line)
        if ev is None:
            return
        self.session.apply(ev)
        if callback and self.on_event:
            self.on_event(ev, self.session)
        if self.autosave and (ev["event"] in AUTOSAVE_EVENTS or time.monotonic() - self._last_save > AUTOSAVE_SECONDS):
            self.save()
            self._last_save = time.monotonic()
        if ev["event"] in SAVE_POINTS:
            self._ack()

    def _ack(self) -> None:
        """Tell a worker waiting at a save point that the session is written (``events.SAVE_POINTS``)."""
        if self._ack_to is None:
            return
        try:
            self._ack_to.write(SAVED + "\n")
            self._ack_to.flush()
        except (OSError, ValueError):  # the worker is gone (or its stdin closed): nothing waits
            self._ack_to = None

    def kill_later(self, seconds: float) -> None:
        """Kill the child (as the ``kill`` given to ``drain``) in ``seconds`` unless the run has ended by then."""
        t = threading.Timer(seconds, self._kill)
        t.daemon = True
        t.start()
        self._timers.append(t)

    def drain(self, proc: subprocess.Popen, *, stop: Callable[[], None], kill: Callable[[], None],
              on_start: Callable | None = None, on_stderr_line: Callable[[str], None] | None = None,
              after_stream: Callable[[], None] | None = None,
              kill_at_end: bool = False, save_ack: bool = False) -> tuple[int | None, bool, str]:
        """Read ``proc`` until it ends; return (exit code, stopped by the user, its stderr).

        ``stop()`` asks the child to end the run cleanly (on Ctrl+C); ``kill()`` ends it now. ``on_stderr_line``
        sees each line of stderr as it arrives; ``after_stream()`` runs once stdout has ended, before waiting
        for the exit. ``kill_at_end``: call ``kill()`` at the end even when ``proc`` has exited (it kills a whole
        process group, whose other members may still run). ``save_ack``: ``proc`` was started with
        ``worker_env(save_ack=True)`` and a stdin pipe; each save point is answered on it once the session is written.
        The child never outlives this call.
        """
        self._kill = kill
        self._ack_to = proc.stdin if save_ack else None
        err_lines: list[str] = []
        assert proc.stdout is not None and proc.stderr is not None
        stdout, stderr = proc.stdout, proc.stderr

        def read_err() -> None:
            for line in stderr:
                err_lines.append(line)
                if on_stderr_line:
                    on_stderr_line(line)

        t = threading.Thread(target=read_err, daemon=True)
        t.start()
        # stdout is read in a thread too: the main thread waits on a queue, waking every WAKE_S, so a signal's handler
        # (SIGTERM raising KeyboardInterrupt) runs at once. Blocked in a read, the main thread ran it only when the
        # child next printed: a SIGTERM the kernel gave another thread waited ~10 s through a silent model load, and a
        # short run ended "complete" with exit 0 (a fresh-clone CI's failures, reproduced under load)
        lines: queue.Queue[str | None] = queue.Queue()

        def read_out() -> None:
            try:
                for line in stdout:
                    lines.put(line)
            except (OSError, ValueError):  # the stream closed under it (the child killed, this call ending)
                pass
            finally:
                lines.put(None)

        t_out = threading.Thread(target=read_out, daemon=True)
        t_out.start()
        self._last_save = time.monotonic()
        interrupted = False
        rc = None
        # SIGTERM (a closed terminal's session, `kill`, a CI timeout) ends the run as Ctrl+C does: the child asked to
        # stop, what it measured drained and saved with the session marked incomplete, never left "running"
        term_before = None
        if threading.current_thread() is threading.main_thread():
            term_before = signal.signal(signal.SIGTERM, _terminate_as_interrupt)
        try:
            if on_start:
                on_start(proc)
            try:
                for line in _queued(lines):
                    self.feed(line)
            except KeyboardInterrupt:
                interrupted = True
                stop()
                self.kill_later(STOP_GRACE_SECONDS)
                try:
                    for line in _queued(lines):  # drain what the child still says
                        self.feed(line, callback=False)
                except KeyboardInterrupt:  # a second Ctrl+C: stop waiting
                    kill()
            if after_stream:
                after_stream()
            while True:
                try:
                    rc = proc.wait()
                    break
                except KeyboardInterrupt:
                    interrupted = True
                    kill()
        except BaseException as exc:
            # Something failed on this side (a callback, the event loop): never leave the child running,
            # and keep what was measured.
            kill()
            proc.wait()
            if self.session.status in ("running", "empty"):
                self.session.mark_incomplete(f"the run was aborted: {type(exc).__name__}: {exc}")
            self.save()
            raise
        finally:
            if term_before is not None:
                signal.signal(signal.SIGTERM, term_before)
            for tm in self._timers:
                tm.cancel()
            if kill_at_end or proc.poll() is None:
                kill()
            if proc.poll() is None:
                proc.wait()
            t.join(timeout=5)
            t_out.join(timeout=5)
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is None:
                    continue
                try:
                    stream.close()
                except Exception:
                    pass
        return rc, interrupted, "".join(err_lines)

    def result(self, returncode: int | None, stderr: str) -> RunResult:
        """The run's result, saved a last time; ``SessionSaveError`` (with a rescue copy, if one could be
        written) when the session could not be saved where asked."""
        res = RunResult(self.session, returncode, stderr)
        if self.autosave:
            self.save()
            res.save_error = self.save_error
            if res.save_error:
                res.saved_to = rescue_copy(self.session)
                where = f"; a copy was saved to {res.saved_to}" if res.saved_to else "; no copy could be saved either"
                raise SessionSaveError(f"could not save the session to {self.autosave}: {res.save_error}{where}", res)
            res.saved_to = self.autosave
        return res
