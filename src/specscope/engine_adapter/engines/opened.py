"""Another engine's verify, opened: its target model's forwards timed by block while its own loop decodes.

The engine's loop runs untouched; only the model object it forwards (``SpeculativeEngine.forward_model``, an MLX
module) is instrumented, with the same ``Instrumenter`` specscope's own breakdown uses: every block of the model runs
between ``mx.eval`` barriers and its exclusive time goes to its block (linear attention, full attention, MoE, dense
MLP, output head, other). The model's own call is wrapped too (its class swapped for a subclass while the pass runs,
as the blocks' are), so each forward is known whole: its width (positions), its barrier-timed wall time (its inputs,
e.g. drafts chained lazily into a verify, are evaluated before its clock starts) and its blocks. A forward of width
1 is a plain step, a wider one a verify; the forwards before the engine's first record are its prefill and are left
untimed.

Its cost is measured as specscope's own engine's is: instrumented passes against untouched ones over the same
prompt, alternated (untouched first in even passes, last in odd ones), each timed by the engine's own records (the
consumer's time is in none). The speed figures of a run come from its measured passes only; these passes are
beside them (in the case's breakdown), never in them.

An engine whose forwards reach some blocks without calling them (its own fused forward reading their weights, e.g.
mlx-vlm's exact speculative verifier) names those call sites (``SpeculativeEngine.block_sites``: a method taking the
block module first), and the block is timed there too, by the same barriers.

An engine whose model cannot be instrumented says why (``forward_model`` returns the reason), and the pass records
that reason instead of figures.
"""

from __future__ import annotations

import time
from typing import Any, Iterable, NotRequired, TypedDict

import mlx.core as mx

from specscope.engine_adapter.clock import ms_since
from specscope.engine_adapter.measure.instrument import Instrumenter, arrays_in
from specscope.engine_adapter.model.block_names import BLOCK_NAMES


class OpenedForward(TypedDict):
    """Forwards of one width, medians over them: the barrier-timed wall, each block's exclusive time, and what lies
    between the timed blocks (the wall less their sum)."""
    positions: int
    forwards: int
    instrumented_ms: float
    instrumented_ms_range: list[float]
    blocks: dict[str, float]
    block_sum_ms: float
    inter_block_ms: float
    samples: dict[str, Any]   # every forward's figures: "instrumented_ms" (a list), "blocks" (block -> a list)


class OpenedPass(TypedDict):
    """``opened_pass``: an engine's target forwards by block while its loop decodes (``instrumented`` False: why
    not, in ``reason``)."""
    engine: str
    instrumented: bool
    reason: NotRequired[str]
    passes: NotRequired[int]
    tokens: NotRequired[int]
    untouched_ms: NotRequired[list[float]]      # each untouched pass's decode time (the engine's records, prefill out)
    instrumented_ms: NotRequired[list[float]]   # each instrumented pass's
    cost: NotRequired[float]                    # median instrumented ÷ median untouched − 1
    same_tokens: NotRequired[bool]              # every instrumented pass gave the untouched pass's tokens
    verify: NotRequired[list[OpenedForward]]    # width > 1, one entry per width
    steps: NotRequired[list[OpenedForward]]     # width 1
    labels: NotRequired[dict[str, str]]
    uncalled_blocks: NotRequired[list[str]]


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


class Opener:
    """While inside ``with``: ``model``'s blocks timed (``Instrumenter``) and its own call wrapped, each forward
    recorded in ``forwards`` as (positions, wall ms, {block: ms}) while ``timing`` is on."""

    def __init__(self, model, structure, sites: list[tuple[Any, str]] | None = None) -> None:
        self.model, self.inst = model, Instrumenter(structure)
        self.sites = list(sites or [])  # an engine's own fused forward's block calls (``block_sites``)
        self.timing = False
        self.forwards: list[tuple[int, float, dict[str, float]]] = []
        self._cls: type | None = None
        self._patched: list[tuple[Any, str, Any]] = []

    def _site(self, obj: Any, attr: str) -> None:
        """``obj.attr(module, ...)`` timed as ``module``'s block when ``module`` is one (an instance attribute over
        the method while the pass runs; removed on exit)."""
        inst, orig = self.inst, getattr(obj, attr)
        names = inst._block_name  # the Instrumenter's block of each module, by identity

        def timed(module, *args, **kwargs):
            block = names.get(id(module))
            if block is None or inst.mode != "time":
                return orig(module, *args, **kwargs)
            return inst._time(module, block, lambda: orig(module, *args, **kwargs), (*args, *kwargs.values()))

        self._patched.append((obj, attr, obj.__dict__.get(attr)))
        setattr(obj, attr, timed)

    def __enter__(self) -> Opener:
        self.inst.__enter__()
        for obj, attr in self.sites:
            self._site(obj, attr)
        cls = self._cls = self.model.__class__
        opener = self

        def __call__(mod, inputs, *args, **kwargs):
            if not opener.timing:
                return cls.__call__(mod, inputs, *args, **kwargs)
            mx.eval(arrays_in((inputs, *args, *kwargs.values())))  # the drafts chained into a verify: not its time
            opener.inst.arm("time")
            t0 = time.perf_counter()
            out = cls.__call__(mod, inputs, *args, **kwargs)
            mx.eval(arrays_in(out))
            ms = ms_since(t0)
            opener.forwards.append((int(inputs.shape[-1]), ms, dict(opener.inst.acc)))
            opener.inst.mode = None
            return out

        self.model.__class__ = type(f"Opened{cls.__name__}", (cls,), {"__call__": __call__})
        return self

    def __exit__(self, *exc: object) -> None:
        for obj, attr, before in reversed(self._patched):
            if before is None:
                delattr(obj, attr)
            else:
                setattr(obj, attr, before)
        self._patched = []
        if self._cls is not None:
            self.model.__class__ = self._cls
        self.inst.__exit__(*exc)


def _decode(records: Iterable, opener: Opener | None) -> tuple[float, list[int]]:
    """Run an engine's loop to its end: (decode ms by its own records, the prefill's left out; its tokens)."""
    ms, toks = 0.0, []
    for rec in records:
        if rec["event"] == "prefill":
            toks.append(rec["token"])
            if opener is not None:
                opener.timing = True  # the prefill is done: every forward from here is the loop's
        else:
            toks.extend(rec["emitted"])
            ms += rec["ms"]
    return ms, toks


def phases(forwards: list[tuple[int, float, dict[str, float]]], present: list[str]) -> list[OpenedForward]:
    """Forwards grouped by width, medians over each group (``OpenedForward``), narrowest first."""
    out: list[OpenedForward] = []
    for n in sorted({f[0] for f in forwards}):
        group = [f for f in forwards if f[0] == n]
        walls = [f[1] for f in group]
        blocks = {c: _median([f[2].get(c, 0.0) for f in group]) for c in present}
        wall = _median(walls)
        out.append({"positions": n, "forwards": len(group), "instrumented_ms": wall,
                    "instrumented_ms_range": [min(walls), max(walls)], "blocks": blocks,
                    "block_sum_ms": sum(blocks.values()), "inter_block_ms": wall - sum(blocks.values()),
                    "samples": {"instrumented_ms": walls, "blocks": {c: [f[2].get(c, 0.0) for f in group] for c in present}}})
    return out


def opened_pass(engine: Any, prompt: list[int], max_tokens: int, sampling, passes: int = 2) -> OpenedPass:
    """``passes`` untouched and ``passes`` instrumented runs of ``engine``'s loop over ``prompt`` (alternated), and
    its target's forwards by block from the instrumented ones (``OpenedPass``)."""
    from specscope.engine_adapter.model.structure import classify

    model = engine.forward_model()
    if isinstance(model, str):
        return {"engine": engine.name, "instrumented": False, "reason": model}
    structure = classify(model)
    untouched: list[float] = []
    instrumented: list[float] = []
    forwards: list[tuple[int, float, dict[str, float]]] = []
    reference: list[int] | None = None
    same = True
    uncalled: list[str] = []
    entered: set[str] = set()  # the blocks a timed forward entered
    for r in range(max(1, passes)):
        for kind in (("untouched", "instrumented") if r % 2 == 0 else ("instrumented", "untouched")):
            if kind == "untouched":
                ms, toks = _decode(engine.speculative(prompt, max_tokens, sampling), None)
                untouched.append(ms)
            else:
                with Opener(model, structure, getattr(engine, "block_sites", list)()) as op:
                    op.inst.called = set()
                    ms, toks = _decode(engine.speculative(prompt, max_tokens, sampling), op)
                    uncalled = op.inst.uncalled()
                    entered |= {name for _, name in op.inst.called}
                instrumented.append(ms)
                forwards += op.forwards
            if reference is None:
                reference = toks
            same = same and toks == reference
    # a block no timed forward entered is not in the figures (not 0 ms: the engine computes it outside its forwards,
    # e.g. mlx-vlm's greedy argmax from the hidden state); ``uncalled_blocks`` names it
    present = [c for c in BLOCK_NAMES if c in structure.block_names() and c in entered]
    by_width = phases(forwards, present)
    return {"engine": engine.name, "instrumented": True, "passes": len(untouched), "tokens": len(reference or []),
            "untouched_ms": untouched, "instrumented_ms": instrumented,
            "cost": _median(instrumented) / _median(untouched) - 1.0 if _median(untouched) > 0 else 0.0,
            "same_tokens": same, "verify": [p for p in by_width if p["positions"] > 1],
            "steps": [p for p in by_width if p["positions"] == 1], "labels": structure.labels(),
            "uncalled_blocks": uncalled}
