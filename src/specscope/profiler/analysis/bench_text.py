"""A benchmark's result as one line of text: what ``specscope bench`` prints and the app's Checks page shows for a
benchmark's session (``SessionData.benchmarks``)."""

from __future__ import annotations

from typing import Any, Mapping

from specscope.profiler.session.bench_record import BenchResult, benchmarks_of


def bench_line(res: BenchResult) -> str:
    """What was measured, the figure (its min and max, the median's interval), what it rests on, the target, met or
    not."""
    mark = "met" if res["met"] else "MISSED"
    ci = res.get("median_ci95")
    ci_text = f", median's 95% interval (binomial order statistics) {ci[0]:.4f}–{ci[1]:.4f}" if ci else ""
    return (f"{res['benchmark']:<16} {res['unit']:<22} {res['ratio']:.4f}  (min {res['ratio_min']:.4f}, max {res['ratio_max']:.4f}"
            f"{ci_text}; {res.get('sample') or str(res['pairs']) + ' pairs'}; target {res['target']}: {mark})")


def bench_headline(data: Mapping[str, Any]) -> str:
    """A benchmark session in a few words: how many were measured and met their target, and whether it stopped."""
    results = benchmarks_of(data)
    met = sum(1 for r in results if r["met"])
    if len(results) == 1:
        text = f"Benchmark {results[0]['benchmark']}: " + ("target met" if met else "target MISSED")
    else:
        text = f"Benchmarks: {met} of {len(results)} met their target"
    status = data.get("status")
    if status not in (None, "complete"):
        why = "; ".join(data.get("errors", [])[-1:]) or status
        text += f" ({status}: {why}; what was measured before it is kept)"
    return text
