"""What the CLI's ``specscope bench`` shares with the benchmarks measured in the worker: ``run.bench_common`` (the
configuration, the targets, ABBA pairs, the result's shape), read here under the names the CLI has always used, and
the line ``bench predict`` prints per point.
"""

from __future__ import annotations

from specscope.profiler.run.bench_common import (MAX_PAIRS, MIN_LOOK_PAIRS, PREDICT_MAX_CASES, PROMPT,
                                                 STABLE_HALF_WIDTH, TARGETS, BenchConfig, PairHook, abba_pairs,
                                                 bench_result, decided, interleaved_pairs, median_ci95,
                                                 median_interval, stable)
from specscope.profiler.run.bench_run import load_bench_model

__all__ = ["MAX_PAIRS", "MIN_LOOK_PAIRS", "PREDICT_MAX_CASES", "PROMPT", "STABLE_HALF_WIDTH", "TARGETS", "BenchConfig",
           "PairHook", "abba_pairs", "bench_result", "decided", "interleaved_pairs", "load_bench_model", "median_ci95",
           "median_interval", "report_point", "stable"]


def report_point(row: dict) -> None:
    """One point of ``bench predict`` as it is decided (stderr, so ``--json`` stays one document)."""
    import sys

    iv = row.get("error_interval")
    # the run's own 95% interval is of its error as measured; the figure is corrected for the sequential stop
    raw = row.get("error_uncorrected")
    ivt = f"95% bootstrap interval {iv[0] * 100:+.1f}…{iv[1] * 100:+.1f}%" if iv else ""
    if row.get("error_correction") and raw is not None:
        ivt = f" corrected for the sequential stop (as measured {raw * 100:+.1f}%{', ' + ivt if ivt else ''})"
    elif ivt:
        ivt = f" ({ivt})"
    print(f"  k={row['k']} P={row['oracle_p']:.2f}: predicted {row['predicted']:.3f}× measured {row['measured']:.3f}× "
          f"(full rounds; all rounds {row['measured_all_rounds']:.3f}×) "
          f"error {row['error'] * 100:+.1f}%{ivt}, {row['verdict']} after {row['cases']} cases, {row['seconds']:.0f} s",
          file=sys.stderr, flush=True)

