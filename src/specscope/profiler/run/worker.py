"""The worker process: runs the protocol and streams events as JSON lines on stdout.

    python -m specscope.profiler.run.worker '<RunConfig as JSON>'
    python -m specscope.profiler.run.worker '{"measure": KIND, "config": {…}}'   (every kind in
        measure_config.KINDS: roofline, tune, check, capture, trace, the benchmarks, and the app's inspect and preflight)

One event per line, flushed as it happens, so a reader that is stopped or
crashes loses nothing already written. SIGINT/SIGTERM end the run cleanly
with a final ``run_done`` whose status is ``incomplete``.

The worker never outlives the process that started it: a watchdog thread
exits as soon as the parent is gone (portable: the parent pid changes when a
process is orphaned), and on Linux the kernel is asked for SIGKILL on parent
death as well (``PR_SET_PDEATHSIG``). A closed stdout (reader gone) ends it too.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import traceback

from specscope.errors import SpecscopeError
from specscope.events import Event

from specscope.profiler.run.config import RunConfig
from specscope.profiler.run.events import SAVE_ACK_ENV, SAVE_ACK_TIMEOUT_S, SAVE_POINTS
from specscope.profiler.run.protocol import run_protocol

_stop = {"requested": False}


def _request_stop(signum, frame):
    _stop["requested"] = True


PARENT_POLL_SECONDS = 0.25


def exit_with_parent() -> None:
    """Exit when the parent process dies, so a killed CLI or app never leaves a worker behind."""
    ppid = os.getppid()
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            PR_SET_PDEATHSIG = 1
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except Exception:  # no libc prctl (musl oddities, sandboxes): the watchdog below still works
            pass
    if os.getppid() != ppid:  # the parent died before the kernel was told
        os._exit(3)

    def watch() -> None:
        while True:
            time.sleep(PARENT_POLL_SECONDS)
            if os.getppid() != ppid:
                os._exit(3)

    threading.Thread(target=watch, name="specscope-parent-watch", daemon=True).start()


def wait_for_save(fd: int = 0, timeout: float = SAVE_ACK_TIMEOUT_S) -> bool:
    """At a save point: wait until the reader has written the session (a line ``SAVED`` on ``fd``), so its save never
    runs beside the next measurement; past ``timeout`` go on. Returns whether to wait at the next save point: False
    once the reader has closed our stdin or it cannot be waited on (a Windows pipe)."""
    import select

    deadline, line = time.monotonic() + timeout, b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0:
            return True
        try:
            ready, _, _ = select.select([fd], [], [], left)
        except (OSError, ValueError):
            return False
        if not ready:
            return True
        chunk = os.read(fd, 64)
        if not chunk:
            return False
        line += chunk
    return True


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = sys.stdout
    # Keep stray prints (e.g. from libraries) off the event channel.
    sys.stdout = sys.stderr

    acked = [os.environ.get(SAVE_ACK_ENV) == "1"]  # the reader saves at each save point and says so on stdin

    def emit(ev: Event) -> None:
        out.write(json.dumps(ev, ensure_ascii=False) + "\n")
        out.flush()
        if acked[0] and ev.get("event") in SAVE_POINTS:
            acked[0] = wait_for_save()

    signal.signal(signal.SIGTERM, _request_stop)
    signal.signal(signal.SIGINT, _request_stop)
    try:
        spec = json.loads(argv[0])
        if "measure" in spec:  # a measurement besides a run (measure_config.KINDS): run.measurement
            from specscope.profiler.run.measure_config import from_argument
            from specscope.profiler.run.measurement import run_measurement

            status = run_measurement(from_argument(spec), emit, should_stop=lambda: _stop["requested"])
        else:
            status = run_protocol(RunConfig.from_dict(spec), emit, should_stop=lambda: _stop["requested"])
        if _stop["requested"]:
            status = "incomplete"
        emit({"event": "run_done", "status": status, "time": time.time()})
        return 0
    except SpecscopeError as exc:
        emit({"event": "error", "message": str(exc), "kind": "input"})
        return 2
    except BrokenPipeError:  # the reader is gone: nobody to report to
        os._exit(1)
    except Exception as exc:  # an engine bug: report it, with the trace on stderr
        traceback.print_exc()
        emit({"event": "error", "message": f"{type(exc).__name__}: {exc}", "kind": "internal"})
        return 1


if __name__ == "__main__":
    exit_with_parent()  # only as a process of its own, never when main() is called in-process
    sys.exit(main())
