"""The shapes of what the CLI's commands compute and print (``TypedDict``s: plain dicts at run time, keys checked by
mypy): a benchmark's result (``bench_common.bench_result``, every ``specscope bench`` benchmark), the memory bench's
fresh-process reading, the Metal probe, the run flags' RunConfig fields, and ``specscope trace``'s figures.
"""

# no ``from __future__ import annotations``: TypedDict reads NotRequired[...] off evaluated annotations at run time
from typing import Any, NotRequired, TypedDict


class BenchResult(TypedDict):
    """One ``specscope bench`` benchmark's result (``bench_common.bench_result``; ``bench tune`` builds its own)."""
    benchmark: str
    ratio: float                       # the figure: a median ratio, a share or a largest |error| (``unit`` says which)
    ratio_min: float
    ratio_max: float
    median_ci95: list[float] | None    # the median's 95% interval: binomial order statistics (bench_common.median_interval)
    stable_to_1pct: bool
    pairs: int
    sample: NotRequired[str]           # what the figure rests on, where it is not a number of pairs ("4 runs, 97 rounds")
    target: str                        # "<op> <target>", e.g. ">= 0.98"
    met: bool
    unit: str
    agreement: NotRequired[dict[str, int]]  # bench tune: how many settings agree, are off, are undecided
    raw: dict[str, Any]                # the benchmark's own measurements (each its own keys)


class PeakReading(TypedDict):
    """What a memory bench subprocess prints on its last line."""
    mlx_peak: int
    tokens: list[int]


class MemoryPrograms(TypedDict):
    """The memory bench's programs: (specscope's, mlx-lm's) for each comparison."""
    plain: tuple[str, str]
    speculative: tuple[str, str]


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
