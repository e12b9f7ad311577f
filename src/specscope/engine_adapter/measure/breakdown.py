"""Where a decode step and a verify forward spend their time, by block.

Two rulers, always side by side:

- **whole graph**: one forward, evaluated once at the end (what decoding pays);
- **blocks**: the same forward with a barrier (``mx.eval``) before and after
  every block, each module's time added to its block.

whole − Σ blocks is the **inter-block overhead**; instrumented wall ÷ whole
wall − 1 is the **barrier distortion**. A barrier-free estimate comes from
timing the whole graph with one block skipped (its output replaced by
zeros), by difference. Norms and embeddings ("other") are not skipped: the
trunk's numbers blow up without them, which changes what is measured.

The model's blocks and their block names come from ``structure.classify``; the barrier ruler and the skipped
blocks from ``instrument.Instrumenter``. This module is the measurement loop: the rulers interleaved over
the reps, and their medians and spreads. The distributed engine runs the same loop, with its own structure,
instrumenter and ``RunHooks`` (communication as one more block).
"""

from __future__ import annotations

import time
from typing import Any

import mlx.core as mx
from mlx_lm.models.cache import make_prompt_cache

from specscope.engine_adapter.clock import ms_since
from specscope.engine_adapter.decode.decoding import prefill
from specscope.engine_adapter.measure.instrument import Instrumenter
from specscope.engine_adapter.cache.capture import capturing, install_capture, is_hybrid
from specscope.engine_adapter.cache.rollback import CacheSnapshot
from specscope.engine_adapter.model.structure import classify
from specscope.events import PhaseBreakdown

from .records import BreakdownRecord, HookFigures

SKIPPABLE = ("linear_attention", "full_attention", "moe", "dense_mlp", "output_head")
PHASE_MODES: dict[str, str | None] = {"warm": None, "whole": None, "time": "time", "skip": "skip"}


class RunHooks:
    """What a caller adds around each forward of ``measure_forward``; this default adds nothing.

    The distributed engine's ``Communication`` is the other kind: a barrier across ranks before every forward,
    and its collectives counted, timed or stood in for, as one more block."""

    def before(self, phase: str, skip: str | None) -> None:
        """After the cache is restored, before the forward. ``phase``: "warm" (the first forward of this shape),
        "whole", "time" (the barrier ruler) or "skip" (``skip``: the block skipped)."""

    def after(self, phase: str) -> None:
        """After the forward (also when it raised)."""

    def figures(self) -> HookFigures:
        """Entries to add to the forward's figures."""
        return {}


def forward_ms(model, cache, tokens: mx.array, capture: bool) -> float:
    """Wall time (ms) of one forward over ``tokens``, evaluated."""
    t0 = time.perf_counter()
    if capture:
        with capturing():
            out = model(tokens[None], cache=cache)
            mx.eval(out)
    else:
        out = model(tokens[None], cache=cache)
        mx.eval(out)
    return ms_since(t0)


def median(xs: list[float]) -> float:
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def value_range(xs: list[float], *also: float) -> list[float] | None:
    """[lowest, highest] of the per-rep values (and of ``also``, the estimate itself); None for no reps."""
    xs = list(xs) + list(also)
    return [min(xs), max(xs)] if xs else None


def measure_forward(model, cache, snapshot: CacheSnapshot, tokens: list[int], reps: int, skip: bool = True,
                    instrumenter: Instrumenter | None = None, hooks: RunHooks | None = None) -> PhaseBreakdown:
    """The two rulers (and skip estimates) for one forward over ``len(tokens)`` positions.

    ``instrumenter`` defaults to one over ``classify(model)``; its extra blocks are timed and skipped
    beside the model's own. ``hooks`` run around every forward and add their figures to the result."""
    x = mx.array(tokens, dtype=mx.uint32)
    capture = len(tokens) > 1 and is_hybrid(model)
    inst = instrumenter if instrumenter is not None else Instrumenter(classify(model))
    around = hooks if hooks is not None else RunHooks()

    def run(phase: str, skip_cat: str | None = None) -> tuple[float, dict[str, float]]:
        snapshot.restore()
        around.before(phase, skip_cat)
        inst.arm(PHASE_MODES[phase], skip_cat)
        try:
            ms = forward_ms(model, cache, x, capture)
        finally:
            around.after(phase)
        return ms, dict(inst.acc)

    with inst:
        present = inst.structure.block_names() + list(inst.extra_blocks)
        run("warm")  # warm this shape
        whole: list[float] = []
        instrumented: list[float] = []
        blocks: dict[str, list[float]] = {c: [] for c in present}
        skipped: dict[str, list[float]] = {c: [] for c in present if c in SKIPPABLE or c in inst.extra_blocks}
        inst.called = set()
        for _ in range(reps):
            # Interleave rulers so drift on a shared machine hits them alike.
            whole.append(run("whole")[0])
            ms, acc = run("time")
            instrumented.append(ms)
            for c in present:
                blocks[c].append(acc[c])
            if skip:
                for c in skipped:
                    skipped[c].append(run("skip", c)[0])
        uncalled = inst.uncalled()
    snapshot.restore()
    whole_ms = median(whole)
    blocks_ms = {c: median(v) for c, v in blocks.items()}
    block_sum = sum(blocks_ms.values())
    skip_est = {c: whole_ms - median(v) for c, v in skipped.items() if v}
    # Every figure carries its spread over the reps. Differences are paired rep by rep (the rulers are
    # interleaved, so a rep's whole graph and its skipped or barrier-timed graph ran side by side).
    rep_sums = [sum(blocks[c][i] for c in present) for i in range(reps)]
    spread = {
        "whole_ms": value_range(whole),
        "instrumented_ms": value_range(instrumented),
        "blocks": {c: value_range(v) for c, v in blocks.items()},
        "block_sum_ms": value_range(rep_sums),
        "inter_block_ms": value_range([w - b for w, b in zip(whole, rep_sums)], whole_ms - block_sum),
        "skip_estimates": {c: value_range([w - x for w, x in zip(whole, v)], skip_est[c]) for c, v in skipped.items() if v},
    }
    return {
        "positions": len(tokens),
        "reps": reps,
        "whole_ms": whole_ms,
        "instrumented_ms": median(instrumented),
        "blocks": blocks_ms,
        "block_sum_ms": block_sum,
        "inter_block_ms": whole_ms - block_sum,
        "barrier_distortion": median(instrumented) / whole_ms - 1.0,
        "skip_estimates": skip_est,
        "spread": spread,
        "samples": {"whole_ms": whole, "instrumented_ms": instrumented, "blocks": blocks,
                    "skipped_ms": {c: v for c, v in skipped.items() if v}},
        "uncalled_blocks": uncalled,
        **around.figures(),
    }


def at_prompt_end(model, prompt: list[int], continuation: list[int], k: int) -> tuple[Any, CacheSnapshot, list[int]]:
    """(cache prefilled with ``prompt``, its snapshot, the k+1 tokens of a verify forward after it)."""
    if is_hybrid(model):
        install_capture(model)
    cache = make_prompt_cache(model)
    mx.eval(prefill(model, cache, prompt))
    cp = CacheSnapshot(cache)
    toks = (list(continuation) + [prompt[-1]] * (k + 1))[: k + 1]
    return cache, cp, toks


def verify_to_decode(decode: PhaseBreakdown, verify: PhaseBreakdown) -> dict[str, float | None]:  # dict: block name -> ratio
    """Per block, verify time ÷ decode time (None where decode took no time)."""
    return {c: (verify["blocks"][c] / decode["blocks"][c]) if decode["blocks"].get(c) else None for c in decode["blocks"]}


def measure_breakdown(model, prompt: list[int], continuation: list[int], k: int, reps: int = 3, skip: bool = True) -> BreakdownRecord:
    """Decode (1 position) and verify (k+1 positions) breakdowns at the end of ``prompt``."""
    cache, cp, toks = at_prompt_end(model, prompt, continuation, k)
    decode = measure_forward(model, cache, cp, toks[:1], reps, skip)
    verify = measure_forward(model, cache, cp, toks, reps, skip)
    return {
        "decode": decode,
        "verify": verify,
        "ratios": verify_to_decode(decode, verify),
        "labels": classify(model).labels(),
    }
