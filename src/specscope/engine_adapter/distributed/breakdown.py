"""The breakdown of a sharded model: ``breakdown.measure_forward`` run with communication as one more block,
and every rank's figures gathered.

- **Communication** is a block of the breakdown. Barrier ruler: every collective issued by the
  sharded layers (``mx.distributed.all_sum`` / ``all_gather``, as called by mlx-lm's sharded layers,
  ``shard_linear``'s sharded-to-all layers and ``gather_last_axis``) runs between ``mx.eval`` barriers
  and its time goes to ``communication`` and is taken out of the enclosing block's time (the same
  exclusive-time bookkeeping as nested blocks). Barrier-free estimate: the whole graph with every
  collective replaced by a local stand-in of the same shape (identity for all-sum, copies for
  all-gather), by difference. A skipped compute block that holds a collective still issues it (on
  zeros), so the compute blocks' skip estimates stay compute only.
- **Per rank**: each rank measures its own decode and verify forwards; the figures reach rank 0 through
  one all-sum of a small float matrix (each rank fills its own row) and are returned as ``per_rank``
  lists beside rank 0's numbers, in the same shape as ``breakdown.measure_breakdown``.
"""

from __future__ import annotations

import time
from typing import Any, Literal, TypedDict

import mlx.core as mx

from specscope.engine_adapter.model.blocks import Structure
from specscope.engine_adapter.measure.breakdown import (
    RunHooks,
    at_prompt_end,
    measure_forward,
    median,
    verify_to_decode,
)
from specscope.engine_adapter.measure.instrument import Instrumenter
from specscope.engine_adapter.measure.records import BreakdownRecord, HookFigures
from specscope.engine_adapter.distributed.ranks import gather_rows, sync
from specscope.engine_adapter.model.structure import classify, is_linear, out_features, vocab_sizes
from specscope.events import PhaseBreakdown

COMMUNICATION = "communication"


class DistributedFigures(TypedDict):
    """A sharded breakdown's ``distributed`` record: the ranks, and the collectives and bytes per forward."""
    ranks: int
    backend: str
    hosts: list[str]
    rank_of_figures: int
    parallelism: str
    collectives_per_forward: str
    bytes_per_forward: dict[str, int]    # "decode", "verify"


class DistributedBreakdown(BreakdownRecord):
    """``measure_breakdown_distributed``: ``breakdown.measure_breakdown``'s record (every rank's figures under each
    forward's ``per_rank``) and the ``distributed`` record."""
    distributed: DistributedFigures


class Communication(RunHooks):
    """Communication as a block of the breakdown, for one measured forward (``breakdown.measure_forward``'s
    hooks): inside ``with``, ``mx.distributed.all_sum`` / ``all_gather`` go through wrappers that count the
    collectives (the warm-up forward), time them (the barrier ruler) or stand in for them (the communication
    skipped), and pass them through otherwise. Every forward starts with a barrier across ranks.

    Its ``instrumenter`` times the sharded model's blocks with ``communication`` as an extra block; a
    skipped block that holds a collective still issues it (on its zeros), so the compute blocks' skip
    estimates stay compute only."""

    def __init__(self, model, group) -> None:
        self.group, self.n = group, group.size()
        self.mode = "pass"
        self.count: dict[str, int] = {}
        self.bytes = 0
        self.wait_ms = self.transfer_ms = 0.0
        self.counted: dict[str, Any] = {}
        self.split: dict[str, list[float]] = {"wait_ms": [], "transfer_ms": []}
        self._original = {"all_sum": mx.distributed.all_sum, "all_gather": mx.distributed.all_gather}
        structure = sharded_structure(model, self.n)
        self._communicating = {id(b.module) for b in structure.blocks if _communicates(b.module)}
        self.instrumenter = Instrumenter(structure, extra_blocks=(COMMUNICATION,), on_skip=self._keep_collective)

    def __enter__(self) -> Communication:
        mx.distributed.all_sum, mx.distributed.all_gather = self._collective("all_sum"), self._collective("all_gather")
        return self

    def __exit__(self, *exc: object) -> None:
        mx.distributed.all_sum, mx.distributed.all_gather = self._original["all_sum"], self._original["all_gather"]
        self.mode = "pass"

    # -- around each forward (RunHooks) ---------------------------------------------------------------------
    def before(self, phase: str, skip: str | None) -> None:
        sync(self.group)  # every rank starts the forward together: skew from the previous run stays out of this one
        mode = {"warm": "count", "time": "time"}.get(phase, "pass")
        if phase == "skip" and skip == COMMUNICATION:
            mode = "skip"
        self.mode, self.wait_ms, self.transfer_ms = mode, 0.0, 0.0

    def after(self, phase: str) -> None:
        self.mode = "pass"
        if phase == "warm":  # the collectives of one forward
            self.counted = {"calls": dict(self.count), "bytes": self.bytes}
        elif phase == "time":
            self.split["wait_ms"].append(self.wait_ms)
            self.split["transfer_ms"].append(self.transfer_ms)

    def figures(self) -> HookFigures:
        # the barrier ruler's communication, split: waiting for the slowest rank vs the collective itself
        return {"collectives": self.counted, "communication_split": {k: median(v) for k, v in self.split.items()}}

    # -- the collectives -----------------------------------------------------------------------------------
    def _keep_collective(self, module, block: str, out: mx.array) -> mx.array:
        if id(module) in self._communicating and block != "output_head":
            out = mx.distributed.all_sum(out, group=self.group)
        return out

    def _collective(self, name: str):
        fn = self._original[name]
        all_sum = self._original["all_sum"]

        def wrapper(x, *args, **kwargs):
            mode = self.mode
            if mode == "count":
                self.count[name] = self.count.get(name, 0) + 1
                self.bytes += _nbytes(x) * (self.n - 1 if name == "all_gather" else 1)
                return fn(x, *args, **kwargs)
            if mode == "skip":  # a local stand-in of the same shape: no communication, same downstream work
                if name == "all_sum":
                    return x
                return mx.concatenate([x] * self.n, axis=0) if self.n > 1 else x
            if mode == "time":
                inst = self.instrumenter
                mx.eval(x)  # barrier: the local compute that feeds the collective is done before the clock starts
                inst.open_span()
                t0 = time.perf_counter()
                # a one-element all-sum first: the time spent waiting for the slowest rank to get here (plus one
                # small-message latency), then the collective itself (the transfer)
                mx.eval(all_sum(mx.zeros((1,)), group=self.group))
                t1 = time.perf_counter()
                out = fn(x, *args, **kwargs)
                mx.eval(out)
                t2 = time.perf_counter()
                # exclusive time: the enclosing block (attention, MoE, …) loses what the collective took
                inst.close_span(COMMUNICATION, (t2 - t0) * 1000.0)
                self.wait_ms += (t1 - t0) * 1000.0
                self.transfer_ms += (t2 - t1) * 1000.0
                return out
            return fn(x, *args, **kwargs)

        wrapper.__name__ = name
        return wrapper


def _nbytes(x) -> int:
    return int(x.size) * x.dtype.size


def _communicates(module) -> bool:
    """Does this block issue a collective of its output's shape (mlx-lm's sharded layers)?"""
    from mlx.nn.layers import distributed as nd

    sharded_to_all = tuple(c for c in (getattr(nd, "ShardedToAllLinear", None), getattr(nd, "QuantizedShardedToAllLinear", None)) if c)
    for _, m in [("", module)] + list(module.named_modules()):
        if getattr(m, "sharding_group", None) is not None or isinstance(m, sharded_to_all):
            return True
    return False


def sharded_structure(model, n: int) -> Structure:
    """``structure.classify`` for a sharded model: a head sharded over the vocabulary (``vocab / n`` outputs per
    rank) is still the output head, not an unclassified linear and not a tied embedding."""
    st = classify(model)
    vocab = vocab_sizes(model)
    fixed = False
    for b in st.blocks:
        if (b.block_name == "unclassified" and b.layer is None and is_linear(b.module)
                and out_features(b.module) * n in vocab):
            b.block_name, b.kind, fixed = "output_head", f"output head (vocabulary sharded over {n} ranks)", True
    if fixed and st.tied_head:
        st.tied_head = False
        for b in st.blocks:
            if "output_head" in b.roles:
                b.roles, b.kind = (), "embedding"
    return st


def measure_forward_distributed(model, cache, snapshot, tokens: list[int], reps: int, group, skip: bool = True) -> PhaseBreakdown:
    """``breakdown.measure_forward`` for a sharded model, with a ``communication`` block; this rank's figures."""
    with Communication(model, group) as comm:
        return measure_forward(model, cache, snapshot, tokens, reps, skip, instrumenter=comm.instrumenter, hooks=comm)


_PerRankScalar = Literal["whole_ms", "instrumented_ms", "block_sum_ms", "inter_block_ms", "barrier_distortion"]
_PER_RANK_SCALARS: tuple[_PerRankScalar, ...] = ("whole_ms", "instrumented_ms", "block_sum_ms", "inter_block_ms", "barrier_distortion")
_SPLIT = ("wait_ms", "transfer_ms")


def _with_per_rank(fwd: PhaseBreakdown, group) -> PhaseBreakdown:
    """Add ``per_rank`` (every rank's figures, rank order) to this rank's forward dict (one all-sum)."""
    blocks, skips = list(fwd["blocks"]), list(fwd["skip_estimates"])
    row = [fwd[k] for k in _PER_RANK_SCALARS] + [fwd["communication_split"][k] for k in _SPLIT]
    row += [fwd["blocks"][c] for c in blocks] + [fwd["skip_estimates"][c] for c in skips]
    rows = gather_rows(row, group)
    per: dict[str, Any] = {k: [r[i] for r in rows] for i, k in enumerate(_PER_RANK_SCALARS)}
    o = len(_PER_RANK_SCALARS)
    per["communication_split"] = {k: [r[o + i] for r in rows] for i, k in enumerate(_SPLIT)}
    o += len(_SPLIT)
    per["blocks"] = {c: [r[o + i] for r in rows] for i, c in enumerate(blocks)}
    o += len(blocks)
    per["skip_estimates"] = {c: [r[o + i] for r in rows] for i, c in enumerate(skips)}
    return {**fwd, "per_rank": per}


def measure_breakdown_distributed(model, prompt: list[int], continuation: list[int], k: int, group, reps: int = 3,
                                  skip: bool = True, backend: str = "ring", hosts: list[str] | None = None) -> DistributedBreakdown:
    """Decode (1 position) and verify (k+1 positions) breakdowns of the sharded model, communication included,
    in ``breakdown.measure_breakdown``'s shape plus ``per_rank`` lists and a ``distributed`` record."""
    cache, cp, toks = at_prompt_end(model, prompt, continuation, k)
    decode = _with_per_rank(measure_forward_distributed(model, cache, cp, toks[:1], reps, group, skip), group)
    verify = _with_per_rank(measure_forward_distributed(model, cache, cp, toks, reps, group, skip), group)
    ratios = verify_to_decode(decode, verify)
    labels = sharded_structure(model, group.size()).labels()
    calls = decode["collectives"]["calls"]
    what = " + ".join(f"{v} {k.replace('_', '-')}{'s' if v != 1 else ''}" for k, v in sorted(calls.items()))
    labels[COMMUNICATION] = f"Communication ({backend}, {group.size()} ranks)"  # short: a table row's label
    return {
        "decode": decode,
        "verify": verify,
        "ratios": ratios,
        "labels": labels,
        "distributed": {"ranks": group.size(), "backend": backend, "hosts": hosts or [],
                        "rank_of_figures": group.rank(), "parallelism": "tensor",
                        "collectives_per_forward": what or "no collectives",
                        "bytes_per_forward": {"decode": decode["collectives"]["bytes"],
                                              "verify": verify["collectives"]["bytes"]}},
    }
