"""What every ``specscope bench`` benchmark shares: the configuration (``BenchConfig``), the prompt, the targets,
ABBA pairs, the result's shape (``BenchResult``).

Nothing here imports the engine (``measure_config`` names these configurations for the app). In the run floor: the
benchmarks measured in the worker (``bench_run``, ``bench_memory``) use it as the CLI's
(``cli.bench``, ``cli.bench_equal``, ``cli.tune``'s ``bench tune``) do.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, fields
from typing import Any, Callable

from specscope.errors import SpecscopeError

from specscope.profiler.run.bench_records import BenchResult

PROMPT = "Explain in two short paragraphs why a verification pass over several tokens can cost as much as decoding them."
TARGETS = {
    "overhead": (">=", 0.98),
    "spec-vs-mlx-lm": (">=", 1.02),
    "rollback": ("<=", 0.02),
    "predict": ("<=", 0.03),
    "memory": ("<=", 1.05),
    "gui": (">=", 0.98),
    "capture": ("<=", 1.01),
    "tune": ("<=", 0.05),
}
STABLE_HALF_WIDTH = 0.01  # the result's "stable to ±1%" flag: the median's 95% interval within ±1%
MIN_LOOK_PAIRS = 3        # --until decided: the fewest pairs whose median has an interval to look at


PairHook = Callable[[int], None]  # called with n after a benchmark's n-th pair (run_bench's progress bar)


MAX_PAIRS = 30  # an A/B benchmark's cap with --until decided
# bench predict's most cases a point may take: a point still undecided at the cap is the one whose error is least
# known (30 left 2-4 of 10 points undecided, and the largest errors were theirs), so the rule gets room to decide
PREDICT_MAX_CASES = 60
PREDICT_P_GRID = (0.0, 0.25, 0.5, 0.75, 1.0)  # bench predict's oracle sweep (--p-grid, --k-grid)
PREDICT_K_GRID = (1, 3)


@dataclass
class BenchConfig:
    """What ``specscope bench`` measures, built from its flags (model references resolved to folders); every
    benchmark reads its settings here, never from the parsed arguments."""

    what: str = "all"
    model: str | None = None          # None: the demo models
    draft_model: str | None = None
    pairs: int = 5                    # interleaved pairs (the minimum with until="decided")
    until: str | None = None          # "decided": add pairs until the median's interval is decided against the target
    max_pairs: int | None = None      # the cap of until="decided" (None: MAX_PAIRS; predict: PREDICT_MAX_CASES)
    max_tokens: int = 64
    num_draft_tokens: int = 2
    component_reps: int = 8           # tune: rounds timed apart per k and drafter
    beside_reps: int = 4              # tune: rounds per earlier accepted count beside each confirmation pair
    prompt: str | None = None         # None: PROMPT
    p_grid: tuple[float, ...] = PREDICT_P_GRID  # predict: the oracle's acceptance rates swept …
    k_grid: tuple[int, ...] = PREDICT_K_GRID    # … at each of these k

    @classmethod
    def from_args(cls, a) -> "BenchConfig":
        """From the parsed flags (the one place the benchmarks meet argparse)."""
        return cls(**{f.name: getattr(a, f.name) for f in fields(cls) if getattr(a, f.name, None) is not None})

    def validate(self) -> None:
        if self.pairs < 1 or self.max_tokens < 4:
            raise SpecscopeError("--pairs must be >= 1 and --max-tokens >= 4")
        if self.component_reps < 1 or self.beside_reps < 1:
            raise SpecscopeError("--component-reps and --beside-reps must be at least 1")
        if not self.p_grid or any(not 0.0 <= p <= 1.0 for p in self.p_grid):
            raise SpecscopeError("--p-grid must list acceptance rates between 0 and 1")
        if not self.k_grid or any(not 1 <= k <= 16 for k in self.k_grid):
            raise SpecscopeError("--k-grid must list draft lengths between 1 and 16")


@dataclass
class MemoryPeakConfig:
    """One side of ``specscope bench memory``, measured in a fresh worker (its peak is this process's alone): the
    same work by specscope's engine or by mlx-lm's, plain decoding or speculative (dense demo + draft model)."""

    side: str = "specscope"           # "specscope" or "mlx_lm"
    work: str = "plain"               # "plain" or "speculative"
    model: str | None = None          # None: the demo model of the work (hybrid for plain, dense for speculative)
    draft_model: str | None = None    # speculative: None is the demo draft model
    max_tokens: int = 64
    num_draft_tokens: int = 2

    def validate(self) -> None:
        if self.side not in ("specscope", "mlx_lm") or self.work not in ("plain", "speculative"):
            raise SpecscopeError(f"memory bench: unknown side {self.side!r} or work {self.work!r}")
        if self.max_tokens < 4 or self.num_draft_tokens < 1:
            raise SpecscopeError("--max-tokens must be >= 4 and -k >= 1")


def median_ci95(xs: list[float], resamples: int = 2000, seed: int = 0, level: float = 0.95) -> tuple[float, float] | None:
    """Bootstrap interval of the median of ``xs`` at ``level`` (seeded: the same pairs give the same interval). It
    covers too little at a few pairs (simulated: 89–93% at 6–10 for a nominal 95%), so no benchmark reports it: the
    tests keep it as the negative control of ``median_interval``."""
    import numpy as np

    if len(xs) < MIN_LOOK_PAIRS:
        return None
    from specscope.profiler.analysis import resample

    meds = resample.statistic(np.asarray(xs, dtype=float), np.median, resample.generator(seed), resamples)
    tail = 100.0 * (1.0 - level) / 2.0
    return float(np.percentile(meds, tail)), float(np.percentile(meds, 100.0 - tail))


def stable(ratios: list[float], half_width: float = STABLE_HALF_WIDTH) -> bool:
    ci = median_interval(ratios, 0.95)
    med = statistics.median(ratios) if ratios else 0
    return bool(ci and med and (ci[1] - ci[0]) / 2 <= half_width * abs(med))


def median_interval(xs: list[float], level: float) -> tuple[float, float] | None:
    """A distribution-free interval of the median at ``level``: the order statistics x_(l) and x_(n+1−l) with the
    largest l for which P(Binomial(n, ½) < l) ≤ (1 − level) / 2 (coverage at least ``level`` for any continuous
    distribution, stalls and skew included); None while n is too small for any such l. A bootstrap of the median
    covers far too little at a few pairs (simulated: 25% wrong decisions where this makes under 5%)."""
    from math import comb

    n = len(xs)
    tail, cdf, l_best = (1.0 - level) / 2.0, 0.0, 0
    for l in range(1, n // 2 + 1):
        cdf += comb(n, l - 1) / 2.0**n  # P(Binomial(n, ½) <= l − 1)
        if cdf > tail:
            break
        l_best = l
    if l_best < 1:
        return None
    s = sorted(xs)
    return s[l_best - 1], s[n - l_best]


def decided(name: str, ratios: list[float], max_looks: int, level: float | None = None) -> bool:
    """``--until decided`` for a benchmark with a target: the median ratio's interval (``median_interval``) lies wholly
    on one side of the target (met, or missed), at the sequential level of ``max_looks`` looks
    (``analysis.sequential``: each look's interval at 1 − 0.05 / looks, so looking after every pair does not bias the
    decision)."""
    from specscope.profiler.analysis.sequential import look_level

    op, target = TARGETS[name]
    ci = median_interval(ratios, look_level(max_looks) if level is None else level)
    return bool(ci and (ci[0] > target or ci[1] < target))


def interleaved_pairs(a: BenchConfig, one_pair, name: str | None = None, on_pair: PairHook | None = None) -> list[tuple]:
    """``one_pair()`` (A then B) ``--pairs`` times; with ``--until decided``, more (up to ``--max-pairs``) until the
    median ratio A/B is decided against the benchmark ``name``'s target (``decided``). Returns the pairs;
    ``on_pair(n)`` after each."""
    pairs = []
    on_pair = on_pair or (lambda n: None)
    for _ in range(a.pairs):
        pairs.append(one_pair())
        on_pair(len(pairs))
    if a.until == "decided" and name in TARGETS:
        cap = max(MAX_PAIRS if a.max_pairs is None else a.max_pairs, a.pairs)
        looks = cap - max(a.pairs, MIN_LOOK_PAIRS) + 1  # one look after each pair from the first that has an interval
        while len(pairs) < cap and not decided(name, [x / y for x, y, *_ in pairs], looks):
            pairs.append(one_pair())
            on_pair(len(pairs))
    return pairs


def bench_result(name: str, ratios: list[float], raw: dict[str, Any], unit: str = "ratio", value=None) -> BenchResult:
    op, target = TARGETS[name]
    ratio = statistics.median(ratios) if value is None else value
    met = ratio >= target if op == ">=" else ratio <= target
    # the median's interval: the binomial order statistics (coverage at least 95% for any continuous distribution,
    # simulated in tests/profiler/cli/test_bench.py); the bootstrap of the median covers too little at a few pairs
    ci = median_interval(ratios, 0.95) if value is None else None
    return {
        "benchmark": name,
        "ratio": ratio,
        "ratio_min": min(ratios) if ratios else ratio,
        "ratio_max": max(ratios) if ratios else ratio,
        "median_ci95": list(ci) if ci else None,
        "stable_to_1pct": bool(ci and (ci[1] - ci[0]) / 2 <= STABLE_HALF_WIDTH * abs(ratio)),
        "pairs": len(ratios),
        "target": f"{op} {target}",
        "met": bool(met),
        "unit": unit,
        "raw": raw,
    }


def abba_pairs(a: BenchConfig, run_a, run_b, name: str | None = None, on_pair: PairHook | None = None) -> list[tuple]:
    """(A, B, extra_a, extra_b) per pair, the order alternating: A B, B A, A B, … (``--pairs``, ``--until decided``
    against the target of the benchmark ``name``).

    ``run_a``/``run_b`` return a value or (value, extra)."""
    n = [0]

    def split(r):
        return r if isinstance(r, tuple) else (r, None)

    def one():
        flip = n[0] % 2 == 1
        n[0] += 1
        if flip:
            y, ey = split(run_b())
            x, ex = split(run_a())
        else:
            x, ex = split(run_a())
            y, ey = split(run_b())
        return x, y, ex, ey

    return interleaved_pairs(a, one, name, on_pair)
