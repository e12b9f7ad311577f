"""Start a worker process and fold its events into a Session (the headless path).

The GUI starts the same worker command through QProcess; both fold the same
events with ``Session.apply``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from .protocol import RunConfig
from .session import Session

AUTOSAVE_SECONDS = 2.0


def worker_command(cfg: RunConfig) -> list[str]:
    return [sys.executable, "-m", "profiler.worker", json.dumps(cfg.to_dict())]


def worker_env() -> dict:
    env = dict(os.environ)
    # The worker must import this checkout's packages even when run from elsewhere.
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    return env


class RunResult:
    def __init__(self, session: Session, returncode: int, stderr: str):
        self.session, self.returncode, self.stderr = session, returncode, stderr


def run_worker(cfg: RunConfig, on_event=None, autosave: str | None = None) -> RunResult:
    """Run the protocol in a worker; Ctrl+C stops it and keeps what was measured."""
    session = Session()
    proc = subprocess.Popen(
        worker_command(cfg), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=worker_env(), text=True,
        encoding="utf-8", bufsize=1,
    )
    err_lines: list[str] = []
    t = threading.Thread(target=lambda: err_lines.extend(proc.stderr), daemon=True)
    t.start()
    last_save = time.monotonic()
    interrupted = False
    try:
        for line in proc.stdout:
            try:
                ev = json.loads(line)
            except json.JSONDecodeError:
                continue
            session.apply(ev)
            if on_event:
                on_event(ev, session)
            if autosave and (ev.get("event") in ("case_done", "run_done", "breakdown") or time.monotonic() - last_save > AUTOSAVE_SECONDS):
                session.save(autosave)
                last_save = time.monotonic()
    except KeyboardInterrupt:
        interrupted = True
        proc.send_signal(signal.SIGINT)
        try:
            for line in proc.stdout:  # drain what the worker still says
                try:
                    session.apply(json.loads(line))
                except json.JSONDecodeError:
                    pass
        except KeyboardInterrupt:
            proc.kill()
    rc = proc.wait()
    t.join(timeout=5)
    if session.status == "running":
        session.mark_incomplete("stopped by the user" if interrupted else f"worker ended unexpectedly (exit code {rc})")
    if interrupted and session.status == "complete":
        session.data["status"] = "incomplete"
    if autosave:
        session.save(autosave)
    return RunResult(session, rc, "".join(err_lines))
