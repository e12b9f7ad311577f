"""The verdict over runs: one setting's prediction error pooled over several runs, the run-to-run spread in it.

A run's 95% interval is its own: it resamples the run's cases (or round blocks), so an offset that every case of the
run shares (the machine's state while it ran, the process) is not in it. On the 2-core Linux VM specscope is built
on, twelve default ``run --demo`` runs (MTP head, one code, two days) scattered from −1.6% to +6.8%, more than their own
intervals allow (Cochran's Q 26.3 on 11 degrees of freedom, p = 0.006: about 2.2% between runs), while within a run
neighbouring cases showed no shared offset. So a run's verdict speaks for that run; several runs of the same setting,
pooled here, speak for the method on that machine, with the spread between runs in the interval.

Random effects with the Hartung–Knapp–Sidik–Jonkman interval: each run's error on the log scale, y_i = log(1 + e_i),
its within-run variance v_i from its own 95% interval ((log(1 + hi) − log(1 + lo)) / (2 · 1.96))²; τ² by
DerSimonian–Laird; μ = Σ w_i y_i / Σ w_i with w_i = 1 / (v_i + τ²); its variance q · 1 / Σ w_i with
q = max(1, Σ w_i (y_i − μ)² / (k − 1)) (never narrower than the runs' own intervals allow); Student's t on k − 1
degrees of freedom. Coverage simulated in ``tests/profiler/analysis/test_over_runs.py`` with offsets between runs and
without, each with a negative control that fails (the pooled interval that ignores the offsets; one run's own).
Judged by the one rule (``verdict_rule.decide``) from at least ``MIN_RUNS`` runs.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from collections.abc import Mapping
from typing import Any, Sequence

from specscope.profiler.analysis.records import OverRuns, RunError
from specscope.profiler.analysis.uncertainty import t95
from specscope.profiler.analysis.verdict_rule import decide

MIN_RUNS = 3  # two runs give one degree of freedom: t = 12.7, an interval no verdict comes from
_Z95 = 1.959963984540054


def _log_run(run: RunError) -> tuple[float, float]:
    lo, hi = run["interval"]
    if not (run["error"] > -1 and lo > -1 and hi > lo):
        raise ValueError(f"a run's error and interval must lie above -100% with the interval's ends in order: {run}")
    return math.log1p(run["error"]), ((math.log1p(hi) - math.log1p(lo)) / (2 * _Z95)) ** 2


def _chi2_sf(q: float, df: int) -> float:
    """P(χ²_df ≥ q), by Wilson–Hilferty's cube-root normal approximation (within 0.01 of the exact tail here)."""
    if df <= 0:
        return float("nan")
    z = ((q / df) ** (1 / 3) - (1 - 2 / (9 * df))) / math.sqrt(2 / (9 * df))
    return 1.0 - NormalDist().cdf(z)


def _weighted(ys: Sequence[float], vs: Sequence[float], tau2: float = 0.0) -> tuple[list[float], float]:
    """The weights 1 / (v_i + τ²) and the weighted mean of ``ys``."""
    w = [1 / (v + tau2) for v in vs]
    return w, math.fsum(wi * y for wi, y in zip(w, ys)) / math.fsum(w)


def fixed_interval(runs: Sequence[RunError]) -> list[float]:
    """The inverse-variance pooled 95% interval that takes every run's error to estimate one shared value: what a
    pooling blind to offsets between runs would say (the negative control; never printed as a verdict)."""
    ys, vs = zip(*(_log_run(r) for r in runs))
    w, mu = _weighted(ys, vs)
    half = _Z95 / math.sqrt(math.fsum(w))
    return [math.expm1(mu - half), math.expm1(mu + half)]


def pooled(runs: Sequence[RunError]) -> OverRuns:
    """The error over ``runs`` (each its judged error and its own 95% interval) with its random-effects interval,
    the spread between runs, and the one rule's verdict (undecided from fewer than ``MIN_RUNS`` runs)."""
    if not runs:
        raise ValueError("no runs to pool")
    ys, vs = zip(*(_log_run(r) for r in runs))
    k = len(ys)
    w, mu_fixed = _weighted(ys, vs)
    sw = math.fsum(w)
    q = math.fsum(wi * (y - mu_fixed) ** 2 for wi, y in zip(w, ys))
    c = sw - math.fsum(wi * wi for wi in w) / sw
    tau2 = max(0.0, (q - (k - 1)) / c) if k > 1 and c > 0 else 0.0
    wr, mu = _weighted(ys, vs, tau2)
    swr = math.fsum(wr)
    interval = None
    if k > 1:
        scale = max(1.0, math.fsum(wi * (y - mu) ** 2 for wi, y in zip(wr, ys)) / (k - 1))
        half = t95(k - 1) * math.sqrt(scale / swr)
        interval = [math.expm1(mu - half), math.expm1(mu + half)]
    error = math.expm1(mu)
    verdict = decide(error, interval, units=k, min_units=MIN_RUNS, unit="runs")
    verdict["unit"], verdict["units"] = "runs", k
    return {"runs": k, "error": error, "interval": interval, "between_runs_sd": math.sqrt(tau2), "q": q,
            "heterogeneity_p": _chi2_sf(q, k - 1) if k > 1 else None,
            "run_intervals_cover": sum(1 for r in runs if r["interval"][0] <= error <= r["interval"][1]),
            "verdict": verdict}


def run_error(summary: Mapping[str, Any]) -> tuple[RunError | None, bool]:
    """A run's judged error as the pooling reads it, and whether it was corrected: a run that stopped sequentially
    (``--until decided``) gives its error with the stopping bias taken out (``prediction_error_corrected``), its own
    interval moved with it; any other run its error as measured. (None, False) without an error and an interval."""
    err, iv = summary.get("prediction_error"), summary.get("prediction_error_ci")
    if err is None or not iv:
        return None, False
    corrected = summary.get("prediction_error_corrected")
    if corrected is None:
        return {"error": err, "interval": list(iv)}, False
    shift = corrected - err
    return {"error": corrected, "interval": [iv[0] + shift, iv[1] + shift]}, True
