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
  parent process dies (see ``profiler.run.worker``), so no orphan is left behind;
- if the session cannot be saved at the end (disk full), a copy is written to
  the temp folder when possible and ``SessionSaveError`` says where.

The reading, saving and stopping are ``profiler.run.pump``'s, shared with ``profiler.run.launch``.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys

from specscope.profiler.run import launch
from specscope.profiler.run.config import DistSpec, RunConfig
from specscope.profiler.run.events import finish_run
from specscope.profiler.run.measure_config import Measurement, worker_argument
from specscope.profiler.run.pump import EventPump, RunResult, SessionSaveError, describe_exit, worker_env

__all__ = ["RunResult", "SessionSaveError", "run_worker", "worker_command", "worker_env"]


def worker_command(cfg: RunConfig | Measurement) -> list[str]:
    arg = json.dumps(cfg.to_dict()) if isinstance(cfg, RunConfig) else worker_argument(cfg)
    return [sys.executable, "-m", "specscope.profiler.run.worker", arg]


def run_worker(cfg: RunConfig | Measurement, on_event=None, autosave: str | None = None, on_start=None) -> RunResult:
    """Run the protocol (or a measurement besides a run: roofline, tune) in a worker; Ctrl+C stops it and keeps what
    was measured.

    ``on_event(event, session)`` is called for every event; ``on_start(popen)`` once the worker runs.
    A distributed run (``cfg.ranks`` / ``hosts`` / ``hostfile``) goes to ``launch.run_distributed``: the same
    guarantees, the ranks under ``mlx.launch``.
    """
    spec = DistSpec.from_config(cfg) if isinstance(cfg, RunConfig) else None
    if spec is not None:
        assert isinstance(cfg, RunConfig)
        return launch.run_distributed(cfg, spec, on_event=on_event, autosave=autosave, on_start=on_start)
    pump = EventPump(autosave, on_event)  # an unwritable path is refused here, before a model is loaded
    proc = subprocess.Popen(
        worker_command(cfg), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**worker_env(save_ack=True), **getattr(cfg, "worker_env", {})}, text=True, encoding="utf-8", errors="replace", bufsize=1,
    )  # stdin: the pump answers each save point on it, so no save runs beside a measurement

    def stop() -> None:
        try:
            proc.send_signal(signal.SIGINT)
        except OSError:
            pass

    def kill() -> None:
        try:
            proc.kill()
        except OSError:
            pass

    rc, interrupted, stderr = pump.drain(proc, stop=stop, kill=kill, on_start=on_start, save_ack=True)
    finish_run(pump.session, None if rc == 0 else describe_exit(rc), stopped_by_user=interrupted,
               stderr_tail=stderr[-4000:])
    return pump.result(rc, stderr)
