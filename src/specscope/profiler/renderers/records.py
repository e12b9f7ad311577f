"""The shapes the renderers build (``TypedDict``s: plain dicts at run time, keys checked by mypy): the Chrome trace's
events (``trace``), the CSV report's side tables and a case's energy per token (``csv_renderer``).
"""

# no ``from __future__ import annotations``: TypedDict reads NotRequired[...] off evaluated annotations at run time
from typing import Any, Literal, NotRequired, TypedDict, Union


class TraceSpan(TypedDict):
    """A complete event ("ph": "X") of the Chrome trace format: one timed span, in microseconds."""
    name: str
    cat: str
    ph: Literal["X"]
    ts: float
    dur: float
    pid: int
    tid: int
    args: NotRequired[dict[str, Any]]


class TraceMeta(TypedDict):
    """A metadata event ("ph": "M"): a process's or a thread's name or sort index."""
    name: str
    ph: Literal["M"]
    ts: int
    pid: int
    tid: int
    args: dict[str, Any]


TraceEvent = Union[TraceSpan, TraceMeta]


class CaseEnergy(TypedDict):
    """A case's energy from the run's trusted counter (``analysis.energy.case_energy``; None: not available)."""
    plain: float | None               # J per generated token
    spec: float | None
    spec_per_accepted: float | None   # J per accepted draft token
    counter: str                      # "package", "gpu", or "not available"


class CsvSideTables(TypedDict, total=False):
    """The tables the CSV report writes beside itself (``r.<name>.csv``), each as CSV text; only those the session
    has."""
    preflight: str
    verify_cost: str
    tune: str
    trace: str
    context: str
