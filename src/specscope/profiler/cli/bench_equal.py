"""Benchmarks that compare equal work, in ABBA order (``specscope bench overhead|memory|predict``); ``overhead`` is
measured in the worker as one measurement (``run.bench_run``), ``memory`` a reading at a time, each in a fresh worker
(``run.bench_memory``), ``predict`` a run at a time (``run_worker``).

- ``abba_pairs`` (in ``bench_common``): every A/B benchmark alternates its order pair by pair (A B, B A, A B, …), so a drift on a
  shared machine (heat, a neighbour's load) hits both sides alike instead of always the one that runs second.
- ``overhead``: specscope's plain decoding against ``mlx_lm.stream_generate``, the same span and tokens on both sides
  (``run.bench_run``, where it is measured).
- ``memory``: peak MLX memory for the same work on both sides, each in a fresh worker: plain vs plain
  (``plain_generate`` vs ``stream_generate``, N tokens) and speculative vs speculative (dense demo + draft
  model, k drafts: ``speculative_generate`` vs ``speculative_generate_step``, the pair mlx-lm can run). The
  figure is the larger raw ratio; a fixed allowance is printed as its own number, never folded in.
- ``predict``: the genuine prediction — ``run``'s summary ``predicted_speedup`` (T_decode from plain decoding,
  T_verify(k+1) and T_draft timed apart, only E from the run) — against the end-to-end measured speedup, over an
  oracle sweep P = 0…1 at k = 1 and 3. The same-round figure (``ledger_speedup``) is reported beside it.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from dataclasses import replace

from specscope.errors import SpecscopeError

from specscope.profiler.cli.bench_common import PROMPT, BenchConfig, PairHook, abba_pairs, bench_result
from specscope.profiler.run.bench_common import MemoryPeakConfig
from specscope.profiler.run.bench_records import BenchResult, PeakReading

ALLOWANCE_BYTES = 16 * 2**20  # a fixed amount for what specscope keeps that mlx-lm does not (printed apart)


# -- memory --------------------------------------------------------------------------------------------------------
def _peak(cfg: MemoryPeakConfig) -> PeakReading:
    """One side's reading, measured in a fresh worker (``run.bench_memory``): its peak is that work's alone."""
    from specscope.profiler.cli.measured import measured_result

    return measured_result(cfg)  # type: ignore[return-value]  # a memory_peak result: a PeakReading


def bench_memory(a: BenchConfig, on_pair: PairHook | None = None) -> BenchResult:
    rows = {}
    for what in ("plain", "speculative"):  # in order
        ours, theirs = (MemoryPeakConfig(side=side, work=what, model=a.model, draft_model=a.draft_model,
                                         max_tokens=a.max_tokens, num_draft_tokens=a.num_draft_tokens)
                        for side in ("specscope", "mlx_lm"))
        a_small = replace(a, pairs=max(1, min(a.pairs, 3)), until=None, max_pairs=0)
        pairs = abba_pairs(a_small, lambda ours=ours: _peak(ours), lambda theirs=theirs: _peak(theirs), on_pair=on_pair)
        if not all(x["tokens"] == y["tokens"] for x, y, *_ in pairs):
            raise SpecscopeError(f"memory ({what}): the two sides produced different tokens; the comparison is void")
        ours_b, theirs_b = [x["mlx_peak"] for x, *_ in pairs], [y["mlx_peak"] for _, y, *_ in pairs]
        rows[what] = {"specscope_peak_bytes": ours_b, "mlx_lm_peak_bytes": theirs_b,
                      "raw_ratio": statistics.median(x / y for x, y in zip(ours_b, theirs_b)),
                      "ratio_with_allowance": statistics.median(x / (y + ALLOWANCE_BYTES) for x, y in zip(ours_b, theirs_b)),
                      "extra_bytes": statistics.median(x - y for x, y in zip(ours_b, theirs_b))}
    worst = max(rows, key=lambda w: rows[w]["raw_ratio"])
    ratios = [rows[w]["raw_ratio"] for w in rows]
    return bench_result("memory", ratios, {**rows, "worst": worst, "allowance_bytes": ALLOWANCE_BYTES, "order": "ABBA",
                                           "note": "the figure is the larger raw ratio; the allowance is shown apart"},
                        value=rows[worst]["raw_ratio"]) | {
        "sample": f"{len(rows[worst]['specscope_peak_bytes'])} pairs at each of {len(rows)} settings"}


# -- predict -------------------------------------------------------------------------------------------------------
def predict_sweep(a: BenchConfig, ps, ks, max_tokens: int, cap: int, run=None, on_point=None) -> list[dict]:
    """One ``run --until decided`` per (k, P): the prompt as up to ``cap`` cases, added one at a time until the
    prediction's verdict is decided at the sequential level (``analysis.sequential``); the summary's judged prediction
    and its ledger vs the end-to-end measurement, with how many cases the point took and how long."""
    from specscope.profiler.run.config import RunConfig
    from specscope.profiler.run.runner import run_worker
    from specscope.profiler.analysis.summary import summarize

    run = run or (lambda cfg: summarize(run_worker(cfg).session))
    folder = tempfile.mkdtemp(prefix="specscope-bench-predict-")
    suite = os.path.join(folder, "suite.json")
    with open(suite, "w", encoding="utf-8") as f:  # the prompt again and again: each case another repeat of the point
        json.dump({"name": "bench", "cases": [{"id": f"bench-{i + 1}", "content_class": "en", "prompt": PROMPT}
                                              for i in range(cap)]}, f)
    rows = []
    for k in ks:
        for p in ps:
            cfg = RunConfig(model=a.model, demo=a.model is None, drafter="oracle", oracle_p=p, num_draft_tokens=k,
                            max_tokens=max_tokens, suite=suite, cases=cap, warmup=1, repeats=1, breakdown=False,
                            until="decided")
            t0 = time.perf_counter()
            s = run(cfg)
            pred = s.get("predicted_speedup")
            # what the prediction is judged against: the full rounds (``rounds.judged_rounds``), as the verdict and
            # its interval are; every round's speed (with each case's shorter last rounds) is kept beside it
            meas = s.get("judged_measured_speedup")
            if pred is None or meas is None:
                raise SpecscopeError(f"predict: no prediction at k={k}, P={p}: {s.get('prediction_unavailable') or 'no measurement'}")
            verdict = s.get("prediction_verdict") or {}
            raw, corrected = pred / meas - 1.0, s.get("prediction_error_corrected")
            rows.append({"k": k, "oracle_p": p, "measured_p": s.get("p"), "tokens_per_round": s.get("tokens_per_round"),
                         # the error with the bias of the run's sequential stop taken out, the raw one beside it
                         "predicted": pred, "measured": meas, "error": corrected if corrected is not None else raw,
                         "error_uncorrected": raw, "error_correction": s.get("prediction_error_correction"),
                         "measured_all_rounds": s.get("measured_speedup"),
                         "error_interval": s.get("prediction_error_ci"), "verdict": verdict.get("state"),
                         "cases": s.get("cases_measured"), "seconds": time.perf_counter() - t0,
                         "division": s.get("division_speedup"), "division_error": s.get("division_error"),
                         "ledger": s.get("ledger_speedup"),
                         "ledger_error": (s["ledger_speedup"] / meas - 1.0) if s.get("ledger_speedup") else None,
                         "prediction_source": s.get("prediction_source")})
            if on_point:
                on_point(rows[-1])
    return rows


def bench_predict(a: BenchConfig, on_pair: PairHook | None = None) -> BenchResult:
    """Oracle sweep over ``--p-grid`` at each k of ``--k-grid`` (P = 0, 0.25, 0.5, 0.75, 1 at k = 1 and 3 unless given): the largest |error| of the judged prediction (each
    corrected for its sequential stop, ``analysis.sequential.CORRECTION``), each point run until its verdict is decided (at most ``--max-pairs`` cases of the prompt; PREDICT_MAX_CASES unless given)."""
    from specscope.profiler.cli.bench_common import PREDICT_MAX_CASES, report_point

    cap = max(PREDICT_MAX_CASES if a.max_pairs is None else a.max_pairs, 8)  # a verdict needs 8 units (MIN_UNITS)
    t0 = time.perf_counter()
    rows = predict_sweep(a, list(a.p_grid), list(a.k_grid), a.max_tokens, cap, on_point=report_point)
    errs = [abs(r["error"]) for r in rows]
    return bench_result("predict", [], {"sweep": rows, "cap": cap, "seconds": time.perf_counter() - t0,
                                        "undecided": sum(1 for r in rows if r["verdict"] not in ("agrees", "off")),
                                        "what": "run's judged prediction (components timed apart) vs end-to-end, each "
                                                "point until its verdict is decided; each error corrected for the "
                                                "sequential stop where the run gives it"},
                        unit="max |relative error|", value=max(errs)) | {"ratio_min": min(errs), "ratio_max": max(errs),
                                                                        "pairs": sum(r["cases"] or 0 for r in rows),
                                                                        "sample": f"{sum(r['cases'] or 0 for r in rows)} "
                                                                                  f"cases over {len(rows)} points"}
