"""``specscope check``: is a tree verify exact on this model? (``--tree-budget``; ``cache.tree_verify``)

One tree with rejected branches (9 nodes, 4 levels, siblings at every level, the kept path through a later sibling so
the caches must be compacted, not trimmed) is verified in one forward after the check prompt. Each node's logits are
compared with a plain forward along that node's path from the same prefix; then the path is kept and the next logits
compared with those of a fresh cache fed the prompt and the path. The same comparison runs once more with a broken
branch state, the negative control: every Gated DeltaNet node at depth 2 and below runs from another node's parent
state (the conv windows stay right), which the comparison must catch, or the check has no power.
"""

from __future__ import annotations

import time

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
