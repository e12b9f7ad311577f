"""Whether an acceptance trace's "E(k) exact" holds where it is claimed: checks, not assumptions.

Under greedy decoding a trace (``trace_walk``) says exactly what a run at k does: the tokens it emits are the
continuation the trace was recorded along (the target's own output), and its rounds are the walk's (drafted,
accepted) one by one. ``tune`` calls E(k) exact only while that is seen to hold: a trace whose own record says the
target's forward disagreed with the continuation (``target_agrees`` below 1), or a confirmation run whose tokens or
rounds differ from the walk, voids it, and the reason is said. Pure Python (no MLX)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from specscope.profiler.analysis import trace_walk


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
            at = next((i for i, (a, b) in enumerate(zip(tokens, continuation)) if a != b), min(len(tokens), len(continuation)))
            return (f"a confirmation run at k = {k} emitted other tokens than the trace's continuation (from token {at}: "
                    f"{len(tokens)} tokens against {len(continuation)})")
    own = (trace.get("A_by_k") or {}).get(str(k))
    walked = [(d, a) for _, d, a in trace_walk.walk(own if own is not None else trace["A"], k)]
    real = [(int(r["drafted"]), int(r["accepted"])) for r in run.get("rounds") or []]
    if real != walked:
        at = next((i for i, (w, r) in enumerate(zip(walked, real)) if w != r), min(len(walked), len(real)))
        got = f"drafted {real[at][0]}, accepted {real[at][1]}" if at < len(real) else "no round"
        want = f"drafted {walked[at][0]}, accepted {walked[at][1]}" if at < len(walked) else "no round"
        return (f"a confirmation run at k = {k} differs from the trace's walk at round {at + 1} ({got}; the trace: {want}); "
                f"{len(real)} rounds against {len(walked)}")
    return None
