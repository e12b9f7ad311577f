"""The per-block breakdown of a tree verify: ``breakdown.measure_forward``'s two rulers (and skipped blocks) over one
forward of a tree's nodes, with the tree open around every forward (``TreeHooks``), so each forward is the tree verify
a ``--tree-budget`` round runs (ancestor mask, per-node positions, Gated DeltaNet nodes from their parents' states).
A tree run's own breakdown (``measure_tree_breakdown``) times the run's drafter's tree after the case's prompt.
The surfaces that draw the cost over nodes and shapes are not here yet."""

from __future__ import annotations

from contextlib import ExitStack

import mlx.core as mx
from mlx_lm.models.cache import make_prompt_cache

from specscope.engine_adapter.cache.active import TREE
from specscope.engine_adapter.cache.hidden import install_tap, tapping
from specscope.engine_adapter.cache.tree import Tree
from specscope.engine_adapter.cache.tree_verify import TreeForward, install_tree
from specscope.engine_adapter.decode.decoding import prefill
from specscope.engine_adapter.measure.breakdown import RunHooks, at_prompt_end, measure_forward, verify_to_decode
from specscope.engine_adapter.model.structure import classify

from .records import BreakdownRecord, PhaseBreakdown


class TreeHooks(RunHooks):
    """Opens a fresh ``TreeForward`` for every forward (after the cache is restored: the prefix is the prompt)."""

    def __init__(self, tree: Tree, model, cache: list):
        self.tree, self.model, self.cache = tree, model, cache
        self._open = ExitStack()

    def before(self, phase: str, skip: str | None) -> None:
        self._open.enter_context(TREE.open(TreeForward(self.tree, self.model, self.cache)))

    def after(self, phase: str) -> None:
        self._open.close()


def measure_tree_verify(model, prompt: list[int], tree: Tree, reps: int = 3, skip: bool = True) -> PhaseBreakdown:
    """The breakdown of one tree verify after ``prompt`` (``tree``'s root: the token after it)."""
    cache, snapshot, _ = at_prompt_end(model, prompt, [], 0)
    install_tree(model, cache)
    return measure_forward(model, cache, snapshot, tree.tokens, reps, skip, hooks=TreeHooks(tree, model, cache))


def drafted_tree(model, drafter, prompt: list[int], root: int, k: int, budget: int) -> Tree:
    """The run's drafter's own tree after ``prompt`` (root: the token after it), budget and depth limit as the run's:
    a tree shaped like the rounds'."""
    needs_hidden = drafter.needs_hidden
    if needs_hidden:
        install_tap(model)
    cache = make_prompt_cache(model)
    with tapping(needs_hidden) as tap:
        mx.eval(prefill(model, cache, list(prompt)))
        hidden = tap.hidden(getattr(drafter, "hidden_mode", "post-norm")) if tap else None
    drafter.begin(list(prompt), root, hidden=hidden)
    return drafter.draft_tree(root, k, budget)


def measure_tree_breakdown(model, drafter, prompt: list[int], continuation: list[int], k: int, budget: int,
                           reps: int = 3, skip: bool = True) -> BreakdownRecord:
    """A tree run's breakdown: the decode step as ``measure_breakdown``'s, the verify the tree verify of the run's
    drafter's own tree after ``prompt`` (its nodes + 1 positions), with that tree's shape."""
    cache, cp, toks = at_prompt_end(model, prompt, continuation, k)
    tree = drafted_tree(model, drafter, prompt, toks[0], k, budget)
    decode = measure_forward(model, cache, cp, toks[:1], reps, skip)
    install_tree(model, cache)
    verify = measure_forward(model, cache, cp, tree.tokens, reps, skip, hooks=TreeHooks(tree, model, cache))
    return {"decode": decode, "verify": verify, "ratios": verify_to_decode(decode, verify),
            "labels": classify(model).labels(),
            "tree": {"budget": budget, "nodes": len(tree) - 1, "depth": tree.depth, "widths": tree.widths()}}
