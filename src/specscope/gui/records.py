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
    measure: str                      # ``SessionData.measure``: what was measured ("run", "sweep", "roofline", …)
    n_cases_done: int
    n_cases: int
    sweep: NotRequired[SweepSnapshot]  # a sweep's session only


# -- the setup panel's parts of a RunConfig --------------------------------------------------------------------------

class ContextFields(TypedDict):
    """The RunConfig fields of the context choice (``ContextChoice.context_fields``)."""
    context: int
    context_kind: str
    context_file: str | None


class DistributedFields(TypedDict, total=False):
    """The RunConfig fields of the Where choice (``SetupPanel.distributed``): none for a run in one process, ranks on
    this machine, or hosts (a list or a hostfile) with their backend."""
    ranks: int
    hosts: list[str]
    hostfile: str
    backend: str


# -- the History page -------------------------------------------------------------------------------------------------

class HistoryEntry(TypedDict):
    """One session file as the History page lists it (``read_entry``): where it is and when; with ``error`` set, why it
    cannot be shown, else what it ran and its headline figures. ``loading``: a row still being read."""
    path: str
    file: str
    error: NotRequired[str | None]
    mtime: NotRequired[float | None]
    loading: NotRequired[bool]
    started: NotRequired[float | None]
    model: NotRequired[str]
    demo: NotRequired[bool]
    shape: NotRequired[str | None]
    drafter: NotRequired[str]
    k: NotRequired[int]
    regime: NotRequired[str]
    status: NotRequired[str]
    cases_done: NotRequired[int]
    cases_total: NotRequired[int]
    plain_tok_s: NotRequired[float | None]
    spec_tok_s: NotRequired[float | None]
    measured_speedup: NotRequired[float | None]
    p: NotRequired[float | None]
    acceptance: NotRequired[str]
    energy_ratio: NotRequired[float | None]   # speculative ÷ plain J per token (None: energy not available)
    energy: NotRequired[str]                  # the energy figures in words, or why there are none
    last_error: NotRequired[str | None]
