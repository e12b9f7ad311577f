"""``specscope bench``: does specscope measure without distorting, and is its engine as fast as mlx-lm's?

Every benchmark interleaves its two contenders in ABBA order (A B, B A, A B, …) on the same model, prompt and token
count after a warm-up, compares equal work (see ``bench_equal``), and reports the median of per-pair ratios with min
and max. Each is measured in the worker, as a run is: ``overhead``, ``spec-vs-mlx-lm``, ``rollback`` and ``tune`` as
one measurement each (``run.bench_run``), ``memory`` a reading at a time in a fresh worker, ``predict`` and ``gui`` a
run at a time (``gui``'s app half here: it measures the app); ``capture`` still runs here. Nothing here is asserted
in the test suite: machines are shared and noisy; the tests only check that each benchmark runs and emits well-formed
JSON.
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import replace


from specscope.profiler.cli.bench_common import (
    PROMPT,
    abba_pairs,
    bench_result,
    load_bench_model,
    PairHook,
    BenchConfig,
)
from specscope.profiler.cli.bench_equal import bench_memory, bench_predict
from specscope.profiler.run.bench_records import BenchResult
from specscope.profiler.analysis.bench_text import bench_line as _line  # the line the app's Checks page shows too

# -- overhead, spec-vs-mlx-lm, rollback: each one measurement in the worker (profiler.run.bench_run) --------------
def in_worker(name: str):
    """The benchmark ``name`` as the CLI runs it: its ``BenchConfig`` measured in a worker (kind ``bench``), each pair
    reported to ``on_pair`` as its ``bench_pair`` event arrives."""

    def bench(a: BenchConfig, on_pair: PairHook | None = None) -> BenchResult:
        from specscope.profiler.cli.measured import measured_result

        def on_event(ev: dict) -> None:
            if ev["event"] == "bench_pair" and on_pair:
                on_pair(ev["pair"])

        return measured_result(replace(a, what=name), on_event)  # type: ignore[return-value]  # a bench result

    bench.__name__ = bench.__qualname__ = f"bench_{name.replace('-', '_')}"
    return bench


# -- gui: engine tok/s with the app open and charts updating vs headless -------------------------
def bench_gui(a: BenchConfig, on_pair: PairHook | None = None) -> BenchResult:
    from specscope.display import offscreen_if_headless

    offscreen_if_headless()
    from specscope.profiler.run.config import RunConfig
    from specscope.profiler.run.runner import run_worker
    from specscope.profiler.analysis.summary import summarize

    cfg = RunConfig(demo=a.model is None, model=a.model, drafter="mtp" if a.model is None else "auto", num_draft_tokens=a.num_draft_tokens,
                    max_tokens=a.max_tokens, cases=2 if a.max_tokens >= 16 else 1, warmup=1 if a.pairs > 1 else 0,
                    breakdown=False)

    def headless():
        s = summarize(run_worker(cfg).session)
        return s["plain_tok_s"], s["spec_tok_s"]

    def with_gui():
        from specscope.profiler.renderers.plugins import COMMANDS, load

        c0 = _process_cpu_s()
        s = load(COMMANDS, "bench-gui", "the app half of bench gui")(cfg)
        c1 = _process_cpu_s()
        return s["plain_tok_s"], s["spec_tok_s"], (c1 - c0 if c0 is not None and c1 is not None else None)

    pairs = []
    for i in range(max(1, min(a.pairs, 3))):  # ABBA: the app first, then headless first, …
        if i % 2 == 0:
            pairs.append((with_gui(), headless()))
        else:
            h = headless()
            pairs.append((with_gui(), h))
    ratios = [g[0] / h[0] for g, h in pairs]
    return bench_result("gui", ratios, {"gui_plain_tok_s": [g[0] for g, _ in pairs], "headless_plain_tok_s": [h[0] for _, h in pairs],
                                        "gui_spec_tok_s": [g[1] for g, _ in pairs], "headless_spec_tok_s": [h[1] for _, h in pairs],
                                        "spec_ratios": [g[1] / h[1] for g, h in pairs],
                                        # CPU seconds the app's process spent on each run (all its threads; the worker not counted)
                                        "gui_process_cpu_s": [g[2] for g, _ in pairs], "order": "ABBA"})


def _process_cpu_s() -> float | None:
    """User + system CPU seconds of this process so far (None where the platform does not say)."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# -- capture: the verify forward with rollback capture vs the same forward with no hooks at all ---
def bench_capture(a: BenchConfig, on_pair: PairHook | None = None) -> BenchResult:
    """Capture and the hidden-state tap must cost nothing: the verify forward stays mlx-lm's own; the rollback capture
    and the tap (the final norm's output, as MTP reads it, and two decoder layers' outputs, as a DFlash drafter reads
    them) only keep references."""
    import mlx.core as mx
    from mlx_lm.models.cache import make_prompt_cache

    from specscope.engine_adapter.decode.decoding import plain_generate, prefill
    from specscope.engine_adapter.cache.capture import capturing, install_capture, uninstall_capture
    from specscope.engine_adapter.cache.context import freeze, thaw
    from specscope.engine_adapter.cache.hidden import install_tap, tapping, trunk_layers, uninstall_tap
    from specscope.engine_adapter.cache.rollback import VerifyRollback

    lm = load_bench_model(a)
    model = lm.model
    prompt = lm.encode(PROMPT)
    k = a.num_draft_tokens
    cont = [r["token"] for r in plain_generate(model, prompt, k + 2)]
    inputs = mx.array(cont[: k + 1], dtype=mx.uint32)
    reps = 5
    n_layers = len(trunk_layers(model))
    tapped = tuple(sorted({min(1, n_layers - 1), max(0, n_layers - 2)}))  # as a DFlash drafter's target_layer_ids

    # the prompt prefilled once, each timed forward from a copy of that cache: a recurrent layer's prefill on MLX's
    # CPU backend costs ~10x the verify forward, and it is not what this benchmark times
    uninstall_capture(model)
    uninstall_tap(model)
    base = make_prompt_cache(model)
    mx.eval(prefill(model, base, prompt), [c.state for c in base])
    prompt_cache = freeze(base)

    def verify_ms(hooked: bool) -> float:
        (install_capture if hooked else uninstall_capture)(model)
        if hooked:
            install_tap(model, layers=tapped)
        else:
            uninstall_tap(model)
        times = []
        for _ in range(reps):
            cache = make_prompt_cache(model)
            thaw(cache, prompt_cache)
            rb = VerifyRollback(model, cache) if hooked else None
            t0 = time.perf_counter()
            if hooked:
                assert rb is not None
                rb.before_verify()
                with capturing(), tapping():  # the tap keeps references to what the forward computes anyway
                    mx.eval(model(inputs[None], cache=cache))
            else:
                mx.eval(model(inputs[None], cache=cache))
            times.append((time.perf_counter() - t0) * 1000.0)
        return statistics.median(times)

    try:
        verify_ms(True), verify_ms(False)  # warm-up
        pairs = abba_pairs(a, lambda: verify_ms(True), lambda: verify_ms(False), "capture", on_pair)  # A B, B A, …
    finally:
        install_capture(model)
        uninstall_tap(model)
    return bench_result("capture", [x / y for x, y, *_ in pairs], {"capture_verify_ms": [p[0] for p in pairs],
                                                                   "no_hooks_verify_ms": [p[1] for p in pairs],
                                                                   "tapped_layers": list(tapped),
                                                                   "positions": k + 1, "forwards_per_side": reps, "order": "ABBA"})


BENCHES = {
    "overhead": in_worker("overhead"),
    "spec-vs-mlx-lm": in_worker("spec-vs-mlx-lm"),
    "rollback": in_worker("rollback"),
    "predict": bench_predict,
    "memory": bench_memory,
    "gui": bench_gui,
    "capture": bench_capture,
    "tune": in_worker("tune"),
}


def run_bench(a) -> int:
    cfg = BenchConfig.from_args(a)
    cfg.validate()  # refused here, before a worker starts
    names = list(BENCHES) if cfg.what == "all" else [cfg.what]
    results: list[BenchResult] = []
    from specscope.profiler.cli.progress import Bar, progress_wanted
    from specscope.profiler.cli.bench_session import keep_bench

    kept = keep_bench(a, cfg)  # -o FILE: refused here, before anything is measured
    bar = Bar("bench", len(names) * a.pairs, "pairs", enabled=progress_wanted(a))
    try:
        for i, name in enumerate(names):
            base = i * a.pairs
            bar.update_to(base, name)

            def on_pair(n: int, base: int = base, name: str = name) -> None:
                bar.update_to(base + min(n, a.pairs), f"{name}: pair {n}")

            res = BENCHES[name](cfg, on_pair)
            results.append(res)
            kept.add(res)
            if not a.json:
                bar.write_out(_line(res))
    except BaseException as exc:  # stopped (Ctrl+C, SIGTERM) or failed: the session keeps what was measured
        bar.close()
        kept.end(exc)
        raise
    finally:
        bar.close()
    if a.json:
        print(json.dumps(results[0] if len(results) == 1 else results, indent=1))
    kept.end(None)
    return 0
