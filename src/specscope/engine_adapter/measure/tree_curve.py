"""The verify cost surface: one forward over a chain of n positions and over trees of nodes, by shape, at several
contexts, timed whole and per block, with the MoE routers' choices — what ``specscope roofline --tree`` measures.

At each context (a prefilled cache restored before every forward, ``verify_curve.VerifyPoint``):

- **chains**: n = 1..``positions``, the model's greedy continuation (as ``verify_curve.measure_curve``);
- **trees** of ``budget`` drafted nodes (the forward runs budget + 1 rows: the root, then the nodes), three shapes:

  - ``best-first``: grown by ``cache.tree.grow`` (path probability, best first, the rule a ``--tree-budget`` round
    uses) from a fixed *typical block drafter*: at every depth the same probabilities by rank, ``PROFILE`` (0.50,
    0.20, 0.10, …), whatever the parent, as a block drafter's (DFlash) per-position distributions are. The shape is
    then the same on every model and machine (budget 8: 4 deep, 3, 3, 1, 1 nodes per depth, as the trained demo's
    DFlash trees were), so surfaces compare; the
    tokens are the target's own rank-r candidates at each depth along its greedy continuation, so the routers see
    what a good drafter would propose. (Grown from the target's own probabilities instead, a random model's flat
    distributions give a one-level star: the ``wide`` shape.)
  - ``wide``: every node a child of the root (the top ``budget`` candidates at depth 1): the widest, shallowest tree
    — the Gated DeltaNet layers run one recurrence step;
  - ``deep``: the chain of the greedy continuation verified *as a tree* (one node per depth): the same tokens and
    rows as the chain of the same width, so against it this isolates what the tree machinery costs (the ancestor
    mask, every node's conv window, one recurrence step per depth, each from its parent's state).

  Each tree forward is the one a tree round runs (``cache.tree_verify``: a fresh ``TreeForward`` opened around it).

Repeats are interleaved over every point of a context (drift hits them alike); the per-block rulers
(``breakdown.measure_forward``, barrier-timed; ``skip``: the barrier-free estimates too) run at width 1 and every
tree width, for the chain and each shape, ``block_reps`` times. One untimed forward per point records the distinct
experts each MoE layer read (``verify_curve.recording_routes``).
"""

from __future__ import annotations

import statistics
import time
from typing import Callable, NamedTuple, Sequence

import mlx.core as mx
import numpy as np

from specscope.engine_adapter.cache.active import TREE
from specscope.engine_adapter.cache.tree import Candidates, Tree, grow, top_candidates
from specscope.engine_adapter.cache.tree_verify import TreeForward, install_tree, refusal
from specscope.engine_adapter.clock import ms_since
from specscope.engine_adapter.model.structure import classify

from .breakdown import measure_forward
from .records import PhaseBreakdown, SurfaceContextRaw, SurfacePoint, SurfaceRaw
from .tree_breakdown import TreeHooks
from .verify_curve import VerifyPoint, continuation, routes_at

SHAPES = ("best-first", "wide", "deep")
DEFAULT_BUDGETS = (2, 4, 8, 16)
MAX_BUDGET = 16
# a typical block drafter's probabilities by rank, the same at every depth (the best-first shape's; module docstring)
PROFILE = (0.50, 0.20, 0.10, 0.06, 0.04, 0.03, 0.02, 0.01)


class Shaped(NamedTuple):
    """One forward of the surface: a chain of ``width`` positions (``tree`` None) or a tree of ``width`` − 1 nodes."""
    kind: str          # "chain" | "tree"
    shape: str         # "chain", or one of SHAPES
    width: int         # rows of the forward: positions (chain), the root and the nodes (tree)
    tokens: list[int]
    tree: Tree | None


def depth_candidates(point: VerifyPoint, tokens: list[int], depth: int, b: int) -> list[list[tuple[int, float]]]:
    """The target's top ``b`` candidates (token, probability) at depths 1..``depth`` after ``tokens[0]`` along its
    greedy continuation ``tokens``: row d − 1 of one forward over ``tokens[:depth]``."""
    logits = point.forward(tokens[:depth])[0].astype(mx.float32)
    probs = mx.softmax(logits, axis=-1)
    point.restore()
    return top_candidates(np.array(probs), b)


def shaped_trees(tokens: Sequence[int], cands: Sequence[Candidates], budgets: Sequence[int],
                 shapes: Sequence[str] = SHAPES) -> list[Shaped]:
    """Every (shape, budget) tree after ``tokens[0]`` (the root): see the module's docstring."""
    out = []
    root = int(tokens[0])
    for b in budgets:
        if not 1 <= b <= min(len(cands), len(tokens) - 1):
            raise ValueError(f"a tree budget of {b} needs {b} depths of candidates and a continuation of {b + 1}")
        for s in shapes:
            if s == "best-first":
                t = grow(root, b, b, lambda d, node, tok: [(c, PROFILE[r]) for r, (c, _) in enumerate(cands[d - 1])
                                                           if r < len(PROFILE)])
            elif s == "wide":
                first = list(cands[0])[:b]
                if len(first) < b:
                    raise ValueError(f"a wide tree of {b} nodes needs {b} candidates at depth 1")
                t = Tree([root, *(int(c) for c, _ in first)], [-1] + [0] * b, [0] + [1] * b, [1.0] + [float(p) for _, p in first])
            elif s == "deep":
                t = Tree.chain(root, [int(x) for x in tokens[1:b + 1]])
            else:
                raise ValueError(f"unknown tree shape {s!r} (known: {', '.join(SHAPES)})")
            t.check()
            out.append(Shaped("tree", s, len(t), list(t.tokens), t))
    return out


def tree_point(model, context: list[int]) -> VerifyPoint:
    """A ``VerifyPoint`` whose caches take trees too (``install_tree``: no cost while no tree is open)."""
    point = VerifyPoint(model, context)
    if refusal(model, point.cache) is None:
        install_tree(model, point.cache)
    return point


def verify_forward(point: VerifyPoint, item: Shaped) -> mx.array:
    """One verify forward of ``item`` (the cache restored first), evaluated: its logits. A tree's is the one a tree
    round runs (a fresh ``TreeForward`` open around it; ``point`` from ``tree_point``)."""
    if item.tree is None:
        return point.forward(item.tokens)
    point.snapshot.restore()
    with TREE.open(TreeForward(item.tree, point.model, point.cache)):
        out = point.model(mx.array(item.tokens, dtype=mx.uint32)[None], cache=point.cache)
        mx.eval(out)
    return out


def _time_ms(point: VerifyPoint, item: Shaped) -> float:
    t0 = time.perf_counter()
    verify_forward(point, item)
    return ms_since(t0)


def _blocks(point: VerifyPoint, item: Shaped, skip: bool) -> PhaseBreakdown:
    hooks = TreeHooks(item.tree, point.model, point.cache) if item.tree is not None else None
    return measure_forward(point.model, point.cache, point.snapshot, item.tokens, reps=1, skip=skip, hooks=hooks)


def _point(item: Shaped, whole: list[float], rulers: list[PhaseBreakdown], routes) -> SurfacePoint:
    p: SurfacePoint = {"kind": item.kind, "shape": item.shape, "width": item.width,
                       "budget": item.width - 1 if item.tree is not None else None,
                       "depth": item.tree.depth if item.tree is not None else item.width - 1,
                       "widths": item.tree.widths() if item.tree is not None else [1] * (item.width - 1),
                       "whole_ms": statistics.median(whole), "whole_ms_min": min(whole), "whole_ms_max": max(whole),
                       "whole_ms_samples": whole}
    if rulers:
        present = sorted({c for r in rulers for c in r["blocks"]})
        p["blocks"] = {c: statistics.median([r["blocks"][c] for r in rulers if c in r["blocks"]]) for c in present}
        p["inter_block_ms"] = p["whole_ms"] - sum(p["blocks"].values())
        est = sorted({c for r in rulers for c in r.get("skip_estimates", {})})
        if est:
            p["skip_estimates"] = {c: statistics.median([r["skip_estimates"][c] + (p["whole_ms"] - r["whole_ms"])
                                                         for r in rulers if c in r.get("skip_estimates", {})])
                                   for c in est}
    if routes:
        p["routes"] = routes
    return p


def measure_at(model, context: list[int], budgets: Sequence[int], positions: int, reps: int, block_reps: int,
               skip: bool = False, shapes: Sequence[str] = SHAPES,
               progress: Callable[[str], None] = lambda m: None) -> SurfaceContextRaw:
    """The surface's points at the end of ``context``: chains 1..``positions``, and every shape at every budget
    (trees refused on this model: none, with the reason)."""
    depth = max(budgets, default=0)
    tokens = continuation(model, list(context), max(positions, depth + 1))
    progress(f"prefilling {len(context):,} tokens")
    point = tree_point(model, context)
    why = refusal(model, point.cache) if budgets else None
    items = [Shaped("chain", "chain", n, tokens[:n], None) for n in range(1, positions + 1)]
    if budgets and why is None:
        cands = depth_candidates(point, tokens, depth, depth)
        items += shaped_trees(tokens, cands, budgets, shapes)
    ruled = {1} | {it.width for it in items if it.tree is not None}
    moe = bool(classify(model).moe_blocks())
    progress(f"{len(items)} forwards at {len(context):,} tokens: routers, warm-up")
    routes = [routes_at(point, it.tokens, run=lambda it=it: verify_forward(point, it)) if moe else {} for it in items]
    for it in items:
        verify_forward(point, it)
    whole: list[list[float]] = [[] for _ in items]
    rulers: list[list[PhaseBreakdown]] = [[] for _ in items]
    for rep in range(max(reps, block_reps)):
        progress(f"repeat {rep + 1}/{max(reps, block_reps)} at {len(context):,} tokens")
        for i, it in enumerate(items):
            if rep < reps:
                whole[i].append(_time_ms(point, it))
            if rep < block_reps and it.width in ruled:
                rulers[i].append(_blocks(point, it, skip))
    point.restore()
    return {"context": len(context), "tokens": tokens, "t_decode_ms": statistics.median(whole[0]),
            "points": [_point(it, w, r, rt) for it, w, r, rt in zip(items, whole, rulers, routes)],
            "tree_refusal": why}


def measure_surface(model, contexts: Sequence[list[int]], budgets: Sequence[int] = DEFAULT_BUDGETS, positions: int = 17,
                    reps: int = 3, block_reps: int = 1, skip: bool = False, shapes: Sequence[str] = SHAPES,
                    progress: Callable[[str], None] = lambda m: None) -> SurfaceRaw:
    """The surface at the end of every context (each a token list: the context and the prompt after it)."""
    if not contexts:
        raise ValueError("the surface needs at least one context")
    if any(not 1 <= b <= MAX_BUDGET for b in budgets):
        raise ValueError(f"tree budgets must be 1..{MAX_BUDGET}")
    if not 1 <= positions <= MAX_BUDGET + 1 or reps < 1 or block_reps < 0:
        raise ValueError(f"positions must be 1..{MAX_BUDGET + 1}, reps >= 1, block_reps >= 0")
    s = classify(model)
    at = [measure_at(model, c, sorted(set(budgets)), positions, reps, block_reps, skip, shapes, progress)
          for c in contexts]
    return {"contexts": at, "budgets": sorted(set(budgets)), "shapes": list(shapes), "positions": positions,
            "reps": reps, "block_reps": block_reps, "labels": s.labels(),
            "top_k": max((b.top_k for b in s.moe_blocks() if b.top_k), default=None)}
