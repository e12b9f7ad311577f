"""Walking an acceptance trace: the exact rounds of greedy speculative decoding at every k, from one record.

The trace (``engine_adapter.measure.acceptance_trace``) holds, for every start position s of the target's own
continuation c_0..c_{N-1} (s = 0..N-2, so N − 1 entries), A(s): how many of the drafter's next K_max
proposals, chained from the true prefix (prompt + c_0..c_s), agree with c_{s+1}, c_{s+2}, … Under greedy
decoding a chained drafter proposes the same tokens from the same prefix whatever k is, so a run at k is
determined by the trace:

    start at s = 0 (c_0 came from the prefill); a round drafts k' = min(k, N − s − 2) tokens (the engine's
    last rounds draft fewer, as max-tokens nears), accepts a = min(k', A(s)), emits a + 1 tokens, and the
    next round starts at s + a + 1; the run ends once N tokens are out.

That gives E(k), the distribution of tokens per round and the acceptance by depth exactly, with no
independence assumption (rounds at K_max are a length-biased sample of positions: they skip through easy
spans and land on hard ones, so a_i measured there does not hold at another k when acceptance is bursty).

"Full" rounds are those that drafted k (the last, shorter rounds are left out, as ``tune`` leaves them
out of both its prediction and its measurement). Under sampling a trace holds M seeded draws of A(s)
(``draws``): every figure is then the mean over the draws' walks, and is labelled an estimate.

Pure Python: no MLX, so the app, the reports and the tests use it as they are.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from specscope.profiler.analysis.records import TraceFigures, TraceSummary
from specscope.profiler.session.trace_record import TraceError


def walk(A: list[int], k: int, to_the_end: bool = False) -> list[tuple[int, int, int]]:
    """The rounds of a greedy run at ``k`` over a continuation of len(A) + 1 tokens: (start s, drafted, accepted).
    ``to_the_end``: a drafter that drafts to the output's end (DFlash), whose last rounds draft one more, as the
    engine's loop has it (the bonus then cut)."""
    if k < 1:
        raise TraceError("k must be at least 1")
    n = len(A) + 1  # tokens in the continuation, c_0 (from the prefill) included
    rounds, s = [], 0
    while s + 1 < n:
        drafted = min(k, n - s - (1 if to_the_end else 2))
        acc = min(drafted, A[s])
        rounds.append((s, drafted, acc))
        s += acc + 1
    return rounds


def _figures(rounds: list[tuple[int, int, int]], k: int) -> TraceFigures:
    full = [a for _, d, a in rounds if d == k]
    n = len(full)
    hist = [sum(1 for a in full if a == j) for j in range(k + 1)]  # tokens per round 1..k+1
    return {
        "k": k,
        "rounds": len(rounds),
        "full_rounds": n,
        "accepted": full,
        "tokens_per_round": 1.0 + sum(full) / n if n else None,
        "acceptance_by_depth": [sum(1 for a in full if a >= i) / n if n else None for i in range(1, k + 1)],
        "tokens_per_round_hist": hist,
        "accepted_total": sum(full),
        "drafted_total": k * n,
    }


def at_k(trace: Mapping[str, Any], k: int) -> TraceFigures:
    """E(k), acceptance by depth and tokens per round for one trace (a mean over draws under sampling)."""
    if k > trace["k_max"]:
        raise TraceError(f"the trace holds {trace['k_max']} proposals per position; k = {k} is beyond it")
    # a drafter whose drafts depend on k (DFlash) has each k's own A(s); a chain drafter's one A(s) serves every k
    own = (trace.get("A_by_k") or {}).get(str(k))
    series = list(trace.get("draws") or []) or [own if own is not None else trace["A"]]
    per = [_figures(walk(a, k, bool(trace.get("to_the_end"))), k) for a in series]
    if len(per) == 1:
        return {**per[0], "estimate": bool(trace.get("estimate"))}
    # under sampling: the draws pooled (rounds of every draw's walk), and said to be an estimate
    pooled = _figures([(0, k, a) for f in per for a in f["accepted"]], k)
    es = [f["tokens_per_round"] for f in per if f["tokens_per_round"] is not None]
    return {**pooled, "accepted": per[0]["accepted"], "estimate": True, "draws": len(per),
            "tokens_per_round_spread": [min(es), max(es)] if es else None}


def pooled(traces: list[dict], k: int) -> TraceFigures:
    """E(k) etc. over several traces (cases, prompts): every full round of every trace counts once."""
    rounds, estimate = [], False
    for t in traces:
        f = at_k(t, k)
        estimate = estimate or f["estimate"]
        rounds += [(0, k, a) for a in (f["accepted"] if not f.get("draws") else _all_draws(t, k))]
    return {**_figures(rounds, k), "estimate": estimate, "traces": len(traces)}


def _all_draws(t: dict, k: int) -> list[int]:
    return [a for d in t["draws"] for a in _figures(walk(d, k, bool(t.get("to_the_end"))), k)["accepted"]]


def curve(traces: list[dict], k_max: int | None = None) -> list[TraceFigures]:
    """``pooled`` for every k = 1..K_max (the smallest K_max of the traces, unless given)."""
    if not traces:
        return []
    top = min(t["k_max"] for t in traces) if k_max is None else k_max
    return [pooled(traces, k) for k in range(1, top + 1)]


def k_max_estimate(A: list[int], k_max: int, k: int) -> float | None:
    """What the old method says E(k) is: rounds walked at K_max, then E(k) = 1 + mean(min(accepted, k))
    over them (for comparison with the exact walk; it is biased when acceptance is bursty)."""
    full = [a for _, d, a in walk(A, k_max) if d == k_max]
    return 1.0 + statistics.fmean(min(a, k) for a in full) if full else None


def summary(trace: dict) -> TraceSummary:
    """A short description of one trace: positions, mean A(s), share of positions where the first draft agrees."""
    a = trace["A"]
    return {"positions": len(a), "mean_A": statistics.fmean(a) if a else None,
            "first_draft_agrees": sum(1 for x in a if x >= 1) / len(a) if a else None,
            "k_max": trace["k_max"], "drafter": trace.get("drafter"), "estimate": bool(trace.get("estimate"))}


def by_class(cases: list[dict], k_max: int | None = None) -> dict[str, list[TraceFigures]]:  # dict: content class -> its curve (the classes are data)
    """Per content class (a case's ``content_class``): the trace curve over that class's cases that carry a trace."""
    out: dict[str, list[TraceFigures]] = {}
    groups: dict[str, list[dict]] = {}
    for c in cases:
        t = c.get("trace")
        if isinstance(t, dict) and t.get("A") is not None:
            groups.setdefault(c.get("content_class") or "—", []).append(t)
    for cat, ts in groups.items():
        out[cat] = curve(ts, k_max)
    return out
