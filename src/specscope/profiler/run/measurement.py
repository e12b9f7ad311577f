"""The measurements besides a run, run in the worker as a run is: ``roofline`` (the verify cost curve), ``tune``,
``check`` (a model's or an engine's correctness), ``capture`` (Metal GPU traces), ``trace`` (a saved session's
acceptance traces), and the benchmarks measured as one (``bench``: overhead, spec-vs-mlx-lm, rollback, tune) or a
reading at a time (``memory_peak``), and the app's live lines: ``inspect`` (a model's description) and ``preflight``
(the machine's checks).

Each is a configuration object (``measure_config.KINDS``) and the function that measures it (``MEASURE``); the worker
runs it and emits what a run emits — ``run_started`` (one shape, ``started``), ``status`` lines as it goes, the result
as events of its kind (one, and a partial one while it measures, where it has one; ``trace``: one a case; a
benchmark's pairs as ``bench_pair``), ``run_done`` — so the CLI and the app read it through the same pump and fold it
into a session (``Session.apply``) as they do a run.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any, Callable, Mapping, cast

from specscope.events import Emit, Event, RunStartedEvent, StatusEvent
from specscope.profiler.session.file_io import finite_json

from specscope.profiler.run.measure_config import Measurement, kind_of
from specscope.profiler.run.bench_memory import memory_peak
from specscope.profiler.run.bench_run import bench_data
from specscope.profiler.run.capture_run import capture_data
from specscope.profiler.run.check_run import check_data
from specscope.profiler.run.query_run import inspect_data, preflight_data
from specscope.profiler.run.roofline_run import roofline_data
from specscope.profiler.run.trace_run import trace_data
from specscope.profiler.run.tune_run import tune_data

# kind -> the function that measures it: ``measure(cfg, say, partial)`` returns the result (None: every part of it was
# given to ``partial`` as it came)
MEASURE: dict[str, Callable[..., Mapping[str, Any] | None]] = {
    "roofline": roofline_data, "tune": tune_data, "check": check_data, "capture": capture_data, "trace": trace_data,
    "bench": bench_data, "memory_peak": memory_peak, "inspect": inspect_data, "preflight": preflight_data}


class Stopped(Exception):
    """The worker was asked to stop (SIGINT/SIGTERM) while measuring."""


def started(measure: str, config: Mapping[str, Any], environment: Mapping[str, Any], model: Mapping[str, Any] | None = None,
            cases: list | None = None) -> RunStartedEvent:
    """The one ``run_started`` every measurement emits (a run's protocol too): what it measures, its configuration."""
    return {"event": "run_started", "measure": measure, "config": dict(config), "environment": dict(environment),
            "model": dict(model or {}), "cases": list(cases or []), "time": time.time()}


def result_event(kind: str, result: Mapping[str, Any], partial: bool = False) -> Event:
    """The event that carries a measurement's result (or a part of it) to the session: ``{kind: result}`` but for
    ``trace`` (one case's), ``check`` and ``capture`` (their records)."""
    if kind == "trace":  # one case's trace
        return {"event": "trace", "case": result["case"], "trace": result["trace"]}
    if kind == "check":
        return {"event": "check", "check": {"what": result["what"], "report": finite_json(result["report"]),
                                            "text": result["text"], "ok": result["ok"]}}
    if kind == "capture":
        return {"event": "capture", "capture": finite_json(result["description"]), "out_dir": result["out_dir"]}
    ev: dict[str, Any] = {"event": kind, kind: finite_json(result)}
    if partial:
        ev["partial"] = True
    return cast(Event, ev)


def run_measurement(cfg: Measurement, emit: Emit, should_stop=lambda: False) -> str:
    """Measure, emitting as a run does; return the final status ("complete", or "incomplete" when stopped)."""
    cfg.validate()  # bad input refused before the engine (and MLX) loads, as a run's is
    from specscope.engine_adapter.engine import environment

    kind = kind_of(cfg)
    measure = MEASURE[kind]
    emit(started(kind, asdict(cfg), environment()))

    def say(message: str, done: int | None = None, total: int | None = None, notice: bool = False) -> None:
        ev: StatusEvent = {"event": "status", "message": message}
        if done is not None and total is not None:
            ev["done"], ev["total"] = done, total
        if notice:
            ev["notice"] = True
        emit(ev)
        if should_stop():
            raise Stopped

    def partial(result: Mapping[str, Any]) -> None:
        if kind == "bench":  # a benchmark's partial is its progress: the pair just measured
            emit({"event": "bench_pair", "benchmark": result["benchmark"], "pair": result["pair"]})
        else:
            emit(result_event(kind, result, partial=True))
        if should_stop():
            raise Stopped

    try:
        out = measure(cfg, say, partial)
    except Stopped:
        return "incomplete"
    if out is not None:
        emit(result_event(kind, out))
    return "complete"
