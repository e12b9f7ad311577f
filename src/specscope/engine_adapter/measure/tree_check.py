"""``specscope check``: is a tree verify exact on this model? (``--tree-budget``; ``cache.tree_verify``)

One tree with rejected branches (9 nodes, 4 levels, siblings at every level, the kept path through a later sibling so
the caches must be compacted, not trimmed) is verified in one forward after the check prompt. Each node's logits are
compared with a plain forward along that node's path from the same prefix; then the path is kept and the next logits
compared with those of a fresh cache fed the prompt and the path. The same comparison runs once more with a broken
branch state, the negative control: every Gated DeltaNet node at depth 2 and below runs from another node's parent
state (the conv windows stay right), which the comparison must catch, or the check has no power.

A chain drafter's trees (the MTP head, a draft model: ``drafter_tree_state``): after a tree round whose kept path
leaves the drafter's chain, the drafter must hold exactly the true prefix: its next candidate lists are compared with
a fresh drafter's begun on that prefix; the negative control compares them with a fresh drafter's on the chain's
prefix instead (what a drafter left on its chain would hold), which must differ.
"""

from __future__ import annotations

import time
from typing import TypedDict

import mlx.core as mx
from mlx_lm.models.cache import make_prompt_cache

from specscope.engine_adapter.cache.capture import is_hybrid
from specscope.engine_adapter.cache.rollback import CacheSnapshot
from specscope.engine_adapter.cache.tree_verify import TreeForward, install_tree, verify_tree
from specscope.engine_adapter.cache.tree import Tree
from specscope.engine_adapter.mlx_types import scalar

from .records import TreeExactnessCheck

PARENTS = [-1, 0, 0, 1, 1, 2, 3, 3, 6]   # depths 0, 1, 1, 2, 2, 2, 3, 3, 4
KEPT = [0, 1, 3, 6, 8]                   # skips nodes 2, 4, 5 and 7: the caches must be compacted, not trimmed
CONTROL = "every Gated DeltaNet node below depth 1 run from another node's parent state"


def check_tree(prompt: list[int], root: int, vocab: int) -> Tree:
    """The check's tree after ``root``: drafted tokens that differ from each other (any tokens exercise the path)."""
    n = len(PARENTS)
    tokens = [root] + [(prompt[(7 * j + 3) % len(prompt)] + 11 * (j + 1)) % vocab for j in range(n - 1)]
    depths = [0] * n
    for i in range(1, n):
        depths[i] = depths[PARENTS[i]] + 1
    for i in range(1, n):  # siblings must differ: shift a repeat until it is new among its siblings
        while tokens[i] in [tokens[j] for j in range(1, i) if PARENTS[j] == PARENTS[i]]:
            tokens[i] = (tokens[i] + 1) % vocab
    tree = Tree(tokens, list(PARENTS), depths, [1.0] * n)
    tree.check()
    return tree


def _rel(got: mx.array, want: mx.array) -> float:
    got, want = got.astype(mx.float32), want.astype(mx.float32)
    scale = max(1.0, float(scalar(mx.max(mx.abs(want)))))
    return float(scalar(mx.max(mx.abs(got - want)))) / scale


def misparented(tf: TreeForward) -> TreeForward:
    """The negative control: below depth 1, each level's parent states rotated by one row (a node then starts from
    another node's parent state wherever a level has more than one parent)."""
    for d in range(2, len(tf.levels)):
        nodes, rows = tf.levels[d]
        assert rows is not None
        tf.levels[d] = (nodes, mx.concatenate([rows[1:], rows[:1]]))
    return tf


def _node_errors(model, tree: Tree, logits: mx.array, ref, ref_snap: CacheSnapshot) -> list[float]:
    errs = []
    for i in range(len(tree)):
        ref_snap.restore()
        seq = [tree.tokens[j] for j in tree.path(i)]
        want = model(mx.array(seq, dtype=mx.uint32)[None], cache=ref)[0, -1]
        errs.append(_rel(logits[i], want))
    return errs


def tree_exactness(model, prompt: list[int], vocab: int | None, tolerance: float) -> TreeExactnessCheck:
    """The tree check (the module's docstring); ``tolerance`` as the rollback check's."""
    from specscope.engine_adapter.decode.decoding import prefill

    t0 = time.perf_counter()
    cache, ref = make_prompt_cache(model), make_prompt_cache(model)
    install_tree(model, cache)
    first = prefill(model, cache, prompt)
    root, vocab = int(scalar(mx.argmax(first))), vocab or int(first.shape[-1])
    mx.eval(prefill(model, ref, prompt))
    mx.eval([c.state for c in cache])
    snap, ref_snap = CacheSnapshot(cache), CacheSnapshot(ref)
    tree = check_tree(prompt, root, vocab)
    logits, tf = verify_tree(model, cache, tree)
    mx.eval(logits)
    errs = _node_errors(model, tree, logits, ref, ref_snap)
    mx.eval(tf.keep(KEPT))
    probe = prompt[0]
    got = model(mx.array([[probe]], dtype=mx.uint32), cache=cache)[0, -1]
    ref_snap.restore()
    want = model(mx.array([tree.tokens[j] for j in KEPT] + [probe], dtype=mx.uint32)[None], cache=ref)[0, -1]
    kept = _rel(got, want)
    control_err = caught = None
    if is_hybrid(model):
        snap.restore()
        bad, _ = verify_tree(model, cache, tree, forward=misparented(TreeForward(tree, model, cache)))
        mx.eval(bad)
        control_err = max(_node_errors(model, tree, bad, ref, ref_snap))
        caught = control_err > tolerance
    worst = max(errs)
    return {"nodes": len(tree) - 1, "depth": tree.depth, "path": KEPT[1:], "node_errors": errs,
            "max_relative_error": worst, "kept_relative_error": kept,
            "exact": worst <= tolerance and kept <= tolerance, "control": CONTROL,
            "control_relative_error": control_err, "control_caught": caught, "tolerance": tolerance,
            "seconds": time.perf_counter() - t0}


def describe_check(t: TreeExactnessCheck) -> str:
    """One line for ``check``'s report."""
    ctl = ("no Gated DeltaNet layer to break" if t["control_caught"] is None else
           f"negative control ({t['control']}) {'caught' if t['control_caught'] else 'NOT CAUGHT'} at "
           f"{t['control_relative_error']:.2g}")
    return (f"{'exact' if t['exact'] else 'NOT EXACT'}: {t['nodes']} nodes, depth {t['depth']}, rejected branches; "
            f"max relative logit error {t['max_relative_error']:.2g} per node, {t['kept_relative_error']:.2g} after "
            f"keeping a path (tolerance {t['tolerance']:g}); {ctl}; {t['seconds']:.1f} s")


class DrafterTreeCheck(TypedDict):
    """``drafter_tree_state``: a chain drafter after a tree round through a sibling of its chain, against a fresh
    drafter on the true prefix (and, the negative control, on the chain's prefix)."""
    drafter: str
    path_depth: int                  # the kept path's length
    off_chain_at: int                # where it leaves the chain (1-based depth)
    max_probability_error: float     # the next candidate lists' probabilities, against the fresh drafter's
    same_tokens: bool
    exact: bool
    control_probability_error: float | None  # against a fresh drafter on the chain's prefix (None: tokens differ)
    control_caught: bool
    tolerance: float
    seconds: float


def _after(model, cache, tokens: list[int], needs_hidden: bool, mode):
    """The target's next token after ``tokens`` (fed on ``cache``) and the hidden states along them (or None)."""
    from specscope.engine_adapter.cache.hidden import tapping

    with tapping(needs_hidden) as tap:
        logits = model(mx.array(tokens, dtype=mx.uint32)[None], cache=cache)[0, -1]
        hidden = tap.hidden(mode) if tap else None
        mx.eval(logits, *([hidden] if hidden is not None else []))
    return int(scalar(mx.argmax(logits))), hidden


def _compare(a, b) -> tuple[bool, float]:
    same = [[t for t, _ in x] for x in a] == [[t for t, _ in x] for x in b]
    err = max([0.0] + [abs(p - q) for x, y in zip(a, b) for (_, p), (_, q) in zip(x, y)])
    return same, err


def drafter_tree_state(model, make_drafter, prompt: list[int], tolerance: float, depth: int = 4,
                       budget: int = 8) -> DrafterTreeCheck:
    """A chain drafter (``make_drafter()``: a fresh one) after one tree round that keeps the path to the tree's
    deepest node off its chain (the module's docstring)."""
    from specscope.engine_adapter.cache.hidden import install_tap
    from specscope.engine_adapter.drafters.drafter import Draft
    from specscope.engine_adapter.drafters.tree_drafts import common_prefix

    t0 = time.perf_counter()
    d = make_drafter()
    needs, mode = d.needs_hidden, getattr(d, "hidden_mode", "post-norm")
    if needs:
        install_tap(model)
    cache = make_prompt_cache(model)
    root, hidden = _after(model, cache, list(prompt), needs, mode)
    snap = CacheSnapshot(cache)
    d.begin(list(prompt), root, hidden=hidden)
    tree = d.draft_tree(root, depth, budget)
    chain = [tree.tokens[i] for i in _first_children(tree)]  # per-position lists: the chain is never shorter
    paths = [[tree.tokens[j] for j in tree.path(i)[1:]] for i in range(1, len(tree))]
    off = [p for p in paths if common_prefix(p, chain) < len(p)]
    if not off:
        raise RuntimeError("the drafter's tree holds its chain only: no path leaves it")
    kept = max(off, key=len)
    bonus, h_path = _after(model, cache, [root] + kept, needs, mode)
    d.update(len(kept), Draft(kept), kept + [bonus], hidden=h_path)
    mine = d.position_candidates(bonus, depth, 4)

    def fresh_on(path: list[int], nxt: int):
        snap.restore()
        _, h = _after(model, cache, [root] + path, needs, mode) if needs else (None, None)
        ref = make_drafter()
        ref.begin(list(prompt) + [root] + path, nxt,
                  hidden=mx.concatenate([hidden, h]) if hidden is not None and h is not None else None)
        return ref.position_candidates(nxt, depth, 4)

    same, err = _compare(mine, fresh_on(kept, bonus))
    c_same, c_err = _compare(mine, fresh_on(chain[:len(kept)], bonus))
    return {"drafter": d.kind, "path_depth": len(kept), "off_chain_at": common_prefix(kept, chain) + 1,
            "max_probability_error": err, "same_tokens": same, "exact": same and err <= tolerance,
            "control_probability_error": c_err if c_same else None, "control_caught": not c_same or c_err > tolerance,
            "tolerance": tolerance, "seconds": time.perf_counter() - t0}


def _first_children(tree: Tree) -> list[int]:
    """The chain's nodes: from the root, each node's first child (the chain's token is first in every list)."""
    out, kids = [], tree.children(0)
    while kids:
        out.append(kids[0])
        kids = tree.children(kids[0])
    return out


def describe_drafter_check(t: DrafterTreeCheck) -> str:
    """One line for ``check``'s report."""
    return (f"{'exact' if t['exact'] else 'NOT EXACT'}: after a tree round whose {t['path_depth']}-token path leaves "
            f"the chain at depth {t['off_chain_at']}, the {t['drafter']} drafter's next candidates "
            f"{'equal' if t['same_tokens'] else 'DIFFER FROM'} a fresh drafter's on the true prefix (probability error "
            f"{t['max_probability_error']:.2g}, tolerance {t['tolerance']:g}); negative control (a fresh drafter on the "
            f"chain's prefix) {'caught' if t['control_caught'] else 'NOT CAUGHT'}; {t['seconds']:.1f} s")
