"""The measurements besides a run, run in the worker as a run is: ``roofline`` (the verify cost curve), ``tune``, and
the benchmarks measured as one (``bench``: overhead, spec-vs-mlx-lm, rollback) or a reading at a time (``memory_peak``).

Each is a configuration object (``measure_config.KINDS``) and the function that measures it (``MEASURE``); the worker
runs it and emits what a run emits — ``run_started`` (one shape, ``started``), ``status`` lines as it goes, the result
as one event of its kind (a partial one while it measures, where it has one; a benchmark's pairs as ``bench_pair``),
``run_done`` — so the CLI and the app read it through the same pump and fold it into a session (``Session.apply``) as
they do a run.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any, Callable, Mapping, cast

from specscope.events import Emit, Event, RunStartedEvent
from specscope.profiler.session.file_io import finite_json

from specscope.profiler.run.measure_config import Measurement, kind_of
from specscope.profiler.run.bench_memory import memory_peak
from specscope.profiler.run.bench_run import bench_data
from specscope.profiler.run.roofline_run import roofline_data
from specscope.profiler.run.tune_run import tune_data

# kind -> the function that measures it: ``measure(cfg, say, partial)`` returns the result (the event of its kind)
MEASURE: dict[str, Callable[..., Mapping[str, Any]]] = {"roofline": roofline_data, "tune": tune_data,
                                                        "bench": bench_data, "memory_peak": memory_peak}


class Stopped(Exception):
    """The worker was asked to stop (SIGINT/SIGTERM) while measuring."""


def started(measure: str, config: Mapping[str, Any], environment: Mapping[str, Any], model: Mapping[str, Any] | None = None,
            cases: list | None = None) -> RunStartedEvent:
    """The one ``run_started`` every measurement emits (a run's protocol too): what it measures, its configuration."""
    return {"event": "run_started", "measure": measure, "config": dict(config), "environment": dict(environment),
            "model": dict(model or {}), "cases": list(cases or []), "time": time.time()}


def _result(kind: str, out: Mapping[str, Any], partial: bool = False) -> Event:
    """The result as the event of its kind (``roofline``, ``tune``, ``bench``, ``memory_peak``): ``{kind: out}``."""
    ev: dict[str, Any] = {"event": kind, kind: finite_json(out)}
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

    def say(message: str) -> None:
        emit({"event": "status", "message": message})
        if should_stop():
            raise Stopped

    def partial(result: Mapping[str, Any]) -> None:
        if kind == "bench":  # a benchmark's partial is its progress: the pair just measured
            emit({"event": "bench_pair", "benchmark": result["benchmark"], "pair": result["pair"]})
        else:
            emit(_result(kind, result, partial=True))
        if should_stop():
            raise Stopped

    try:
        out = measure(cfg, say, partial)
    except Stopped:
        return "incomplete"
    emit(_result(kind, out))
    return "complete"
