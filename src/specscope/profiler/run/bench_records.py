"""The shapes a benchmark measured in the worker produces (``TypedDict``s: plain dicts at run time, keys checked by
mypy): a benchmark's result (``bench_common.bench_result``, every ``specscope bench`` benchmark) and the memory bench's
reading of one side in a fresh worker (``bench_memory``)."""

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
    """One side of the memory bench, measured in a fresh worker: MLX's peak memory and the tokens it made."""
    mlx_peak: int
    tokens: list[int]
