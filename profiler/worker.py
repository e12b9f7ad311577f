"""The worker process: runs the protocol and streams events as JSON lines on stdout.

    python -m profiler.worker '<RunConfig as JSON>'

One event per line, flushed as it happens, so a reader that is stopped or
crashes loses nothing already written. SIGINT/SIGTERM end the run cleanly
with a final ``run_done`` whose status is ``incomplete``.
"""

from __future__ import annotations

import json
import signal
import sys
import time
import traceback

from engine_adapter.errors import SpecscopeError

from .protocol import RunConfig, run_protocol

_stop = {"requested": False}


def _request_stop(signum, frame):
    _stop["requested"] = True


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = sys.stdout
    # Keep stray prints (e.g. from libraries) off the event channel.
    sys.stdout = sys.stderr

    def emit(ev: dict) -> None:
        out.write(json.dumps(ev, ensure_ascii=False) + "\n")
        out.flush()

    signal.signal(signal.SIGTERM, _request_stop)
    signal.signal(signal.SIGINT, _request_stop)
    try:
        cfg = RunConfig.from_dict(json.loads(argv[0]))
        status = run_protocol(cfg, emit, should_stop=lambda: _stop["requested"])
        if _stop["requested"]:
            status = "incomplete"
        emit({"event": "run_done", "status": status, "time": time.time()})
        return 0
    except SpecscopeError as exc:
        emit({"event": "error", "message": str(exc), "kind": "input"})
        return 2
    except BrokenPipeError:
        return 1
    except Exception as exc:  # an engine bug: report it, with the trace on stderr
        traceback.print_exc()
        emit({"event": "error", "message": f"{type(exc).__name__}: {exc}", "kind": "internal"})
        return 1


if __name__ == "__main__":
    sys.exit(main())
