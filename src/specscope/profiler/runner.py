"""Start a worker process and fold its events into a Session (the headless path).

The GUI starts the same worker command through QProcess; both fold the same
events with ``Session.apply``.

Guarantees (tested in ``tests/reliability``):

- the session file (``autosave``) is written before the worker starts, so an
  unwritable path is refused before any work is done, and is rewritten
  atomically as events arrive and once more at the end;
- Ctrl+C asks the worker to stop, keeps everything it sent, marks the session
  incomplete ("stopped by the user"); a second Ctrl+C, or a worker that does not
  stop within ``STOP_GRACE_SECONDS``, kills it;
- a worker that dies (killed, crashed) loses nothing already received: the
  session is marked incomplete with "the worker ended unexpectedly (…)";
- whatever happens in this process (an exception in a callback, a failed save),
  the worker never outlives ``run_worker``; and the worker itself exits when its
  parent process dies (see ``profiler.worker``), so no orphan is left behind;
- if the session cannot be saved at the end (disk full), a copy is written to
  the temp folder when possible and ``SessionSaveError`` says where.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from specscope.errors import SpecscopeError

from .config import RunConfig
from .events import AUTOSAVE_EVENTS, AUTOSAVE_SECONDS, STOP_GRACE_SECONDS, finish_run, parse
from .session import Session



class SessionSaveError(SpecscopeError):
    """The run ended but its session could not be written where asked; ``result`` holds it."""

    def __init__(self, message: str, result: "RunResult"):
        super().__init__(message)
        self.result = result


def worker_command(cfg: RunConfig) -> list[str]:
    return [sys.executable, "-m", "specscope.profiler.worker", json.dumps(cfg.to_dict())]


def worker_env() -> dict:
    env = dict(os.environ)
    # The worker must import the same specscope as this process, wherever it is run from.
    root = str(Path(__file__).resolve().parents[2])
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


class RunResult:
    def __init__(self, session: Session, returncode: int, stderr: str, save_error: str | None = None,
                 saved_to: str | None = None):
        self.session, self.returncode, self.stderr = session, returncode, stderr
        self.save_error = save_error  # why the last save to ``autosave`` failed, or None
        self.saved_to = saved_to      # where the session is on disk (the autosave path, or a rescue copy)


def _rescue_copy(session: Session) -> str | None:
    """Disk full or path gone at the end of a run: try the temp folder so the measurements survive."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f"specscope-session-{time.strftime('%Y%m%d-%H%M%S')}-", suffix=".json")
        os.close(fd)
        session.save(tmp)
        return tmp
    except OSError:
        return None


def _kill(proc: subprocess.Popen) -> None:
    try:
        proc.kill()
    except OSError:
        pass


def run_worker(cfg: RunConfig, on_event=None, autosave: str | None = None, on_start=None) -> RunResult:
    """Run the protocol in a worker; Ctrl+C stops it and keeps what was measured.

    ``on_event(event, session)`` is called for every event; ``on_start(popen)`` once the worker runs.
    A distributed run (``cfg.ranks`` / ``hosts`` / ``hostfile``) goes to ``launch.run_distributed``: the same
    guarantees, the ranks under ``mlx.launch``.
    """
    from .launch import DistSpec, run_distributed  # here: launch imports this module

    spec = DistSpec.from_config(cfg)
    if spec is not None:
        return run_distributed(cfg, spec, on_event=on_event, autosave=autosave, on_start=on_start)
    session = Session()
    save_state = {"error": None}

    def save() -> None:
        if not autosave:
            return
        try:
            session.save(autosave)
            save_state["error"] = None
        except OSError as exc:  # keep running: the data is in memory, the previous file is intact
            save_state["error"] = os_error_text(exc)

    if autosave:
        save()  # an unwritable path is refused here, before a model is loaded
        if save_state["error"]:
            raise SpecscopeError(f"cannot write the session to {autosave}: {save_state['error']}")

    proc = subprocess.Popen(
        worker_command(cfg), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=worker_env(), text=True, encoding="utf-8", errors="replace", bufsize=1,
    )
    err_lines: list[str] = []
    t = threading.Thread(target=lambda: err_lines.extend(proc.stderr), daemon=True)
    t.start()
    last_save = time.monotonic()
    interrupted = False
    grace: threading.Timer | None = None

    def handle(line: str, callback: bool = True) -> None:
        nonlocal last_save
        ev = parse(line)
        if ev is None:
            return
        session.apply(ev)
        if callback and on_event:
            on_event(ev, session)
        if autosave and (ev["event"] in AUTOSAVE_EVENTS or time.monotonic() - last_save > AUTOSAVE_SECONDS):
            save()
            last_save = time.monotonic()

    try:
        if on_start:
            on_start(proc)
        try:
            for line in proc.stdout:
                handle(line)
        except KeyboardInterrupt:
            interrupted = True
            try:
                proc.send_signal(signal.SIGINT)
            except OSError:
                pass
            grace = threading.Timer(STOP_GRACE_SECONDS, _kill, args=(proc,))
            grace.daemon = True
            grace.start()
            try:
                for line in proc.stdout:  # drain what the worker still says
                    handle(line, callback=False)
            except KeyboardInterrupt:  # a second Ctrl+C: stop waiting
                _kill(proc)
        while True:
            try:
                rc = proc.wait()
                break
            except KeyboardInterrupt:
                interrupted = True
                _kill(proc)
    except BaseException as exc:
        # Something failed on this side (a callback, the event loop): never leave the worker running,
        # and keep what was measured.
        _kill(proc)
        proc.wait()
        if session.status in ("running", "empty"):
            session.mark_incomplete(f"the run was aborted: {type(exc).__name__}: {exc}")
        save()
        raise
    finally:
        if grace:
            grace.cancel()
        if proc.poll() is None:
            _kill(proc)
            proc.wait()
        t.join(timeout=5)
        for stream in (proc.stdout, proc.stderr):
            try:
                stream.close()
            except Exception:
                pass
    stderr = "".join(err_lines)
    finish_run(session, None if rc == 0 else describe_exit(rc), stopped_by_user=interrupted, stderr_tail=stderr[-4000:])
    res = RunResult(session, rc, stderr)
    if autosave:
        save()
        res.save_error = save_state["error"]
        if res.save_error:
            res.saved_to = _rescue_copy(session)
            where = f"; a copy was saved to {res.saved_to}" if res.saved_to else "; no copy could be saved either"
            raise SessionSaveError(f"could not save the session to {autosave}: {res.save_error}{where}", res)
        res.saved_to = autosave
    return res
