"""The measurements besides a run, run in the worker as a run is: ``roofline`` (the verify cost curve) and ``tune``.

Each is a configuration object (``RooflineConfig``, ``TuneConfig``) and the function that measures it; the worker
runs it and emits what a run emits — ``run_started``, ``status`` lines as it goes, the result as one event of its kind
(``roofline``, ``tune``; a partial one while it measures, where it has one), ``run_done`` — so the CLI and the app
read it through the same pump and fold it into a session (``Session.apply``) as they do a run.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any, Callable, Mapping

from specscope.events import Emit
from specscope.profiler.session.file_io import finite_json

from specscope.profiler.run.measure_config import Measurement, kind_of
from specscope.profiler.run.roofline_run import roofline_data
from specscope.profiler.run.tune_run import tune_data

# kind -> the function that measures it
MEASURE: dict[str, Callable[..., Mapping[str, Any]]] = {"roofline": roofline_data, "tune": tune_data}


class Stopped(Exception):
    """The worker was asked to stop (SIGINT/SIGTERM) while measuring."""


def run_measurement(cfg: Measurement, emit: Emit, should_stop=lambda: False) -> str:
    """Measure, emitting as a run does; return the final status ("complete", or "incomplete" when stopped)."""
    from specscope.engine_adapter.engine import environment

    kind = kind_of(cfg)
    measure = MEASURE[kind]
    emit({"event": "run_started", "config": {"measure": kind, "measurement": asdict(cfg)}, "environment": {**environment()},
          "model": {}, "cases": [], "time": time.time()})

    def say(message: str) -> None:
        emit({"event": "status", "message": message})
        if should_stop():
            raise Stopped

    def partial(result: dict) -> None:
        if kind == "roofline":
            emit({"event": "roofline", "roofline": finite_json(result), "partial": True})
        else:
            emit({"event": "tune", "tune": finite_json(result), "partial": True})
        if should_stop():
            raise Stopped

    try:
        out = measure(cfg, say, partial)
    except Stopped:
        return "incomplete"
    if kind == "roofline":
        emit({"event": "roofline", "roofline": finite_json(out)})
    else:
        emit({"event": "tune", "tune": finite_json(out)})
    return "complete"
