"""The engine side of ``specscope tune`` and ``specscope roofline``: runs, timings and costs as plain dicts.

``TuneEngine.open(params)`` loads the target through ``Engine.open`` (same model resolution, same
refusal of models that cannot be rolled back exactly) and finds every drafter the model can use:
its MTP head when the checkpoint (or ``--mtp-weights``) has one, a draft model when one is given
(the demo's own draft model with ``--demo``), n-gram lookup always, and the oracle what-if when
asked for. Each call runs one thing and returns JSON-friendly data; the profiler (``profiler.analysis.tune``,
``profiler.cli.roofline``) decides what to run and what it means.

The oracle here is ``PositionalOracle``: the draft for absolute position j is right exactly when a
seeded uniform draw *for that position* is below p. Its acceptance has the same distribution as
``OracleDrafter``'s (each draft wrong with probability 1 − p), but every run sees the same draws at
the same positions — as a real greedy drafter, whose guess at a position is fixed — so runs at
different k differ in their timing, not in their luck (common random numbers).
"""

from __future__ import annotations

import time
from dataclasses import replace

from typing import TYPE_CHECKING, NotRequired, TypedDict

import numpy as np

from specscope.engine_adapter.clock import ms_since
from specscope.engine_adapter.drafters.drafter import Draft
from specscope.drafter_kinds import DRAFTER_NAMES, WHAT_IF_DRAFTERS
from .engine import Engine, EngineParams
from specscope.engine_adapter.drafters.oracle import OracleDrafter
from .measure.records import AcceptanceTrace, BlockCost, ComponentTimes, SurfaceRaw, VerifyCurve
from .machine_probe import MachineProbe

if TYPE_CHECKING:  # annotations only: verify_curve is imported where a curve is measured
    from specscope.engine_adapter.measure.verify_curve import VerifyPoint


class TuneDescription(TypedDict):
    model: str
    model_path: str
    regime: str
    greedy: bool
    drafters: list[str]


class PlainRun(TypedDict):
    tokens: list[int]
    step_ms: list[float]       # every step after the prefill
    prefill_ms: float


class RoundSummary(TypedDict):
    """One speculative round, counted (``drafted`` and ``emitted`` are how many tokens)."""
    drafted: int
    accepted: int
    emitted: int
    ms: float
    draft_ms: float | None
    verify_ms: float | None
    rollback_ms: float | None
    kind: str
    depth_limit: NotRequired[int]     # a tree round's: its depth limit, its nodes, and whether the limit is the run's
    nodes: NotRequired[int]
    full: NotRequired[bool]


class SpeculativeRun(TypedDict):
    rounds: list[RoundSummary]
    tokens: list[int]


class ContextBytes(TypedDict):
    """What each token of context adds to a decode step's bytes, and a decode step's bytes with no context."""
    bytes_per_context_token: float
    step_bytes_no_context: float


class RooflineInputs(TypedDict):
    curve: VerifyCurve
    costs: dict[int, dict[str, BlockCost]]   # n -> block name -> its cost
    machine: MachineProbe                    # machine_probe.probe_machine's record
    cost_notes: list[str]
    weight_bytes_total: int
    kv: ContextBytes


class StoredContext(TypedDict):
    ms: float
    tokens: int
    bytes: int


# the drafters tune can run (the what-ifs apart), n-gram lookup (the one that needs nothing) last in its table
REAL_DRAFTERS = tuple(sorted((n for n in DRAFTER_NAMES if n not in WHAT_IF_DRAFTERS), key=lambda n: n == "ngram"))


class PositionalOracle(OracleDrafter):
    """The oracle what-if with one seeded draw per absolute position (see the module docstring)."""

    def __init__(self, plain_tokens, p, draft_ms=0.0, seed=0, vocab_size=0):
        super().__init__(plain_tokens, p, draft_ms=draft_ms, seed=seed, vocab_size=vocab_size)
        self.seed = int(seed)
        self._draws(len(self.plain) + 64)

    def _draws(self, n: int) -> None:
        rng = np.random.default_rng([self.seed, 7919])  # u first: the same right/wrong draws, extended or not
        self.u = rng.random(n)
        self.shift = rng.integers(0, max(1, self.vocab - 1), size=n)

    def draft(self, last_token, k, lazy=False):
        t0 = time.perf_counter()
        if self.pos + k >= len(self.u):
            self._draws(2 * (self.pos + k))
        out = []
        for i in range(k):
            j = self.pos + i
            true = self.plain[j] if j < len(self.plain) else last_token
            if self.u[j] >= self.p:
                true = (true + 1 + int(self.shift[j])) % self.vocab
            out.append(int(true))
        while ms_since(t0) < self.draft_ms:
            pass  # a busy wait, like a drafter that keeps the machine busy
        return Draft(out)

    def describe(self):
        return {**super().describe(), "draws": "one per position (the same at every k)"}


class TuneEngine:
    def __init__(self, engine: Engine, mtp: bool):
        self.engine = engine
        self.model = engine.target.model
        self.mtp = mtp
        self._drafters: dict[str, object] = {}
        self._point: tuple[tuple[int, ...], VerifyPoint] | None = None

    @classmethod
    def open(cls, params: EngineParams, status=lambda message: None) -> "TuneEngine":
        from specscope.engine_adapter.model.inspect_model import mtp_status

        from specscope.engine_adapter.model.dflash_format import is_dflash_folder

        name = "draft" if (params.draft_model or params.demo) else "ngram"
        if params.drafter == "dflash" or (params.draft_model and is_dflash_folder(params.draft_model)):
            name = "dflash"  # a DFlash --draft-model is the DFlash drafter, not a draft model
        p = replace(params, drafter=name)
        eng = Engine.open(p, status)
        mtp = bool(params.mtp_weights) or mtp_status(eng.target.checkpoint)["available"]
        return cls(eng, mtp)

    # -- what there is ------------------------------------------------------------------------------------------
    def available_drafters(self) -> list[str]:
        return [d for d in REAL_DRAFTERS if d == "ngram" or (d == "mtp" and self.mtp) or (d == "draft" and self.engine.draft)
                or (d == "dflash" and self.engine.dflash is not None)]

    def describe(self) -> TuneDescription:
        e = self.engine
        return {"model": e.target.path.name, "model_path": str(e.target.path), "regime": e.sampling.regime,
                "greedy": e.sampling.greedy, "drafters": self.available_drafters()}

    def encode(self, text: str) -> list[int]:
        return self.engine.encode(text)

    def drafter(self, name: str, plain_tokens: list[int], seed: int = 0):
        if name == "oracle":  # ``seed`` offsets the oracle's draws (the other drafters draw nothing)
            p = self.engine.params
            return PositionalOracle(plain_tokens, p.oracle_p, p.oracle_draft_ms, p.seed + seed, self.engine.target.vocab_size)
        if name not in self.available_drafters():
            raise ValueError(f"drafter {name!r} is not available for this model")
        if name not in self._drafters:  # begin() resets every stateful drafter, so one instance serves every run
            eng = Engine(replace(self.engine.params, drafter=name), self.engine.target, self.engine.draft, name, self.engine.compat,
                         dflash=self.engine.dflash)
            self._drafters[name] = eng.make_drafter(plain_tokens)
        return self._drafters[name]

    # -- runs -----------------------------------------------------------------------------------------------------
    def plain(self, prompt: list[int], max_tokens: int) -> PlainRun:
        from specscope.engine_adapter.decode.decoding import plain_generate

        recs = list(plain_generate(self.model, prompt, max_tokens, self.engine.sampling))
        return {"tokens": [r["token"] for r in recs], "step_ms": [r["ms"] for r in recs[1:]], "prefill_ms": recs[0]["ms"]}

    def speculative(self, name: str, prompt: list[int], plain_tokens: list[int], k: int, max_tokens: int,
                    round_kinds: str = "end_to_end", seed: int = 0, tree_budget: int = 0) -> SpeculativeRun:
        """A speculative run at k; with ``tree_budget`` a tree run (``tree_decoding``) of at most that many nodes and
        depth limit k, whose rounds say their depth limit, nodes, and whether they are full (the depth limit not cut
        by the output's end: the rounds a prediction prices)."""
        from specscope.engine_adapter.decode.decoding import speculative_generate
        from specscope.engine_adapter.decode.tree_decoding import tree_speculative_generate

        drafter = self.drafter(name, plain_tokens, seed)
        rounds: list[RoundSummary] = []
        tokens: list[int] = []
        gen = (tree_speculative_generate(self.model, prompt, drafter, k, tree_budget, max_tokens, self.engine.sampling,
                                         round_kinds=round_kinds) if tree_budget > 0 else
               speculative_generate(self.model, prompt, drafter, k, max_tokens, self.engine.sampling, round_kinds=round_kinds))
        for r in gen:
            if r["event"] == "prefill":
                tokens.append(r["token"])
                continue
            tokens += r["emitted"]
            s: RoundSummary = {"drafted": len(r["drafted"]), "accepted": r["accepted"], "emitted": len(r["emitted"]),
                               "ms": r["ms"], "draft_ms": r["draft_ms"], "verify_ms": r["verify_ms"],
                               "rollback_ms": r["rollback_ms"], "kind": r["kind"]}
            tree = r.get("tree")
            if tree:
                s["depth_limit"], s["nodes"], s["full"] = tree["max_depth"], tree["nodes"], tree["max_depth"] == k
            rounds.append(s)
        return {"rounds": rounds, "tokens": tokens}

    def tree_refusal(self, name: str) -> str | None:
        """Why ``name`` cannot run tree rounds on this model (None: it can)."""
        from specscope.engine_adapter.decode.tree_decoding import tree_refusal

        return tree_refusal(self.model, self.drafter(name, []))

    def trace(self, name: str, prompt: list[int], plain_tokens: list[int], k_max: int, seed: int = 0,
              tree_b: int = 0) -> AcceptanceTrace:
        """The acceptance trace A(s) of ``name`` along ``plain_tokens`` (``acceptance_trace.record_trace``; with
        ``tree_b``, the top ``tree_b`` candidates a position too, for tree budgets). Only
        the MTP head needs the target's forward over the continuation (for its hidden states); the others draft
        from the plain run's tokens, which are the target's own output (the oracle from its per-position draws)."""
        from specscope.engine_adapter.measure.acceptance_trace import TREE_B, record_trace

        drafter = self.drafter(name, plain_tokens, seed)
        wide = {"tree_b": max(TREE_B, tree_b), "tree_depth": k_max} if tree_b > 0 else {}
        return record_trace(self.model, prompt, plain_tokens, drafter, k_max, sampling=self.engine.sampling, name=name,
                            target_forward=drafter.needs_hidden, **wide)

    def components(self, name: str, prompt: list[int], plain_tokens: list[int], k: int, reps: int = 3,
                   tree_budget: int = 0, points: list[float] | None = None) -> ComponentTimes:
        """The run's prediction inputs for ``name`` at ``k``, timed apart (``components.measure_components``): verify,
        what drafting adds to a round run end to end, rollback by accepted count; with ``tree_budget``, a tree
        round's at that budget and depth limit k (``tree_components``), spread over points of the case (the tree a
        prefix grows sets what its verify costs: ``tree_components.spread``; ``points``: where, the starts of the rounds
        the run makes), without the run's budget what-if."""
        from specscope.engine_adapter.measure.components import measure_components
        from specscope.engine_adapter.measure.tree_components import TREE_POINTS, measure_tree_components, spread

        drafter = self.drafter(name, plain_tokens)
        if tree_budget > 0:
            return spread(lambda at, r: measure_tree_components(self.model, lambda: drafter, self.engine.sampling, prompt,
                                                                plain_tokens, k, tree_budget, reps=r, at=at,
                                                                what_if_reps=0), reps, points or TREE_POINTS)
        return measure_components(self.model, lambda: drafter, self.engine.sampling, prompt, plain_tokens, k, reps=reps)

    def verify_samples(self, context: list[int], tokens: list[int], positions: int, reps: int,
                       ns: list[int] | None = None) -> dict[int, list[float]]:  # dict: n -> times
        """Whole-graph verify forward times (ms) over n = 1..positions (or only the ``ns``) at the end of
        ``context``, ``reps`` each after one warm-up each, repeats interleaved across n."""
        from specscope.engine_adapter.measure.verify_curve import VerifyPoint

        key = tuple(context)
        if self._point is None or self._point[0] != key:  # one prefilled cache per context, reused
            self._point = (key, VerifyPoint(self.model, context))
        point = self._point[1]
        toks = (list(tokens) + [tokens[-1] if tokens else 0] * positions)[:positions]
        at = list(ns or range(1, positions + 1))
        for n in at:
            point.forward(toks[:n])
        out: dict[int, list[float]] = {n: [] for n in at}
        for _ in range(reps):
            for n in at:
                out[n].append(point.time_ms(toks[:n]))
        point.restore()
        return out

    # -- roofline inputs ----------------------------------------------------------------------------------------------
    def roofline_inputs(self, prompt: list[int], positions: int, reps: int, block_reps: int,
                        bandwidth_mib: float, matmul_n: int | None, progress=lambda message: None,
                        on_sweep=None) -> RooflineInputs:
        """The verify curve (with routes), bytes and FLOPs per block at every n, and the machine probes."""
        from .machine_probe import probe_machine
        from specscope.engine_adapter.measure.model_cost import model_cost
        from specscope.engine_adapter.measure.verify_curve import VerifyPoint, measure_curve

        curve = measure_curve(self.model, prompt, positions=positions, reps=reps, block_reps=block_reps,
                              progress=progress, on_sweep=on_sweep)
        progress("counting bytes and FLOPs per block")
        point = VerifyPoint(self.model, prompt)  # a live cache at the same context: state sizes, KV dtype
        cost = model_cost(self.model, point.cache)
        costs = {p["positions"]: cost.forward(p["positions"], curve["context"], p.get("routes")) for p in curve["points"]}
        # what each token of context adds to a decode step's bytes (full attention's KV reads; a recurrent state does
        # not grow), and a decode step's bytes with no context: where attention stops being negligible follows
        step0, step1k = cost.forward(1, 0), cost.forward(1, 1000)
        total = lambda c: sum(v["weight_bytes"] + v["other_bytes"] for v in c.values())  # noqa: E731
        kv: ContextBytes = {"bytes_per_context_token": (total(step1k) - total(step0)) / 1000.0, "step_bytes_no_context": total(step0)}
        progress("probing the machine (bandwidth, compute)")
        machine = probe_machine(dtype=cost.act_dtype, bandwidth_mib=bandwidth_mib, matmul_n=matmul_n)
        return {"curve": curve, "costs": costs, "machine": machine, "cost_notes": cost.notes,
                "weight_bytes_total": cost.total_weight_bytes(), "kv": kv}

    def surface_inputs(self, prompts: list[list[int]], budgets: list[int], positions: int, reps: int, block_reps: int,
                       progress=lambda message: None) -> SurfaceRaw:
        """The verify cost surface at the end of every prompt (``tree_curve.measure_surface``), each point's bytes and
        FLOPs per block beside it (``ModelCost.forward``: a tree's recurrent layers read and write a state per node)."""
        from specscope.engine_adapter.measure.model_cost import model_cost
        from specscope.engine_adapter.measure.tree_curve import measure_surface
        from specscope.engine_adapter.measure.verify_curve import VerifyPoint

        surface = measure_surface(self.model, prompts, budgets, positions, reps, block_reps, progress=progress)
        progress("counting bytes and FLOPs per block of every point")
        for prompt, at in zip(prompts, surface["contexts"]):
            cost = model_cost(self.model, VerifyPoint(self.model, prompt).cache)
            for p in at["points"]:
                p["cost"] = cost.forward(p["width"], at["context"], p.get("routes"),
                                         states=p["width"] if p["kind"] == "tree" else 1)
        return surface

    def store_context(self, tokens: list[int]) -> StoredContext:
        """Prefill a long context once and store it (``context.prefill_context``): every later prefill that starts
        with it begins from a copy. Its time (ms, to the sync) and the stored bytes."""
        from specscope.engine_adapter.cache.context import prefill_context

        info = prefill_context(self.model, tokens)
        return {"ms": info["ms"], "tokens": info["tokens"], "bytes": info["bytes"]}
