"""The shapes a benchmark measured in the worker produces (``TypedDict``s: plain dicts at run time, keys checked by
mypy): a benchmark's result (``bench_common.bench_result``, every ``specscope bench`` benchmark) and the memory bench's
reading of one side in a fresh worker (``bench_memory``)."""

# no ``from __future__ import annotations``: TypedDict reads NotRequired[...] off evaluated annotations at run time
from typing import TypedDict

from specscope.profiler.session.bench_record import BenchResult as BenchResult  # the session keeps it: defined there


class PeakReading(TypedDict):
    """One side of the memory bench, measured in a fresh worker: MLX's peak memory and the tokens it made."""
    mlx_peak: int
    tokens: list[int]
