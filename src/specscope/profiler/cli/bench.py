"""``specscope bench``: does specscope measure without distorting, and is its engine as fast as mlx-lm's?

Every benchmark interleaves its two contenders in ABBA order (A B, B A, A B, …) on
the same model, prompt and token count after a warm-up, compares equal work (see
``bench_equal``), and reports the median of per-pair ratios with min and max. Nothing here is asserted in the test suite: machines
are shared and noisy; the tests only check that each benchmark runs and emits
well-formed JSON.
"""

from __future__ import annotations

import json
import statistics
import time

from specscope.errors import SpecscopeError

from specscope.profiler.cli.bench_common import (
    PROMPT,
    abba_pairs,
    bench_result,
    load_bench_model,
    median_interval,
    PairHook,
    BenchConfig,
)
from specscope.profiler.cli.bench_equal import bench_memory, bench_overhead, bench_predict
from specscope.profiler.cli.records import BenchResult

# -- overhead, memory, predict: equal work on both sides (profiler.cli.bench_equal) -------------------------------------
# -- spec-vs-mlx-lm: same dense model + draft model, same k, greedy ------------------------------
def bench_spec_vs_mlx_lm(a: BenchConfig, on_pair: PairHook | None = None) -> BenchResult:
    """specscope's end-to-end speculative rounds vs ``mlx_lm.generate.speculative_generate_step``.

    Same target and draft model, same prompt, same ``k``, greedy, the same ``--max-tokens`` tokens
    (asserted identical, else the comparison is void). Both sides are timed over the same span:
    from just before the generator is created to the moment the last token is in hand, so each
    clock covers the prompt prefill of both models and every token (tok/s = tokens / that span).
    mlx-lm's generator yields its first token only after its first draft+verify round (its prefill
    stops one token short and the last prompt token goes into the first verify); starting its clock
    at that first yield, as earlier versions did, handed it the prefill and the first round's extra
    tokens for free, and ours started after our prefill: not the same span. Warm-up: one run each.
    """
    import mlx.core as mx
    from mlx_lm.generate import speculative_generate_step

    from specscope.engine_adapter.decode.decoding import speculative_generate
    from specscope.engine_adapter.drafters.drafter import DraftModelDrafter

    from specscope.engine_adapter.model.loader import load_model

    target = load_model(a.model) if a.model else load_bench_model(a, "dense")
    draft = load_model(a.draft_model) if a.draft_model else load_bench_model(a, "draft")
    prompt = target.encode(PROMPT)
    k, n = a.num_draft_tokens, a.max_tokens

    def ours():
        toks: list[int] = []
        t0 = time.perf_counter()
        # end-to-end rounds: what a production engine does (drafts chained into the verify, one sync per round)
        for rec in speculative_generate(target.model, prompt, DraftModelDrafter(draft.model), k, n, round_kinds="end_to_end"):
            toks.extend([rec["token"]] if rec["event"] == "prefill" else rec["emitted"])
        return len(toks) / (time.perf_counter() - t0), toks

    def theirs():
        toks = []
        t0 = time.perf_counter()
        for tok, _, _ in speculative_generate_step(mx.array(prompt), target.model, draft.model, num_draft_tokens=k, max_tokens=n):
            toks.append(int(tok))
        return len(toks) / (time.perf_counter() - t0), toks

    ours(), theirs()
    raw_pairs = abba_pairs(a, ours, theirs, "spec-vs-mlx-lm", on_pair)  # A B, B A, …
    identical = all(tx == ty and len(tx) == n for _, _, tx, ty in raw_pairs)
    pairs = [(x, y) for x, y, _, _ in raw_pairs]
    if not identical:
        raise SpecscopeError("spec-vs-mlx-lm: the two engines produced different tokens; the comparison is void")
    res = bench_result("spec-vs-mlx-lm", [x / y for x, y in pairs],
                       {"specscope_tok_s": [p[0] for p in pairs], "mlx_lm_tok_s": [p[1] for p in pairs], "k": k,
                        "identical_tokens": identical, "timed_span": "generator start to last token, prefill included",
                        "order": "ABBA"})
    return res


# -- rollback: share of a round spent restoring linear-attention state ---------------------------
def bench_rollback(a: BenchConfig, on_pair: PairHook | None = None) -> BenchResult:
    from specscope.engine_adapter.decode.decoding import plain_generate, speculative_generate
    from specscope.engine_adapter.drafters.oracle import OracleDrafter

    lm = load_bench_model(a)
    prompt = lm.encode(PROMPT)
    plain = [r["token"] for r in plain_generate(lm.model, prompt, a.max_tokens)]
    calls = {"n": 0}
    model_cls = type(lm.model)
    original = model_cls.__call__

    def counting(self, *args, **kw):
        calls["n"] += 1
        return original(self, *args, **kw)

    shares, per_round_calls, rounds_seen = [], [], 0
    model_cls.__call__ = counting
    try:
        for rep in range(a.pairs):
            drafter = OracleDrafter(plain, p=0.5, seed=rep, vocab_size=lm.vocab_size)
            gen = speculative_generate(lm.model, prompt, drafter, a.num_draft_tokens, a.max_tokens)
            next(gen)  # prefill
            while True:
                before = calls["n"]
                try:
                    r = next(gen)
                except StopIteration:
                    break
                assert r["event"] == "round"  # after the prefill
                per_round_calls.append(calls["n"] - before)
                rounds_seen += 1
                assert r["rollback_ms"] is not None  # after the prefill: instrumented rounds
                if r["accepted"] < len(r["drafted"]):
                    shares.append(r["rollback_ms"] / r["ms"])
    finally:
        model_cls.__call__ = original
    if not shares:
        raise SpecscopeError("rollback: no partially accepted rounds to measure")
    ci = median_interval(shares, 0.95)
    return bench_result("rollback", [], {"rounds": rounds_seen, "partial_rounds": len(shares), "share_median": statistics.median(shares),
                                         "share_max": max(shares), "target_forwards_per_round": max(per_round_calls)},
                        unit="share of round", value=statistics.median(shares)) | {
        "ratio_min": min(shares), "ratio_max": max(shares), "median_ci95": list(ci) if ci else None, "pairs": a.pairs,
        "sample": f"{a.pairs} run{'s' if a.pairs != 1 else ''}, {len(shares)} partially accepted rounds of {rounds_seen}"}


# -- predict: oracle sweep, predicted vs measured speedup ---------------------------------------
def rounds_side_by_side(gen_a, gen_b) -> tuple[list, list]:
    """Advance two decoding generators one record at a time, alternately (A B, then B A, …), so that the
    machine's drift hits both alike; returns their records."""
    out_a: list = []
    out_b: list = []
    pending = [(gen_a, out_a), (gen_b, out_b)]
    r = 0
    while pending:
        order = pending if r % 2 == 0 else pending[::-1]
        for g, out in list(order):
            try:
                out.append(next(g))
            except StopIteration:
                pending.remove((g, out))
        r += 1
    return out_a, out_b


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

    def verify_ms(hooked: bool) -> float:
        (install_capture if hooked else uninstall_capture)(model)
        if hooked:
            install_tap(model, layers=tapped)
        else:
            uninstall_tap(model)
        times = []
        for _ in range(reps):
            cache = make_prompt_cache(model)
            rb = VerifyRollback(model, cache) if hooked else None
            mx.eval(prefill(model, cache, prompt), [c.state for c in cache])
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


def bench_tune(a: BenchConfig, on_pair: PairHook | None = None) -> BenchResult:
    """tune's prediction for every k vs its confirmation runs (oracle at P = 0.75): the largest |error|."""
    from specscope.profiler.cli.tune import bench_tune as run

    return run(a)



BENCHES = {
    "overhead": bench_overhead,
    "spec-vs-mlx-lm": bench_spec_vs_mlx_lm,
    "rollback": bench_rollback,
    "predict": bench_predict,
    "memory": bench_memory,
    "gui": bench_gui,
    "capture": bench_capture,
    "tune": bench_tune,
}


def _line(res: BenchResult) -> str:
    mark = "met" if res["met"] else "MISSED"
    ci = res.get("median_ci95")
    ci_text = f", median's 95% interval (binomial order statistics) {ci[0]:.4f}–{ci[1]:.4f}" if ci else ""
    return (f"{res['benchmark']:<16} {res['unit']:<22} {res['ratio']:.4f}  (min {res['ratio_min']:.4f}, max {res['ratio_max']:.4f}"
          f"{ci_text}; {res.get('sample') or str(res['pairs']) + ' pairs'}; target {res['target']}: {mark})")


def run_bench(a) -> int:
    if a.pairs < 1 or a.max_tokens < 4:
        raise SpecscopeError("--pairs must be >= 1 and --max-tokens >= 4")
    cfg = BenchConfig.from_args(a)
    names = list(BENCHES) if cfg.what == "all" else [cfg.what]
    results: list[BenchResult] = []
    from specscope.profiler.cli.progress import Bar, progress_wanted

    bar = Bar("bench", len(names) * a.pairs, "pairs", enabled=progress_wanted(a))
    try:
        for i, name in enumerate(names):
            base = i * a.pairs
            bar.update_to(base, name)

            def on_pair(n: int, base: int = base, name: str = name) -> None:
                bar.update_to(base + min(n, a.pairs), f"{name}: pair {n}")

            res = BENCHES[name](cfg, on_pair)
            results.append(res)
            if not a.json:
                bar.write_out(_line(res))
    finally:
        bar.close()
    if a.json:
        print(json.dumps(results[0] if len(results) == 1 else results, indent=1))
    return 0
