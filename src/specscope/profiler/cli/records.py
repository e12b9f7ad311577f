"""The shapes of what the CLI's commands compute and print (``TypedDict``s: plain dicts at run time, keys checked by
mypy): a benchmark's result (defined with the benchmarks, ``run.bench_records``), the Metal probe, the run flags'
RunConfig fields, and ``specscope trace``'s figures.
"""

# no ``from __future__ import annotations``: TypedDict reads NotRequired[...] off evaluated annotations at run time
from typing import NotRequired, TypedDict

from specscope.profiler.run.bench_records import BenchResult as BenchResult  # measured in the worker: its floor's record


class DistributedArgs(TypedDict):
    """RunConfig's fields from ``--ranks`` / ``--hosts`` / ``--hostfile`` / ``--backend``."""
    ranks: int | None
    hosts: list[str] | None
    hostfile: str | None
    backend: str


class ContextArgs(TypedDict):
    """RunConfig's fields from ``--context`` / ``--context-kind`` / ``--context-file`` (and ``sweep --passes``)."""
    context_kind: str
    context_file: str | None
    sweep: NotRequired[list[int]]      # ``specscope sweep``: the contexts
    sweep_passes: NotRequired[int]
    context: NotRequired[int]          # ``specscope run``: the one context


class TraceCaseFigures(TypedDict):
    """One case of ``specscope trace``: E(k) walked from its acceptance trace."""
    case: str
    content_class: str | None
    positions: int
    estimate: bool
    cost_ms: float                     # the trace's recording cost (its total_ms: always written)
    E: list[float | None]
    measured_E_at_k: float | None


class TraceFigures(TypedDict):
    """What ``specscope trace`` prints (``trace.trace_figures``)."""
    drafter: str
    k: int
    k_max: int
    cases: list[TraceCaseFigures]
    classes: dict[str, list[float | None]]  # content class -> E(1..K_max)


class RunSetting(TypedDict):
    """What makes saved runs one setting for ``specscope verdict`` (``session_commands._setting``)."""
    model: str | None
    drafter: str | None
    k: int | None
    regime: str | None
    dtype: str | None
