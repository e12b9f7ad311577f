"""A tree run's own figures (``--tree-budget``): nodes verified, the accepted path's depth, the tree's waste.

What acceptance means for a tree: a round accepts a *path*, its length the round's ``accepted`` (0..k), and emits it
plus the target's next token, so tokens per round E = 1 + the mean accepted path length, and a_i = the share of rounds
whose accepted path reached depth i — the chain's figures read the same way, with the same intervals (the round, or
the case, as the unit: ``stats.acceptance_from_histogram`` at k = the tree's depth limit). What a tree adds: how many
nodes each round verified for that path (``nodes_per_round``; the verify runs nodes + 1 positions), and their ratio,
nodes verified per accepted token (the tree's waste: 1 for a chain that is always right).

The reference summary and the live one both fold the same integer counts (``TreeTally``), so their figures are equal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from specscope.profiler.session.records import Round, TreeFigures


@dataclass
class TreeTally:
    """Integer sums over tree rounds (exact in any order): rounds, nodes verified, tree depths, accepted path lengths."""
    rounds: int = 0
    nodes: int = 0
    depth: int = 0
    accepted: int = 0

    def add(self, r: Round) -> None:
        tree = r.get("tree")
        if tree is None:
            return
        self.rounds += 1
        self.nodes += int(tree["nodes"])
        self.depth += int(tree["depth"])
        self.accepted += int(r["accepted"])

    def merge(self, other: "TreeTally") -> None:
        self.rounds += other.rounds
        self.nodes += other.nodes
        self.depth += other.depth
        self.accepted += other.accepted


def tally(rounds: Iterable[Round]) -> TreeTally:
    out = TreeTally()
    for r in rounds:
        out.add(r)
    return out


def tree_budget(session) -> int | None:
    """The session's node budget (0 or absent: a chain run)."""
    b = (session.config or {}).get("tree_budget")
    return int(b) if b else None


def tree_figures(budget: int | None, t: TreeTally, hist: Mapping[int, int], k: int) -> TreeFigures | None:
    """The figures from a tally and the accepted-count histogram of the same rounds; None for a chain run."""
    if not budget and not t.rounds:
        return None
    n = t.rounds
    emitted = t.accepted + n
    return {
        "budget": budget,
        "rounds": n,
        "nodes_per_round": t.nodes / n if n else None,
        "depth_per_round": t.depth / n if n else None,
        "accepted_per_round": t.accepted / n if n else None,
        "depth_histogram": [int(hist.get(j, 0)) for j in range(k + 1)],
        "nodes_per_accepted": t.nodes / t.accepted if t.accepted else None,
        "nodes_per_token": t.nodes / emitted if emitted else None,
    }
