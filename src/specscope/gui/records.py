"""The snapshot the window hands its pages (``SessionModel.snapshot``, ``MainWindow._on_snapshot``, every page's
``update_snapshot``): the charts' data and the summary they were drawn from (``charts.records.ChartData``), and the
session's state beside them. A ``TypedDict``: a plain dict at run time, its keys checked by mypy where a page reads it.
"""

# no ``from __future__ import annotations``: TypedDict reads NotRequired[...] off evaluated annotations at run time
from typing import Any, NotRequired, TypedDict

from .charts.records import ChartData


class SweepSnapshot(TypedDict):
    """A sweep's session (its cases are in its points): what the verdict bar and the status bar say instead of "No
    verdict yet" and "0/3 cases" (``SessionModel._sweep_snapshot``)."""
    status: str                       # ``sweep.sweep_status``
    verdict: str                      # ``sweep.sweep_verdict``
    effect: str                       # ``sweep.dominant_effect`` ("" where none stands out)
    contexts: int                     # how many contexts are in


class Snapshot(ChartData):
    """One snapshot of the session (``SessionModel._publish``): copies, so a page may keep it."""
    status: str
    errors: list[str]
    environment: dict[str, Any]       # ``SessionData.environment``
    model: dict[str, Any]             # ``SessionData.model``
    config: dict[str, Any]            # ``SessionData.config``
    n_cases_done: int
    n_cases: int
    sweep: NotRequired[SweepSnapshot]  # a sweep's session only
