"""The folds of the events a measurement besides a run adds to a session: ``trace`` (a case's acceptance trace),
``check`` and ``capture`` (a command's result, kept whole under its record). ``Session.apply`` dispatches on the
event's name (``FOLDS``); each fold is small and reads only its own event."""

from __future__ import annotations

from typing import Any, Callable

from specscope.events import CaptureEvent, CheckEvent, TraceEvent

from specscope.profiler.session.records import Case, SessionData


def fold_trace(data: SessionData, index: dict[str, Case], ev: TraceEvent) -> None:
    """The case's acceptance trace A(s) (``engine_adapter.measure.acceptance_trace``), kept whole; a trace for a case
    the session does not hold is counted, never a crash."""
    traced = index.get(ev.get("case", ""))
    if traced is None:
        data["dropped_events"] = data.get("dropped_events", 0) + 1
    else:
        traced["trace"] = ev.get("trace")


def fold_check(data: SessionData, index: dict[str, Case], ev: CheckEvent) -> None:
    data["check"] = ev["check"]


def fold_capture(data: SessionData, index: dict[str, Case], ev: CaptureEvent) -> None:
    data["capture"] = {"description": ev["capture"], "out_dir": ev["out_dir"]}


FOLDS: dict[str, Callable[[SessionData, dict[str, Case], Any], None]] = {
    "trace": fold_trace, "check": fold_check, "capture": fold_capture}
