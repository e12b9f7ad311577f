"""A benchmark's result as a session keeps it (``specscope bench WHAT -o FILE``, ``SessionData.benchmarks``), defined
here, in the data floor, so the session can name it; the benchmarks (``run.bench_records``) build it."""

# no ``from __future__ import annotations``: TypedDict reads NotRequired[...] off evaluated annotations at run time
from typing import Any, Mapping, NotRequired, TypedDict, cast


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


def benchmarks_of(data: Mapping[str, Any]) -> list[BenchResult]:
    """The benchmarks a session measured, in run order: its ``benchmarks``, or (a session from before that list) its
    one ``bench``."""
    if data.get("benchmarks"):
        return list(data["benchmarks"])
    return [cast(BenchResult, data["bench"])] if data.get("bench") else []
