"""A measurement run in the worker for a command that wants its result and nothing else (the benchmarks): started as
the Run button and ``specscope run`` start theirs (``runner.run_worker``: the pump, Ctrl+C and SIGTERM, a killed
worker), its events folded into a session, its result read off that session.

How it ended becomes what the command has always done with it: a failure is a ``SpecscopeError`` with the worker's
message (an internal one with the worker's traceback on stderr first), a stop (Ctrl+C, SIGTERM) a
``KeyboardInterrupt`` (``specscope: interrupted``, exit 130), a worker that died an error that says so.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from specscope.errors import SpecscopeError

from specscope.profiler.run.measure_config import Measurement, kind_of


def measured_result(cfg: Measurement, on_event: Callable[[dict], None] | None = None) -> Mapping[str, Any]:
    """Measure ``cfg`` in a worker; its result (the session's entry of its kind). ``on_event(event)`` sees each
    event as it arrives (a benchmark's ``bench_pair``, ``status``)."""
    from specscope.profiler.run.runner import run_worker

    key = kind_of(cfg)
    res = run_worker(cfg, on_event=(lambda ev, _s: on_event(ev)) if on_event else None)
    s = res.session
    errors = s.data["errors"]
    from specscope.profiler.cli.worker_measure import raise_if_failed

    raise_if_failed(res)
    if "stopped by the user" in errors:
        raise KeyboardInterrupt
    if s.status != "complete" or key not in s.data:
        raise SpecscopeError(f"{key} {s.status}: {'; '.join(errors[-1:]) or 'no result'}")
    return s.data[key]  # type: ignore[literal-required]  # the kind's result, kept under its name
