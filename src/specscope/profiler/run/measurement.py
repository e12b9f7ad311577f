"""The measurements besides a run, run in the worker as a run is: ``roofline`` (the verify cost curve), ``tune``,
``check`` (a model's or an engine's correctness), ``capture`` (Metal GPU traces) and ``trace`` (a saved session's
acceptance traces).

Each is a configuration object (``measure_config.KINDS``) and the function that measures it; the worker runs it and
emits what a run emits — ``run_started``, ``status`` lines as it goes, the result as events of its kind (``roofline``,
``tune``, ``check``, ``capture``: one, and a partial one while it measures, where it has one; ``trace``: one a case),
``run_done`` — so the CLI and the app read it through the same pump and fold it into a session (``Session.apply``) as
they do a run.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any, Callable, Mapping

from specscope.events import Emit, Event, StatusEvent
from specscope.profiler.session.file_io import finite_json

from specscope.profiler.run.measure_config import Measurement, kind_of
from specscope.profiler.run.capture_run import capture_data
from specscope.profiler.run.check_run import check_data
from specscope.profiler.run.roofline_run import roofline_data
from specscope.profiler.run.trace_run import trace_data
from specscope.profiler.run.tune_run import tune_data

# kind -> the function that measures it: ``measure(cfg, say, partial)`` returns the result (None: every part of it was
# given to ``partial`` as it came)
MEASURE: dict[str, Callable[..., Mapping[str, Any] | None]] = {
    "roofline": roofline_data, "tune": tune_data, "check": check_data, "capture": capture_data, "trace": trace_data}


def result_event(kind: str, result: Mapping[str, Any], partial: bool = False) -> Event:
    """The event that carries a measurement's result (or a part of it) to the session."""
    if kind == "trace":  # one case's trace
        return {"event": "trace", "case": result["case"], "trace": result["trace"]}
    if kind == "check":
        return {"event": "check", "check": {"what": result["what"], "report": finite_json(result["report"]),
                                            "text": result["text"], "ok": result["ok"]}}
    if kind == "capture":
        return {"event": "capture", "capture": finite_json(result["description"]), "out_dir": result["out_dir"]}
    ev: Event
    if kind == "roofline":
        ev = {"event": "roofline", "roofline": finite_json(result)}
    else:
        ev = {"event": "tune", "tune": finite_json(result)}
    if partial:
        ev["partial"] = True
    return ev


class Stopped(Exception):
    """The worker was asked to stop (SIGINT/SIGTERM) while measuring."""


def run_measurement(cfg: Measurement, emit: Emit, should_stop=lambda: False) -> str:
    """Measure, emitting as a run does; return the final status ("complete", or "incomplete" when stopped)."""
    from specscope.engine_adapter.engine import environment

    kind = kind_of(cfg)
    measure = MEASURE[kind]
    emit({"event": "run_started", "config": {"measure": kind, "measurement": asdict(cfg)}, "environment": {**environment()},
          "model": {}, "cases": [], "time": time.time()})

    def say(message: str, done: int | None = None, total: int | None = None, notice: bool = False) -> None:
        ev: StatusEvent = {"event": "status", "message": message}
        if done is not None and total is not None:
            ev["done"], ev["total"] = done, total
        if notice:
            ev["notice"] = True
        emit(ev)
        if should_stop():
            raise Stopped

    def partial(result: dict) -> None:
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
