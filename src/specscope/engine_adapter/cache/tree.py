"""A tree of draft candidates (DDTree, arXiv 2604.12989): grown best-first by path probability under a node budget,
verified in one forward (``cache.tree_verify``), and the rules that keep its longest accepted path. (On the caches'
floor: the verify lays the caches out by it, and the drafters and decoding above both use it.)

The tree is flat, as dflash-mlx's ``engine/ddtree.py`` keeps it: node 0 is the root (the last verified token, which
the verify forward runs like a chain's first position), every other node holds a drafted token, its parent's index,
its depth (the root's 0) and its path probability (the product of the drafter's probabilities along its path).
Nodes are numbered in the order they were added, best first, so a parent's index is always below its children's.

Growing (``grow``): from per-depth candidate lists (each ``(token, probability)`` sorted best first; a drafter whose
candidates depend on the parent's token gives them per parent), a heap holds, for every node, its best child not in
the tree and its next sibling; popping the best path probability ``budget`` times gives the ``budget`` most probable
paths' nodes (a child is never more probable than its parent, nor a sibling than the one before it). A budget of at
least the depth whose best path is far more probable than any other is the chain of the per-position argmaxes.

Acceptance: greedy (``accept_greedy``) walks from the root to the child whose token is the target's argmax at the
current node, as long as there is one; the bonus is the argmax where the walk stops. At temperature
(``accept_sampled``): recursive rejection over siblings (SpecInfer, arXiv 2305.09781) with each sibling's proposal a
point mass, which is what a tree of deterministic top candidates is: at a node with target distribution ``p``, the
children are tried best first; child ``c`` is accepted with probability ``r(c)``, ``r`` the residual (``p`` with the
tokens of the children tried before it removed, renormalised); after every child is rejected the next token is drawn
from the residual. Whatever the tree, the token chosen at each node is distributed as ``p``: lossless.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

Candidates = Sequence[tuple[int, float]]  # (token, probability), best first


@dataclass
class Tree:
    tokens: list[int]                    # node 0: the root (the last verified token)
    parents: list[int]                   # parents[0] = -1
    depths: list[int]                    # depths[0] = 0
    probs: list[float] = field(default_factory=list)  # path probability of each node (the root's 1.0)

    @classmethod
    def chain(cls, root: int, drafts: Sequence[int]) -> "Tree":
        """A chain: the root, then each draft the child of the one before (what a chain round verifies)."""
        n = len(drafts)
        return cls([root, *drafts], [-1, *range(n)], list(range(n + 1)), [1.0] * (n + 1))

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def drafted(self) -> list[int]:
        """The drafted tokens (every node but the root), in node order."""
        return self.tokens[1:]

    @property
    def depth(self) -> int:
        return max(self.depths)

    def children(self, i: int) -> list[int]:
        """Node ``i``'s children, best first (in node order: the order they were added)."""
        return [j for j, p in enumerate(self.parents) if p == i]

    def path(self, i: int) -> list[int]:
        """The nodes from the root to ``i``, both included."""
        out = [i]
        while self.parents[out[-1]] >= 0:
            out.append(self.parents[out[-1]])
        return out[::-1]

    def visibility(self) -> np.ndarray:
        """[N, N] bool: row ``i`` sees node ``j`` iff ``j`` is ``i`` or one of its ancestors (the verify's mask)."""
        n = len(self)
        vis = np.zeros((n, n), dtype=bool)
        for i in range(n):
            vis[i, self.path(i)] = True
        return vis

    def by_depth(self) -> list[list[int]]:
        """The nodes at each depth, 0 (the root) to the deepest, in node order."""
        out: list[list[int]] = [[] for _ in range(self.depth + 1)]
        for i, d in enumerate(self.depths):
            out[d].append(i)
        return out

    def widths(self) -> list[int]:
        """How many nodes at each depth 1..deepest."""
        return [len(level) for level in self.by_depth()[1:]]

    def check(self) -> None:
        """Raise ValueError unless the arrays describe a tree rooted at node 0 in insertion order."""
        n = len(self.tokens)
        if not (len(self.parents) == len(self.depths) == n) or n == 0 or self.parents[0] != -1 or self.depths[0] != 0:
            raise ValueError("a tree needs equal-length arrays and node 0 as its root")
        for i in range(1, n):
            p = self.parents[i]
            if not 0 <= p < i or self.depths[i] != self.depths[p] + 1:
                raise ValueError(f"node {i}: parent {p} must come before it, one level up")
        for i in range(n):
            toks = [self.tokens[c] for c in self.children(i)]
            if len(set(toks)) != len(toks):
                raise ValueError(f"node {i} has two children with the same token")


def grow(root: int, depth: int, budget: int, candidates: Callable[[int, int, int], Candidates]) -> Tree:
    """The tree of the ``budget`` most probable paths (best first) of at most ``depth`` drafts after ``root``.

    ``candidates(d, node, token)``: the candidates at depth ``d`` (1-based) after ``node`` whose token is ``token``,
    best first; a drafter whose candidates are the same for every parent ignores the last two."""
    tree = Tree([root], [-1], [0], [1.0])
    if depth <= 0 or budget <= 0:
        return tree
    lists: dict[int, Candidates] = {}
    heap: list[tuple[float, int, int, int]] = []  # (-path probability, parent node, rank among its candidates, seq)
    seq = 0

    def push_child(parent: int, rank: int) -> None:
        nonlocal seq
        d = tree.depths[parent] + 1
        if d > depth:
            return
        if parent not in lists:
            lists[parent] = candidates(d, parent, tree.tokens[parent])
        cands = lists[parent]
        if rank < len(cands):
            heapq.heappush(heap, (-tree.probs[parent] * float(cands[rank][1]), parent, rank, seq))
            seq += 1

    push_child(0, 0)
    while heap and len(tree) - 1 < budget:
        neg, parent, rank, _ = heapq.heappop(heap)
        tok = int(lists[parent][rank][0])
        tree.tokens.append(tok)
        tree.parents.append(parent)
        tree.depths.append(tree.depths[parent] + 1)
        tree.probs.append(-neg)
        push_child(parent, rank + 1)          # its next sibling
        push_child(len(tree) - 1, 0)          # its best child
    return tree


def top_candidates(probs: np.ndarray, b: int) -> list[list[tuple[int, float]]]:
    """Per row of ``probs`` [depth, vocab]: the ``b`` most probable tokens with their probabilities, best first."""
    b = max(1, min(b, probs.shape[-1]))
    idx = np.argsort(-probs, axis=-1, kind="stable")[:, :b]
    return [[(int(t), float(row[t])) for t in ids] for row, ids in zip(probs, idx)]


def accept_greedy(tree: Tree, picks: Sequence[int]) -> list[int]:
    """The accepted path (node indices from the root) given the target's argmax ``picks`` at every node: each step
    goes to the child whose token is the argmax at the current node. The bonus is ``picks[path[-1]]``."""
    path = [0]
    kids = _children(tree)
    while True:
        nxt = next((c for c in kids[path[-1]] if tree.tokens[c] == picks[path[-1]]), None)
        if nxt is None:
            return path
        path.append(nxt)


def accept_sampled(tree: Tree, p: np.ndarray, rng: np.random.Generator) -> tuple[list[int], int]:
    """The accepted path and the next token at temperature: recursive rejection over siblings with point-mass
    proposals (the module's docstring), ``p`` [N, vocab] the target's distribution at every node."""
    path = [0]
    kids = _children(tree)
    while True:
        resid = np.array(p[path[-1]], dtype=np.float64)
        chosen = None
        for c in kids[path[-1]]:
            total = resid.sum()
            if total <= 0:
                break
            t = tree.tokens[c]
            if rng.random() < resid[t] / total:
                chosen = c
                break
            resid[t] = 0.0
        if chosen is None:
            total = resid.sum()
            resid = resid / total if total > 0 else p[path[-1]] / p[path[-1]].sum()
            return path, int(rng.choice(resid.size, p=resid))
        path.append(chosen)


def _children(tree: Tree) -> list[list[int]]:
    kids: list[list[int]] = [[] for _ in range(len(tree))]
    for i, par in enumerate(tree.parents):
        if par >= 0:
            kids[par].append(i)
    return kids
