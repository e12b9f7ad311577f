"""Whether an acceptance trace's "E(k) exact" holds where it is claimed: checks, not assumptions.

Under greedy decoding a trace (``trace_walk``) says exactly what a run at k does: the tokens it emits are the
continuation the trace was recorded along (the target's own output), and its rounds are the walk's (drafted,
accepted) one by one. ``tune`` calls E(k) exact only while that is seen to hold: a trace whose own record says the
target's forward disagreed with the continuation (``target_agrees`` below 1), or a confirmation run whose tokens or
rounds differ from the walk, voids it, and the reason is said. Pure Python (no MLX)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from specscope.profiler.analysis import trace_walk, tree_trace


def trace_doubt(trace: Mapping[str, Any]) -> str | None:
    """Why a trace cannot be exact on its own record, or None: an estimate (sampled draws), or a recorded agreement
    with the target below 1 (the target's forward did not reproduce the continuation the drafter was walked on).
    No recorded agreement (a drafter that needs no target forward) is not a doubt: the confirmation runs check it."""
    if trace.get("estimate"):
        return "the trace is an estimate (sampled accept/reject draws)"
    agrees = trace.get("target_agrees")
    if agrees is not None and agrees < 1.0:
        return (f"the trace's recorded agreement with the target is {agrees:.1%} (below 100%): the target's forward did "
                "not reproduce the continuation the drafter was walked on")
    return None


def run_mismatch(trace: Mapping[str, Any], continuation: Sequence[int], k: int, run: Mapping[str, Any]) -> str | None:
    """Why a greedy run at ``k`` (``run``: its ``rounds`` with ``drafted`` and ``accepted`` counts, and its emitted
    ``tokens``, the prefill's first) is not the run the trace walks, or None when it is. ``continuation``: the tokens the
    trace was recorded along. Tokens are compared where the run reports them (a seam may leave them out)."""
    tokens = list(run.get("tokens") or [])
    if tokens and continuation:
        if tokens != list(continuation):
            at = first_difference(tokens, list(continuation))
            return (f"a confirmation run at k = {k} emitted other tokens than the trace's continuation (from token {at}: "
                    f"{len(tokens)} tokens against {len(continuation)})")
    own = (trace.get("A_by_k") or {}).get(str(k))
    walked = [(d, a) for _, d, a in trace_walk.walk(own if own is not None else trace["A"], k,
                                                    bool(trace.get("to_the_end")))]
    real = [(int(r["drafted"]), int(r["accepted"])) for r in run.get("rounds") or []]
    return rounds_mismatch(f"k = {k}", "drafted", real, walked)


def first_difference(a: Sequence, b: Sequence) -> int:
    """Where two sequences first differ (the shorter one's length where one is the other's start)."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def rounds_mismatch(setting: str, first: str, real: Sequence[tuple[int, int]],
                    walked: Sequence[tuple[int, int]]) -> str | None:
    """Why a run's rounds ((``first``, accepted) each) are not the walk's, named at the first that differs; None
    when they are the same."""
    if list(real) == list(walked):
        return None
    at = first_difference(walked, real)
    got = f"{first} {real[at][0]}, accepted {real[at][1]}" if at < len(real) else "no round"
    want = f"{first} {walked[at][0]}, accepted {walked[at][1]}" if at < len(walked) else "no round"
    return (f"a confirmation run at {setting} differs from the trace's walk at round {at + 1} ({got}; the trace: "
            f"{want}); {len(real)} rounds against {len(walked)}")


def tree_run_mismatch(trace: Mapping[str, Any], continuation: Sequence[int], budget: int, depth: int,
                 run: Mapping[str, Any]) -> str | None:
    """Why a greedy tree run at ``budget`` (``run``: its ``rounds`` with ``accepted`` and ``depth_limit``, its emitted
    ``tokens``) is not the run the trace's tree part walks, or None when it is."""
    tokens = list(run.get("tokens") or [])
    if tokens and continuation and tokens != list(continuation):
        at = first_difference(tokens, list(continuation))
        return (f"a confirmation run at tree budget {budget} emitted other tokens than the trace's continuation (from "
                f"token {at})")
    if not isinstance(trace.get("tree"), dict):
        return "the trace has no tree part to walk"
    want = [(limit, a) for _, limit, a, _ in tree_trace.walk(trace["tree"], budget, depth)]
    real = [(int(r.get("depth_limit", -1)), int(r["accepted"])) for r in run.get("rounds") or []]
    return rounds_mismatch(f"tree budget {budget}", "depth", real, want)



class Exactness:
    """Whether E(k) walked on a drafter's traces is exact, as tune has seen it so far: greedy decoding, a trace, and no
    reason against it — a trace whose own record doubts it (per drafter), or a confirmation run that is not the walk
    (per drafter and k). The first reason seen is kept."""

    def __init__(self, greedy: bool):
        self.greedy = greedy
        self.seeds: dict[str, list[int]] = {}  # drafter -> the seeds its traces were recorded with, in order
        self.void_drafter: dict[str, str] = {}
        self.void_k: dict[tuple[str, int], str] = {}

    def traced(self, name: str, traces: Sequence[Mapping[str, Any]], seeds: Sequence[int]) -> None:
        """A drafter's traces, recorded with ``seeds`` (each seed over every prompt, in order)."""
        self.seeds[name] = list(seeds)
        for t in traces:
            doubt = trace_doubt(t)
            if doubt and self.greedy:
                self.void_drafter.setdefault(name, doubt)

    def confirm(self, name: str, k: int, rep: int, traces: list[Mapping[str, Any]] | None,
                continuations: Sequence[Sequence[int]], runs: list[Mapping[str, Any]], tree_depth: int | None = None) -> None:
        """The confirmation runs of one repeat (one per prompt) against the trace's walk at k (``run_mismatch``), or,
        with ``tree_depth``, a tree run's at budget k (``tree_run_mismatch``)."""

        if not traces or not self.greedy or (name, k) in self.void_k:
            return
        seeds = self.seeds.get(name) or [0]
        at = seeds.index(rep) if rep in seeds else 0
        for i, run in enumerate(runs):
            j = at * len(continuations) + i
            if j < len(traces):
                why = (run_mismatch(traces[j], continuations[i], k, run) if tree_depth is None else
                       tree_run_mismatch(traces[j], continuations[i], k, tree_depth, run))
                if why:
                    self.void_k[(name, k)] = f"{why} (repeat {rep + 1}, prompt {i + 1})"
                    return

    def exact(self, name: str, k: int, has_traces: bool) -> bool:
        return bool(self.greedy and has_traces and name not in self.void_drafter and (name, k) not in self.void_k)

    def void_reason(self, name: str, k: int) -> str | None:
        return self.void_drafter.get(name) or self.void_k.get((name, k))
