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


class TraceTreeFigures(TypedDict):
    """A tree run's part of ``specscope trace``: the tree traces walked at every budget and at the run's own."""
    budget: int                        # the run's budget (``--tree-budget``)
    depth: int                         # the depth limit (the session's k)
    budgets: list[int]                 # 1..b: every budget the traces can walk
    E: list[float | None]              # E(budget) walked on the traces, pooled over the cases
    E_at_budget: float | None          # E at the run's budget, walked
    full_rounds: int                   # full rounds walked at the run's budget
    acceptance_by_depth: list[float | None]  # at the run's budget: share of paths reaching depth i, i = 1..depth
    depth_histogram: list[int]         # at the run's budget: paths that ended at depth 0..depth
    measured_E: float | None           # the traced cases' own full tree rounds (first repeat)
    measured_rounds: int


class TraceFigures(TypedDict):
    """What ``specscope trace`` prints (``trace.trace_figures``)."""
    drafter: str
    k: int
    k_max: int
    cases: list[TraceCaseFigures]
    classes: dict[str, list[float | None]]  # content class -> E(1..K_max)
    tree: NotRequired[TraceTreeFigures]  # a tree run (``--tree-budget``) only


class RunSetting(TypedDict):
    """What makes saved runs one setting for ``specscope verdict`` (``session_commands._setting``)."""
    model: str | None
    drafter: str | None
    k: int | None
    regime: str | None
    dtype: str | None
