"""The benchmarks measured in the worker as one measurement each (``measure_config.BenchConfig``, kind ``bench``):
``overhead``, ``spec-vs-mlx-lm``, ``rollback`` and ``tune`` (``bench_tune``). ``bench_data(cfg, say, partial)`` runs the one ``cfg.what`` names
(``measurement.run_measurement`` calls it, as it calls roofline's and tune's) and returns its ``BenchResult``;
``partial`` hears each pair as it is measured (the CLI's progress bar).

- ``overhead``: specscope's plain decoding (as ``run`` does it: one JSON event written per token) against
  ``mlx_lm.stream_generate``, the same span on both sides — from the first token in hand to the last, so N − 1
  decode steps each — the same N tokens (EOS off on both: mlx-lm's EOS set is emptied for the run; specscope
  never stops at EOS), and the tokens asserted equal (else the comparison is void).
- ``spec-vs-mlx-lm``: specscope's end-to-end speculative rounds vs mlx-lm's, same models, k and tokens.
- ``rollback``: the share of a round spent restoring state after a partial acceptance.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from typing import Callable

from specscope.errors import SpecscopeError

from specscope.profiler.run.bench_common import (PROMPT, BenchConfig, PairHook, abba_pairs, bench_result,
                                                 median_interval)
from specscope.profiler.run.bench_records import BenchResult


def load_bench_model(a: BenchConfig, kind="hybrid"):
    """The model a benchmark runs: --model for the hybrid role, else the demo model of that kind."""
    from specscope.engine_adapter.model.demo_model import demo_model_path
    from specscope.engine_adapter.model.loader import load_model

    path = a.model if (a.model and kind == "hybrid") else str(demo_model_path(kind))
    return load_model(path)


# -- overhead ------------------------------------------------------------------------------------------------------
def bench_overhead(a: BenchConfig, on_pair: PairHook | None = None) -> BenchResult:
    from mlx_lm.generate import stream_generate

    from specscope.engine_adapter.decode.decoding import plain_generate
    from specscope.events import Event
    from specscope.profiler.run.protocol import PassEvents

    lm = load_bench_model(a)
    prompt = lm.encode(PROMPT)
    n = a.max_tokens
    sink = open(os.devnull, "w")

    def write(ev: Event) -> None:  # what the worker does per event: serialise, write, flush
        sink.write(json.dumps(ev) + "\n")
        sink.flush()

    def ours():
        toks: list[int] = []
        t_first: float | None = None
        held = PassEvents(write)  # as run's protocol holds a pass's events (at most every PASS_FLUSH_S, and at its end)
        for rec in plain_generate(lm.model, prompt, n):
            held({**rec, "case": "bench", "mode": "plain"} if rec["event"] == "prefill" else {**rec, "case": "bench"})
            toks.append(rec["token"])
            if t_first is None:
                t_first = time.perf_counter()
        held.flush()
        assert t_first is not None
        return (len(toks) - 1) / (time.perf_counter() - t_first), toks

    def theirs():
        eos = lm.tokenizer.eos_token_ids
        lm.tokenizer.eos_token_ids = set()  # EOS off, as on our side: both generate exactly N tokens
        try:
            toks: list[int] = []
            t_first: float | None = None
            for r in stream_generate(lm.model, lm.tokenizer, prompt, max_tokens=n):
                toks.append(int(r.token))
                if t_first is None:
                    t_first = time.perf_counter()
            assert t_first is not None
            return (len(toks) - 1) / (time.perf_counter() - t_first), toks
        finally:
            lm.tokenizer.eos_token_ids = eos

    ours(), theirs()  # warm-up
    pairs = abba_pairs(a, ours, theirs, "overhead", on_pair)
    if not all(tx == ty and len(tx) == n for _, _, tx, ty in pairs):
        raise SpecscopeError("overhead: the two sides produced different tokens; the comparison is void")
    return bench_result("overhead", [x / y for x, y, *_ in pairs],
                        {"specscope_tok_s": [p[0] for p in pairs], "mlx_lm_tok_s": [p[1] for p in pairs],
                         "tokens": n, "identical_tokens": True, "order": "ABBA",
                         "timed_span": f"first token in hand to the last ({n - 1} decode steps on each side), EOS off on both"})


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


# -- the measurement ----------------------------------------------------------------------------------------------
# benchmark -> its function (what the worker measures as kind ``bench``)
IN_WORKER: dict[str, Callable[[BenchConfig, PairHook | None], BenchResult]] = {
    "overhead": bench_overhead, "spec-vs-mlx-lm": bench_spec_vs_mlx_lm, "rollback": bench_rollback,
    "tune": lambda a, on_pair: _bench_tune(a)}


def _bench_tune(a: BenchConfig) -> BenchResult:
    from specscope.profiler.run.bench_tune import bench_tune  # tune's engine and analysis: only when asked for

    return bench_tune(a)


def bench_data(cfg: BenchConfig, say=lambda m: None, partial=None) -> BenchResult:
    """One benchmark (``cfg.what``), measured; ``partial({"benchmark", "pair"})`` after each pair."""
    cfg.validate()
    if cfg.what not in IN_WORKER:
        raise SpecscopeError(f"bench {cfg.what!r} is not measured as one worker measurement "
                             f"(those are: {', '.join(IN_WORKER)})")
    say(f"bench {cfg.what}: warming up")

    def on_pair(n: int) -> None:
        if partial:
            partial({"benchmark": cfg.what, "pair": n})

    return IN_WORKER[cfg.what](cfg, on_pair)
