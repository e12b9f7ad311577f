"""Speculative decoding with a tree of drafts (``--tree-budget N``): a round drafts a tree of at most N nodes
(``Drafter.draft_tree``, best first by path probability), verifies every node in one forward
(``cache.tree_verify``), keeps the longest accepted path plus the target's next token, and leaves every cache as plain
decoding along that path would (``TreeForward.keep``).

The same one clock as ``decoding``: every record times the engine's own work from the resume to its value. A round
syncs after drafting (the tree is built on the host from the drafter's distributions: building it is drafting) and
after the verify (acceptance reads the target's picks); an instrumented round also times the cache fix-up apart, an
end-to-end round leaves it lazy for the next round's sync, as a chain's rollback.

Greedy: a node is accepted when its token is the target's argmax at its parent (the same argmax of log-probabilities
as ``Sampling.verify``), so the output is plain decoding's. At temperature: recursive rejection over siblings
(``tree.accept_sampled``), lossless.
"""

from __future__ import annotations

from typing import Iterator

import mlx.core as mx
import numpy as np
from mlx_lm.models.cache import make_prompt_cache

from specscope.errors import SpecscopeError
from specscope.events import TreeShape
from specscope.engine_adapter.clock import now_ms
from specscope.engine_adapter.cache.hidden import install_tap, tapping
from specscope.engine_adapter.cache.tree_verify import install_tree, refusal, verify_tree
from specscope.engine_adapter.decode.decoding import ROUND_KINDS, prefill
from specscope.engine_adapter.decode.records import PrefillRecord, RoundRecord
from specscope.engine_adapter.decode.sampling import Sampling
from specscope.engine_adapter.cache.tree import Tree, accept_greedy, accept_sampled
from specscope.engine_adapter.drafters.drafter import Draft, Drafter
from specscope.engine_adapter.mlx_types import token, values


def tree_refusal(model, drafter: Drafter | None = None) -> str | None:
    """Why ``--tree-budget`` cannot run on this model with this drafter (None: it can)."""
    if drafter is not None and not drafter.drafts_trees:
        return (f"the {drafter.kind} drafter gives no per-position distributions to grow a tree from (trees: "
                "the dflash and dflash2 drafters, the MTP head and a draft model)")
    why = refusal(model, make_prompt_cache(model))
    return None if why is None else f"a tree verify cannot be exact on this model: {why}"


def accept(tree: Tree, logits: mx.array, sampling: Sampling, position: int) -> tuple[list[int], int]:
    """The accepted path (node indices from the root) and the next token, from the target's logits at every node."""
    if sampling.greedy:
        lp = logits - mx.logsumexp(logits, axis=-1, keepdims=True)  # as Sampling.verify: argmax of log-probabilities
        picks = values(mx.argmax(lp, axis=-1))
        path = accept_greedy(tree, picks)
        return path, int(picks[path[-1]])
    p = np.array(sampling.probs(logits), dtype=np.float64)
    return accept_sampled(tree, p, np.random.default_rng([sampling.seed, position]))


def shape_of(tree: Tree, path: list[int], budget: int, max_depth: int) -> TreeShape:
    return {"nodes": len(tree) - 1, "depth": tree.depth, "widths": tree.widths(), "parents": tree.parents[1:],
            "path": path[1:], "budget": budget, "max_depth": max_depth}


def tree_speculative_generate(model, prompt: list[int], drafter: Drafter, depth: int, budget: int, max_tokens: int,
                              sampling: Sampling | None = None,
                              round_kinds: str = "instrumented") -> Iterator[PrefillRecord | RoundRecord]:
    """Speculative decoding with trees of at most ``budget`` drafted nodes and ``depth`` levels a round."""
    sampling = sampling or Sampling()
    if round_kinds not in ROUND_KINDS:
        raise ValueError(f"round_kinds must be one of {', '.join(ROUND_KINDS)}")
    if budget < 1:
        raise ValueError("a tree round needs a budget of at least one node")
    why = tree_refusal(model, drafter)
    if why:
        raise SpecscopeError(f"--tree-budget: {why}")
    hidden_mode = getattr(drafter, "hidden_mode", "post-norm")
    if drafter.needs_hidden:
        install_tap(model)
    cache = make_prompt_cache(model)
    install_tree(model, cache)
    t0 = now_ms()
    with tapping(drafter.needs_hidden) as tap:
        last = token(sampling.sample(prefill(model, cache, prompt), 0))
    drafter.begin(list(prompt), last, hidden=tap.hidden(hidden_mode) if tap else None)
    yield PrefillRecord(event="prefill", n_prompt=len(prompt), token=last, ms=now_ms() - t0)
    emitted, r = 1, 0
    while emitted < max_tokens:
        e2e = round_kinds == "end_to_end" or (round_kinds == "alternate" and r % 2 == 1)
        t_start = now_ms()
        d = min(depth, max_tokens - emitted - (0 if drafter.drafts_to_the_end else 1))
        tree = drafter.draft_tree(last, d, budget)
        t_drafted = now_ms()
        with tapping(drafter.needs_hidden) as tap:
            logits, tf = verify_tree(model, cache, tree)
        path, bonus = accept(tree, logits, sampling, emitted)  # one sync: the verify forward and the target's picks
        t_verified = now_ms()
        touched = tf.keep(path)
        accepted = len(path) - 1
        next_e2e = round_kinds == "end_to_end" and emitted + accepted + 1 < max_tokens
        if touched and not next_e2e:
            mx.eval(touched)
        t_kept = now_ms()
        kept = [tree.tokens[i] for i in path[1:]]
        out = (kept + [bonus])[:max_tokens - emitted]
        if len(out) > accepted:  # a cut bonus ends the output: nothing follows for the drafter to update for
            hidden = mx.take(tap.hidden(hidden_mode), mx.array(path, dtype=mx.int32), axis=0) if tap else None
            drafter.update(accepted, Draft(kept), out, hidden=hidden)
        last = out[-1]
        emitted += len(out)
        t_end = now_ms()
        yield RoundRecord(event="round", index=r, drafted=tree.drafted, accepted=accepted, emitted=out,
                          draft_ms=None if e2e else t_drafted - t_start,
                          verify_ms=None if e2e else t_verified - t_drafted,
                          rollback_ms=None if e2e else t_kept - t_verified,
                          ms=t_end - t_start, extra={}, kind="end_to_end" if e2e else "instrumented",
                          tree=shape_of(tree, path, budget, d))
        r += 1
