"""The verify cost curve: one forward over n = 1..N positions at the end of a real prompt, timed.

The forward is the engine's real verify path: the prompt is prefilled once, the cache is
snapshotted (``rollback.CacheSnapshot``) and restored before every forward, and each forward is
``model(tokens[None], cache)`` + ``mx.eval`` — on hybrid models inside ``capture.capturing()``
for n > 1, exactly as ``decoding.speculative_generate`` verifies. The tokens are the model's own
greedy continuation (what accepted drafts would be), so MoE routing is realistic.

Repeats are interleaved across n (rep 1: n = 1, 2, …, N; rep 2: …) so drift on a shared machine
hits every n alike. Per block, both rulers come from ``breakdown.measure_forward`` (one call per
n per block repeat, interleaved the same way): barrier-timed blocks, and barrier-free estimates
by difference. For MoE models, one extra untimed forward per n records which experts each layer's
router picked (``recording_routes``), without changing the computation: the expert bank's call is
wrapped to keep a reference to its ``indices`` argument, which the forward computes anyway. The open record is
this thread's (``cache.active.ROUTES``): mlx-lm calls the bank with its own arguments, so nothing can be passed to it.
"""

from __future__ import annotations

import statistics
import time
from contextlib import contextmanager

import mlx.core as mx
import numpy as np
from mlx_lm.models.cache import make_prompt_cache

from specscope.engine_adapter.measure.breakdown import measure_forward
from specscope.engine_adapter.decode.decoding import plain_generate, prefill
from specscope.engine_adapter.decode.records import tokens_of
from specscope.engine_adapter.cache.active import ROUTES
from specscope.engine_adapter.cache.capture import capturing, install_capture, is_hybrid
from specscope.engine_adapter.cache.rollback import CacheSnapshot
from specscope.engine_adapter.model.structure import classify, takes_indices

from specscope.events import PhaseBreakdown
from specscope.engine_adapter.clock import ms_since

from .records import CurvePoint, VerifyCurve

DEFAULT_POSITIONS = 9
MAX_POSITIONS = 17


def continuation(model, prompt: list[int], n: int) -> list[int]:
    """The model's greedy continuation of ``prompt``: ``n`` tokens, the first one from the prefill."""
    return tokens_of(plain_generate(model, prompt, max(1, n)))


class VerifyPoint:
    """A prefilled cache at the end of ``context``, restored before every forward."""

    def __init__(self, model, context: list[int]):
        if not context:
            raise ValueError("empty context")
        self.model = model
        self.hybrid = is_hybrid(model)
        if self.hybrid:
            install_capture(model)
        self.cache = make_prompt_cache(model)
        mx.eval(prefill(model, self.cache, list(context)))
        mx.eval([c.state for c in self.cache])
        self.context = len(context)
        self.snapshot = CacheSnapshot(self.cache)

    def forward(self, tokens: list[int]) -> mx.array:
        """One verify forward over ``tokens`` (restored first), evaluated; returns the logits."""
        self.snapshot.restore()
        x = mx.array(tokens, dtype=mx.uint32)[None]
        if self.hybrid and len(tokens) > 1:
            with capturing():
                out = self.model(x, cache=self.cache)
                mx.eval(out)
        else:
            out = self.model(x, cache=self.cache)
            mx.eval(out)
        return out

    def time_ms(self, tokens: list[int]) -> float:
        self.snapshot.restore()
        t0 = time.perf_counter()
        self.forward(tokens)
        return ms_since(t0)

    def restore(self) -> None:
        self.snapshot.restore()


# -- router recording ----------------------------------------------------------------------------------------------

_routed_classes: dict[type, type] = {}  # mlx-lm's expert bank class -> its recording subclass (made once, no run's data)


def _routed(cls):
    if cls not in _routed_classes:
        def __call__(self, x, indices, *args, **kwargs):
            rec = ROUTES.get()
            if rec is not None:
                rec.setdefault(id(self), []).append(indices)
            return cls.__call__(self, x, indices, *args, **kwargs)

        _routed_classes[cls] = type(f"Routed{cls.__name__}", (cls,), {"__call__": __call__})
    return _routed_classes[cls]


@contextmanager
def recording_routes(model):
    """While active, every MoE expert bank called with ``indices`` keeps them; yields ``distinct()``:
    MoE block path -> distinct experts per call. Banks without an ``indices`` argument (experts as a list of
    MLPs) are not recorded (their block is absent from the result). Only this thread's forwards are recorded."""
    mods = dict(model.named_modules())
    banks = []  # (block path, bank module)
    for b in classify(model).moe_blocks():
        for p in b.expert_banks:
            m = mods.get(p)
            if m is not None and takes_indices(type(m)):
                banks.append((b.path, m))
                break
    saved = [(m, m.__class__) for _, m in banks]
    rec: dict[int, list] = {}  # id(bank) -> the indices of each of its calls
    for m, cls in saved:  # a bank already recording (a record opened around this one) is not wrapped twice
        m.__class__ = cls if cls in _routed_classes.values() else _routed(cls)

    def distinct() -> dict[str, list[int]]:  # dict: MoE block path -> distinct experts per call
        out = {}
        for path, m in banks:
            calls = rec.get(id(m), [])
            if calls:
                out[path] = [int(np.unique(np.array(i)).size) for i in calls]
        return out

    try:
        with ROUTES.open(rec):
            yield distinct
    finally:
        for m, cls in saved:
            m.__class__ = cls


def routes_at(point: VerifyPoint, tokens: list[int], run=None) -> dict[str, list[int]]:  # dict: MoE block path -> experts
    """Distinct experts per MoE layer for one verify forward over ``tokens`` (an untimed forward; ``run()``, if
    given, runs it instead: a tree's verify forward over the same tokens)."""
    with recording_routes(point.model) as distinct:
        run() if run is not None else point.forward(tokens)
        out = distinct()
    point.restore()
    return out


# -- the curve -----------------------------------------------------------------------------------------------------

def _median(xs):
    return statistics.median(xs) if xs else None


def measure_curve(model, context: list[int], tokens: list[int] | None = None, positions: int = DEFAULT_POSITIONS,
                  reps: int = 5, block_reps: int = 2, skip: bool = True, record_routes: bool = True,
                  progress=lambda message: None, on_sweep=None) -> VerifyCurve:
    """The curve at the end of ``context`` over n = 1..``positions``: a JSON-able dict.

    ``on_sweep(points)``, if given, gets the whole-graph curve so far after every repeat over all n (medians
    with min and max), so a page can draw it while the measurement goes on.

    ``tokens``: the verify inputs (the first is the token after ``context``); default: the model's greedy
    continuation. ``block_reps`` = 0 skips the per-block rulers (whole graph only)."""
    if not 1 <= positions <= MAX_POSITIONS:
        raise ValueError(f"positions must be 1..{MAX_POSITIONS}")
    if reps < 1:
        raise ValueError("reps must be >= 1")
    if tokens is None:
        progress("greedy continuation for the verify inputs")
        tokens = continuation(model, list(context), positions)
    tokens = (list(tokens) + [tokens[-1]] * positions)[:positions]
    progress(f"prefilling {len(context)} context tokens")
    point = VerifyPoint(model, context)
    ns = list(range(1, positions + 1))
    routes = {}
    if record_routes and classify(model).moe_blocks():
        progress("recording the routers' choices")
        routes = {n: routes_at(point, tokens[:n]) for n in ns}
    for n in ns:  # warm every shape once
        point.forward(tokens[:n])
    whole: dict[int, list[float]] = {n: [] for n in ns}
    per_block: dict[int, list[PhaseBreakdown]] = {n: [] for n in ns}
    for rep in range(max(reps, block_reps)):
        progress(f"repeat {rep + 1}/{max(reps, block_reps)} over n = 1..{positions}")
        for n in ns:
            if rep < reps:
                whole[n].append(point.time_ms(tokens[:n]))
            if rep < block_reps:
                per_block[n].append(measure_forward(model, point.cache, point.snapshot, tokens[:n], reps=1, skip=skip))
        if on_sweep is not None and rep < reps:
            on_sweep([{"positions": n, "whole_ms": _median(whole[n]), "whole_ms_min": min(whole[n]),
                       "whole_ms_max": max(whole[n])} for n in ns])
    point.restore()
    points: list[CurvePoint] = []
    for n in ns:
        w = whole[n]
        p: CurvePoint = {"positions": n, "whole_ms": _median(w), "whole_ms_samples": w, "whole_ms_min": min(w), "whole_ms_max": max(w)}
        if per_block[n]:
            present = sorted({c for r in per_block[n] for c in r["blocks"]})
            p["blocks"] = {c: _median([r["blocks"][c] for r in per_block[n] if c in r["blocks"]]) for c in present}
            p["block_sum_ms"] = sum(p["blocks"].values())
            p["instrumented_ms"] = _median([r["instrumented_ms"] for r in per_block[n]])
            p["inter_block_ms"] = p["whole_ms"] - p["block_sum_ms"]
            p["barrier_distortion"] = p["instrumented_ms"] / p["whole_ms"] - 1.0
            est = sorted({c for r in per_block[n] for c in r.get("skip_estimates", {})})
            # barrier-free: this curve's whole graph minus the whole graph with the block skipped
            p["skip_estimates"] = {c: _median([r["skip_estimates"][c] + (p["whole_ms"] - r["whole_ms"])
                                               for r in per_block[n] if c in r.get("skip_estimates", {})]) for c in est}
        if n in routes:
            p["routes"] = routes[n]
        points.append(p)
    s = classify(model)
    return {
        "context": len(context),
        "tokens": tokens,
        "reps": reps,
        "category_reps": block_reps,
        "hybrid_capture": point.hybrid,
        "t_decode_ms": points[0]["whole_ms"],
        "points": points,
        "labels": s.labels(),
        "top_k": max((b.top_k for b in s.moe_blocks() if b.top_k), default=None),
    }
