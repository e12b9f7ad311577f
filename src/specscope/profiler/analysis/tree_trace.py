"""Walking a tree run from an acceptance trace: the exact rounds of greedy tree decoding at any budget, from one record.

A tree run's trace (``engine_adapter.measure.acceptance_trace``, ``tree``) holds for every start s of the target's
own continuation c_0..c_{N-1} what the drafter's tree is grown from — DFlash: the top-b candidate probabilities of
each block position 1..depth (the position's softmax, the same whatever the parent); DFlash2: the selector's q over
each position's K candidates given the previous position's candidate — and the rank r_i(s) of c_{s+i} among
position i's candidates (-1: not among them). Under greedy decoding a round from s with budget B:

    grows the tree best first by path probability from those lists (exactly ``cache.tree.grow``: a node is a label
    sequence (j_1..j_d), its path probability the product of its q's); accepts the path while the target's token is a child,
    i.e. the longest prefix (r_1(s)..r_a(s)) that is a node of the tree; emits a + 1 tokens; the next round
    starts at s + a + 1 (the trace's ``walk``, with the tree's accepted path for the chain's agreement); the
    depth limit is k until the output's end cuts it, as the engine's (``to_the_end``: DFlash's last blocks).

So E(B), the depth histogram and the acceptance by depth of a tree run at any budget B (DFlash: up to b) come from one trace,
exactly (greedy), as E(k) does for chains. Rounds whose depth limit the output's end cut (the engine's last rounds)
are walked but not counted ("full": ``rounds.full_round``).

Pure Python: no MLX (the analysis floor).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict

from specscope.profiler.session.trace_record import TraceError


class TreeTraceFigures(TypedDict):
    """A tree run at one budget walked from traces (``at_budget``)."""
    budget: int
    rounds: int                      # every round walked
    full_rounds: int                 # rounds drafted to the full depth: the ones counted
    accepted: list[int]              # each full round's accepted path length
    tokens_per_round: float | None   # E(B) = 1 + mean accepted path length over the full rounds
    acceptance_by_depth: list[float | None]  # share of full rounds whose path reached depth i, i = 1..depth
    depth_histogram: list[int]       # full rounds whose path ended at depth 0..depth
    nodes_per_round: float | None    # nodes the trees held (B unless the lists ran out)


Candidates = Callable[[tuple[int, ...]], Sequence[tuple[int, float]]]  # node's labels -> its children (label, p)


def grow_labels(children: Candidates, depth: int, budget: int) -> tuple[set[tuple[int, ...]], int]:
    """The nodes (label sequences from the root) of the tree ``cache.tree.grow`` builds when a node's candidate
    children are ``children(node)`` (label, probability), best first; at most ``depth`` levels and ``budget`` nodes;
    and how many nodes it holds. The heap and its ties are grow's: (-path probability, parent's node index, rank,
    insertion order)."""
    nodes: list[tuple[int, ...]] = [()]
    probs = [1.0]
    lists: dict[int, Sequence[tuple[int, float]]] = {}
    heap: list[tuple[float, int, int, int]] = []
    seq = 0

    def push(parent: int, rank: int) -> None:
        nonlocal seq
        if len(nodes[parent]) + 1 > depth:
            return
        if parent not in lists:
            lists[parent] = children(nodes[parent])
        if rank < len(lists[parent]):
            heapq.heappush(heap, (-probs[parent] * float(lists[parent][rank][1]), parent, rank, seq))
            seq += 1

    push(0, 0)
    while heap and len(nodes) - 1 < budget:
        neg, parent, rank, _ = heapq.heappop(heap)
        nodes.append(nodes[parent] + (int(lists[parent][rank][0]),))
        probs.append(-neg)
        push(parent, rank + 1)
        push(len(nodes) - 1, 0)
    return set(nodes[1:]), len(nodes) - 1


def grow_ranks(top_p: Sequence[Sequence[float]], depth: int, budget: int) -> tuple[set[tuple[int, ...]], int]:
    """DFlash's trees: every node at depth d has the same candidates, position d's list (labels: ranks)."""
    return grow_labels(lambda node: list(enumerate(top_p[len(node)])) if len(node) < len(top_p) else [],
                       depth, budget)


def grow_selected(q: Sequence[Sequence[Sequence[float]]], depth: int, budget: int) -> tuple[set[tuple[int, ...]], int]:
    """DFlash2's trees: a node's children are position d's K candidates ranked by the selector's q given the node's
    own candidate (row 0 at the first position), the top ``budget`` of them (``cache.tree.top_candidates``: a
    stable sort; labels: the candidates' indices)."""
    def children(node: tuple[int, ...]) -> list[tuple[int, float]]:
        d = len(node)
        if d >= len(q):
            return []
        row = q[d][0 if d == 0 else node[-1]]
        order = sorted(range(len(row)), key=lambda j: -row[j])[:max(1, budget)]
        return [(j, row[j]) for j in order]

    return grow_labels(children, depth, budget)


def accepted_path(tree: set[tuple[int, ...]], ranks: Sequence[int]) -> int:
    """How far the target's tokens (their ranks a position) go down the tree: the accepted path's length."""
    a = 0
    while a < len(ranks) and ranks[a] >= 0 and tuple(ranks[:a + 1]) in tree:
        a += 1
    return a


def walk(tree_trace: Mapping[str, Any], budget: int, k: int | None = None) -> list[tuple[int, int, int, int]]:
    """The rounds of a greedy tree run at ``budget`` (depth limit ``k``, default the trace's) over the trace's
    continuation: (start s, depth limit, accepted, nodes)."""
    depth = int(k or tree_trace["depth"])
    if budget < 1:
        raise TraceError("a tree needs a budget of at least one node")
    parent = tree_trace.get("kind") == "per_parent"
    if budget > tree_trace["b"] and not parent:
        raise TraceError(f"the trace holds {tree_trace['b']} candidates a position; a budget of {budget} needs more")
    if depth > tree_trace["depth"]:
        raise TraceError(f"the trace holds {tree_trace['depth']} positions a block; a depth of {depth} is beyond it")
    lists, ranks = tree_trace["q"] if parent else tree_trace["top_p"], tree_trace["rank"]
    grow = grow_selected if parent else grow_ranks
    n = len(ranks) + 1  # the continuation's tokens, c_0 included
    end = 1 if tree_trace.get("to_the_end") else 2  # a drafter that drafts to the end (DFlash) cuts one later
    out, s = [], 0
    while s + 1 < n:
        limit = min(depth, n - s - end)
        tree, held = grow(lists[s], limit, budget)
        a = accepted_path(tree, ranks[s][:limit])
        out.append((s, limit, a, held))
        s += a + 1
    return out


def _figures(rounds: list[tuple[int, int, int, int]], budget: int, k: int) -> TreeTraceFigures:
    full = [(a, held) for _, limit, a, held in rounds if limit == k]
    acc = [a for a, _ in full]
    n = len(acc)
    return {
        "budget": budget, "rounds": len(rounds), "full_rounds": n, "accepted": acc,
        "tokens_per_round": 1.0 + sum(acc) / n if n else None,
        "acceptance_by_depth": [sum(1 for a in acc if a >= i) / n if n else None for i in range(1, k + 1)],
        "depth_histogram": [acc.count(j) for j in range(k + 1)],
        "nodes_per_round": sum(h for _, h in full) / n if n else None,
    }


def tree_traces(cases: Sequence[Mapping[str, Any]]) -> list[dict]:
    """The tree parts of the cases' traces (those that have one)."""
    return [t["tree"] for c in cases if isinstance(t := c.get("trace"), dict) and isinstance(t.get("tree"), dict)]


def at_budget(traces: Sequence[Mapping[str, Any]], budget: int, k: int | None = None) -> TreeTraceFigures:
    """E(budget) etc. pooled over traces (cases): every full round of every trace counts once."""
    if not traces:
        raise TraceError("no tree trace: record one with run --trace on a tree run (--tree-budget, DFlash)")
    depth = int(k or min(t["depth"] for t in traces))
    rounds = [r for t in traces for r in walk(t, budget, depth)]
    return _figures(rounds, budget, depth)


def curve(traces: Sequence[Mapping[str, Any]], k: int | None = None) -> list[TreeTraceFigures]:
    """``at_budget`` for every budget 1..b (the smallest b of the traces): the budget what-if."""
    if not traces:
        return []
    return [at_budget(traces, b, k) for b in range(1, min(t["b"] for t in traces) + 1)]
