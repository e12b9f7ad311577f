"""What every ``specscope bench`` benchmark shares: the prompt, the targets, ABBA pairs, the result's shape.

``bench`` (the command and most benchmarks), ``bench_equal`` and ``tune`` (``bench tune``) import it.
"""

from __future__ import annotations

import statistics
from typing import Callable

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
STABLE_HALF_WIDTH = 0.01  # --until-stable: stop once the median's 95% interval is within ±1%


def _no_hook(n: int) -> None:
    pass


_on_pair: Callable[[int], None] = _no_hook  # set_pair_hook: run_bench points it at the progress bar


def median_ci95(xs: list[float], resamples: int = 2000, seed: int = 0) -> tuple[float, float] | None:
    """Bootstrap 95% interval of the median of ``xs`` (seeded: the same pairs give the same interval)."""
    import numpy as np

    if len(xs) < 3:
        return None
    a = np.asarray(xs, dtype=float)
    rng = np.random.default_rng(seed)
    meds = np.median(a[rng.integers(0, len(a), size=(resamples, len(a)))], axis=1)
    return float(np.percentile(meds, 2.5)), float(np.percentile(meds, 97.5))


def stable(ratios: list[float], half_width: float = STABLE_HALF_WIDTH) -> bool:
    ci = median_ci95(ratios)
    med = statistics.median(ratios) if ratios else 0
    return bool(ci and med and (ci[1] - ci[0]) / 2 <= half_width * abs(med))


def set_pair_hook(hook: Callable[[int], None] | None) -> None:
    """Call ``hook(n)`` after the n-th pair of every benchmark (``run_bench``'s progress bar); None: nothing."""
    global _on_pair
    _on_pair = hook or _no_hook


def interleaved_pairs(a, one_pair) -> list[tuple]:
    """``one_pair()`` (A then B) ``--pairs`` times; with ``--until-stable``, more (up to ``--max-pairs``)
    until the median ratio A/B is stable to ±1%. Returns the pairs."""
    pairs = []
    for _ in range(a.pairs):
        pairs.append(one_pair())
        _on_pair(len(pairs))
    if getattr(a, "until_stable", False):
        while len(pairs) < max(a.max_pairs, a.pairs) and not stable([x / y for x, y, *_ in pairs]):
            pairs.append(one_pair())
            _on_pair(len(pairs))
    return pairs


def bench_result(name: str, ratios: list[float], raw: dict, unit: str = "ratio", value=None) -> dict:
    op, target = TARGETS[name]
    ratio = statistics.median(ratios) if value is None else value
    met = ratio >= target if op == ">=" else ratio <= target
    ci = median_ci95(ratios) if value is None else None
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


def load_bench_model(a, kind="hybrid"):
    """The model a benchmark runs: --model for the hybrid role, else the demo model of that kind."""
    from specscope.engine_adapter.model.demo_model import demo_model_path
    from specscope.engine_adapter.model.loader import load_model

    path = a.model if (getattr(a, "model", None) and kind == "hybrid") else str(demo_model_path(kind))
    return load_model(path)


def abba_pairs(a, run_a, run_b) -> list[tuple]:
    """(A, B, extra_a, extra_b) per pair, the order alternating: A B, B A, A B, … (``--pairs``, ``--until-stable``).

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

    return interleaved_pairs(a, one)
