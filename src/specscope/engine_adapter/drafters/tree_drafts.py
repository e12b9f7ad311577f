"""Draft trees from drafters' per-position distributions (``cache.tree.grow``): a block's, or a chain's top-b a step.

- **DFlash**: one drafter forward over the block ``[last, mask × depth]``; position ``i``'s distribution is the
  softmax of its logits, the same whatever the parent (the block is drafted in parallel). The top ``budget`` tokens a
  position are the candidates: a tree of ``budget`` nodes never needs more.
- **DFlash2**: the same forward, then the selector's top-K candidates a position; a candidate's probability is the
  selector's q = softmax(score) over the K, and its score depends on the token before it (``score(c) = logit(c) +
  <A[prev] * proj(h), B[c]>``), so a node's children are ranked given the node's own token: for every position after
  the first, all K × K (previous, next) scores are computed in the one sync the tree is built after.

- **The MTP head and a draft model** (chain drafters): the drafter drafts its greedy chain of ``depth`` tokens as a chain
  round does (each step conditioned on the chain so far) and keeps each step's top-``budget`` distribution (the
  softmax of the step's logits), the chain's own token first. Every node at depth ``d`` takes position ``d``'s list:
  a node off the chain gets the candidates drafted after the chain's prefix, not after its own path — the same
  approximation DFlash's trees make (a position's candidates independent of the parent). Verification stays exact,
  so greedy output is plain decoding's whatever the tree; only acceptance pays for the approximation. After the
  round the drafter keeps its state for the common prefix of the accepted path with its chain and re-feeds the rest
  of the path (``DraftModelDrafter.update``; the MTP head reads the path's hidden states as a chain round's).

All build the tree on the host after one sync (building the tree is work, timed as drafting).
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np

from specscope.engine_adapter.cache.tree import Tree, grow, top_candidates


def dflash_candidates(drafter, last_token: int, depth: int, b: int) -> list[list[tuple[int, float]]]:
    """A DFlash drafter's candidates a block position (1..depth): the top ``b`` tokens of the position's softmax with
    their probabilities, best first — the same whatever the parent (what a tree is grown from, and what the
    acceptance trace records for trees)."""
    probs = mx.softmax(drafter.block_logits(last_token, depth).astype(mx.float32), axis=-1)
    b = min(b, probs.shape[-1])
    # the top b by a partition, then only those b sorted: a full sort of every position's vocabulary cost 12 ms of a
    # ~60 ms tree draft on the demo (15 × 4096, CPU), the partition 2 ms
    part = mx.argpartition(-probs, b - 1, axis=-1)[:, :b] if b < probs.shape[-1] else mx.argsort(-probs, axis=-1)
    pv = mx.take_along_axis(probs, part, axis=-1)
    order = mx.argsort(-pv, axis=-1)
    top, vals = mx.take_along_axis(part, order, axis=-1), mx.take_along_axis(pv, order, axis=-1)
    mx.eval(top, vals)
    return [list(zip(t, v)) for t, v in zip(np.array(top).tolist(), np.array(vals).tolist())]


def chain_candidates(step_logits: list[mx.array], chain: list[mx.array], b: int) -> list[list[tuple[int, float]]]:
    """A chain drafter's candidates a position: the top ``b`` tokens of each step's softmax with their probabilities,
    best first, the chain's own token (the step's argmax, ``chain``) first among equals, other ties by token id.
    ``step_logits``: each step's logits [vocab] (lazy); one sync."""
    if not step_logits:
        return []
    probs = mx.softmax(mx.stack([x.reshape(-1) for x in step_logits]).astype(mx.float32), axis=-1)
    b = max(1, min(b, probs.shape[-1]))
    top = mx.argpartition(-probs, b - 1, axis=-1)[:, :b] if b < probs.shape[-1] else \
        mx.broadcast_to(mx.arange(probs.shape[-1]), probs.shape)
    toks = mx.concatenate([x.reshape(-1) for x in chain]).astype(mx.int32)
    vals, own = mx.take_along_axis(probs, top, axis=-1), mx.take_along_axis(probs, toks[:, None], axis=-1)[:, 0]
    mx.eval(top, vals, own, toks)
    out = []
    for ids, ps, t, pt in zip(np.array(top).tolist(), np.array(vals).tolist(), np.array(toks).tolist(),
                              np.array(own).tolist()):
        lst = dict(zip(ids, ps))
        if t not in lst:  # a tie at the partition's edge left the argmax out: it takes the last place
            lst.pop(min(lst, key=lambda x: (lst[x], -x)))
            lst[t] = pt
        out.append(sorted(lst.items(), key=lambda kv: (-kv[1], kv[0] != t, kv[0])))
    return out


def chain_tree(last_token: int, depth: int, budget: int, lists: list[list[tuple[int, float]]]) -> Tree:
    """A chain drafter's tree: grown best first from its per-position lists, every node at depth ``d`` taking
    position ``d``'s list (the module's docstring: a node off the chain does not get candidates of its own)."""
    return grow(last_token, min(depth, len(lists)), budget, lambda d, node, tok: lists[d - 1])


def common_prefix(path: list[int], chain: list[int]) -> int:
    """How many leading tokens of the accepted ``path`` are the chain's (the drafter's state holds those)."""
    m = 0
    while m < len(path) and m < len(chain) and path[m] == chain[m]:
        m += 1
    return m


def dflash_tree(drafter, last_token: int, depth: int, budget: int) -> Tree:
    """A DFlash drafter's tree: per-position softmax, top ``budget`` a position, grown best first."""
    if depth <= 0 or budget <= 0:
        return Tree([last_token], [-1], [0], [1.0])
    lists = dflash_candidates(drafter, last_token, depth, budget)
    return grow(last_token, depth, budget, lambda d, node, tok: lists[d - 1])


def dflash2_tree(drafter, last_token: int, depth: int, budget: int) -> Tree:
    """A DFlash2 drafter's tree: the selector's q over its top-K, each node's children ranked given its token."""
    if depth <= 0 or budget <= 0:
        return Tree([last_token], [-1], [0], [1.0])
    C, Q = dflash2_candidates(drafter, last_token, depth)
    row_of = [{int(t): j for j, t in enumerate(C[i])} for i in range(depth)]

    def candidates(d: int, node: int, tok: int) -> list[tuple[int, float]]:
        i = d - 1
        row = 0 if i == 0 else row_of[i - 1][tok]
        picks = top_candidates(Q[i][row:row + 1], budget)[0]  # (index among the K, q), best first
        return [(int(C[i][j]), p) for j, p in picks]

    return grow(last_token, depth, budget, candidates)


def dflash2_candidates(drafter, last_token: int, depth: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """A DFlash2 drafter's candidates a block position, ``C`` [depth, K] (token ids), and the selector's q over them
    given the token before: ``Q[0]`` [1, K] after ``last_token``, ``Q[i]`` [K, K] (row: the index of the previous
    position's candidate) — what its trees are grown from, and what the acceptance trace records for trees."""
    sel = drafter.model.candidate_selector
    h, logits = drafter.block_states(last_token, depth)
    cands, unary, proj, succ = sel.candidates(h, logits)
    first = sel.scores(unary[0], proj[0], succ[0], mx.array([last_token], dtype=mx.uint32))  # [K]
    rest = []
    for i in range(1, depth):  # [K previous, K next]: every candidate of position i - 1 as the token before
        a = sel.predecessor_codebook[cands[i - 1]] * proj[i][None]                     # [K, rank]
        rest.append(unary[i][None] + (a[:, None, :] * succ[i][None]).sum(axis=-1))      # [K, K]
    q_first = mx.softmax(first.astype(mx.float32), axis=-1)
    q_rest = [mx.softmax(s.astype(mx.float32), axis=-1) for s in rest]
    mx.eval(cands, q_first, *q_rest)
    C = np.array(cands)
    Q = [np.array(q_first)[None]] + [np.array(q) for q in q_rest]   # Q[i][row of the previous token, candidate]
    return C, Q
