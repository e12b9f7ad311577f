"""The per-block breakdown of a tree verify: ``breakdown.measure_forward``'s two rulers (and skipped blocks) over one
forward of a tree's nodes, with the tree open around every forward (``TreeHooks``), so each forward is the tree verify
a ``--tree-budget`` round runs (ancestor mask, per-node positions, Gated DeltaNet nodes from their parents' states).
The surfaces that draw it (the cost over nodes and shapes) are not here yet."""

from __future__ import annotations

from contextlib import ExitStack

from specscope.engine_adapter.cache.active import TREE
from specscope.engine_adapter.cache.tree import Tree
from specscope.engine_adapter.cache.tree_verify import TreeForward, install_tree
from specscope.engine_adapter.measure.breakdown import RunHooks, at_prompt_end, measure_forward

from .records import PhaseBreakdown


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
