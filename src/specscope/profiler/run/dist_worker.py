"""The worker of a distributed run: one process per rank, started by ``mlx.launch`` (see ``profiler.run.launch``).

    python -m specscope.profiler.run.dist_worker '<RunConfig as JSON>' ['{"backend": "ring", "hosts": [...]}']

Every rank runs the whole protocol with a ``DistributedEngine`` (the target sharded over the group), in
lockstep, on the same prompts. Only rank 0 writes events (JSON lines on stdout, as ``profiler.run.worker``);
the other ranks write nothing on stdout (``mlx.launch`` merges every rank's stdout into one stream) and
send their timings to rank 0 through the engine's collectives. Every rank says who it is on stderr
(``specscope-rank R pid=P host=H``) and, if it fails, why (``specscope-rank-error R: message``), so the
launcher can name the rank that ended a run.

Stopping: ``stop`` on stdin (``mlx.launch`` forwards the launcher's stdin to every rank) or SIGINT asks
rank 0 to end the run cleanly (``run_done`` with status ``incomplete``); the other ranks then lose their
peer and exit, and the launcher ends whatever is left. SIGTERM (``mlx.launch`` terminating the survivors
of a failed rank) is not a user stop. A rank whose peer is lost exits with ``EXIT_PEER_LOST`` and no
``run_done``: the launcher names the rank that actually failed.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
import traceback

from specscope.errors import SpecscopeError
from specscope.events import Event

from specscope.profiler.run.config import RunConfig
from specscope.profiler.run.rank_monitor import EXIT_PEER_LOST, RANK_ERROR_MARK, RANK_MARK

DIST_KEYS = ("ranks", "hosts", "backend", "hostfile")  # distributed settings, when RunConfig carries them

_flags = {"user_stop": False, "terminated": False}


def _rank() -> int:
    try:
        return int(os.environ.get("MLX_RANK", "0"))
    except ValueError:
        return 0


def peer_lost(exc: BaseException) -> bool:
    """MLX's ring / JACCL backends raise a RuntimeError when a peer's connection goes away."""
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and any(s in text for s in ("connection to a peer was lost", "[ring]", "[jaccl]",
                                                                    "closed by the peer", "broken pipe"))


def _watch_stdin() -> None:
    """``stop`` on stdin is the launcher's way to ask for a clean end (it reaches every rank through mlx.launch)."""

    def run() -> None:
        try:
            for line in sys.stdin:
                if line.strip() == "stop":
                    _flags["user_stop"] = True
        except (OSError, ValueError):
            pass

    threading.Thread(target=run, name="specscope-stop-watch", daemon=True).start()


def split_config(d: dict, dist: dict | None = None) -> tuple[RunConfig, dict]:
    """The run's settings and the distributed ones (from the second argument, or fields RunConfig may carry)."""
    d = dict(d)
    dist = dict(dist or {})
    for k in DIST_KEYS:  # taken out: a rank runs the protocol as a plain run (a hostfile path exists only here)
        if k in d:
            v = d.pop(k)
            if v not in (None, "", []):
                dist.setdefault(k, v)
    return RunConfig.from_dict(d), dist


def open_distributed_engine(cfg: RunConfig, emit, backend: str = "ring"):
    """``protocol.open_engine`` for a rank: the same settings, the target sharded over the group."""
    from specscope.engine_adapter.distributed.engine import DistributedEngine

    engine = DistributedEngine.open(cfg.engine_params(),
                                    status=lambda message: emit({"event": "status", "message": message}),
                                    backend=backend)
    cfg.drafter, cfg.mtp_weights = engine.drafter_name, engine.params.mtp_weights
    return engine


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    rank = _rank()
    out = sys.stdout
    sys.stdout = sys.stderr  # stray prints stay off the event channel, on every rank

    def emit(ev: Event) -> None:
        if rank == 0:
            out.write(json.dumps(ev, ensure_ascii=False) + "\n")
            out.flush()

    def say_error(message: str) -> None:
        print(f"{RANK_ERROR_MARK} {rank}: {message}", file=sys.stderr, flush=True)

    print(f"{RANK_MARK} {rank} pid={os.getpid()} host={socket.gethostname()}", file=sys.stderr, flush=True)
    signal.signal(signal.SIGINT, lambda s, f: _flags.update(user_stop=True))
    signal.signal(signal.SIGTERM, lambda s, f: _flags.update(terminated=True))
    _watch_stdin()
    from specscope.profiler.run import protocol

    try:
        cfg, dist = split_config(json.loads(argv[0]), json.loads(argv[1]) if len(argv) > 1 else None)
        backend = dist.get("backend") or "ring"
        status = protocol.run_protocol(cfg, emit, should_stop=lambda: _flags["user_stop"] or _flags["terminated"],
                                       open_engine=lambda c, e: open_distributed_engine(c, e, backend))
        if _flags["user_stop"] or _flags["terminated"]:
            status = "incomplete"
        emit({"event": "run_done", "status": status, "time": time.time()})
        return 0
    except SpecscopeError as exc:
        say_error(str(exc))
        emit({"event": "error", "message": str(exc), "kind": "input"})
        return 2
    except BrokenPipeError:
        os._exit(1)
    except Exception as exc:
        if peer_lost(exc):
            if _flags["user_stop"]:  # the other ranks went away because the run was being stopped
                emit({"event": "run_done", "status": "incomplete", "time": time.time()})
                return 0
            say_error(f"lost the connection to another rank ({exc})")
            emit({"event": "status", "message": f"rank {rank} lost the connection to another rank"})
            return EXIT_PEER_LOST
        traceback.print_exc()
        say_error(f"{type(exc).__name__}: {exc}")
        emit({"event": "error", "message": f"{type(exc).__name__}: {exc}", "kind": "internal"})
        return 1


if __name__ == "__main__":
    from specscope.profiler.run.worker import exit_with_parent

    exit_with_parent()  # a rank never outlives mlx.launch (nor, remotely, its ssh session)
    code = main()
    sys.stdout.flush() if sys.stdout else None
    os._exit(code)  # do not wait in interpreter shutdown for a backend thread still talking to a lost peer
