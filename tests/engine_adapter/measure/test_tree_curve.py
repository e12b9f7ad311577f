"""The verify cost surface (``measure.tree_curve``): the shapes, a tree forward that is the tree verify (not a chain
over the same tokens), and the surface's points at each context."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from specscope.engine_adapter.cache.tree import Tree
from specscope.engine_adapter.decode.decoding import plain_generate
from specscope.engine_adapter.decode.records import tokens_of
from specscope.engine_adapter.measure.model_cost import model_cost
from specscope.engine_adapter.measure.tree_curve import (Shaped, measure_surface, shaped_trees, tree_point,
                                                         verify_forward)

CANDS = [[(100 * d + r, 0.1) for r in range(16)] for d in range(16)]
TOKENS = list(range(1, 18))


def test_shapes_by_budget():
    got = {(s.shape, s.width): s.tree for s in shaped_trees(TOKENS, CANDS, [2, 8])}
    assert sorted(got) == [("best-first", 3), ("best-first", 9), ("deep", 3), ("deep", 9), ("wide", 3), ("wide", 9)]
    # best first from the typical drafter's profile: budget 8 is 4 deep, 3, 3, 1, 1 nodes per depth
    assert got[("best-first", 9)].widths() == [3, 3, 1, 1]
    assert got[("wide", 9)].widths() == [8] and got[("wide", 9)].tokens[1:] == [r for r in range(8)]
    deep = got[("deep", 9)]
    assert deep.widths() == [1] * 8 and deep.tokens == TOKENS[:9]   # the chain's own tokens, verified as a tree
    assert got[("best-first", 9)].tokens[1] == 0 and got[("best-first", 9)].tokens[2] == 100  # rank-0 candidates


def test_bad_shapes_and_budgets():
    with pytest.raises(ValueError, match="unknown tree shape"):
        shaped_trees(TOKENS, CANDS, [2], ["bushy"])
    with pytest.raises(ValueError, match="needs 17 depths"):
        shaped_trees(TOKENS, CANDS, [17])
    with pytest.raises(ValueError):
        measure_surface(None, [[1, 2]], budgets=[0])


def test_a_wide_tree_forward_is_each_node_after_the_prompt(hybrid, prompt):
    """Every node of a one-level tree sees the prompt and the root only: its logits are a plain two-token forward's
    (a chain over the same tokens would see its earlier siblings and differ)."""
    model = hybrid.model
    root = tokens_of(plain_generate(model, prompt, 1))[0]
    kids = [5, 9, 13]
    tree = Tree([root, *kids], [-1, 0, 0, 0], [0, 1, 1, 1])
    item = Shaped("tree", "wide", 4, tree.tokens, tree)
    point = tree_point(model, prompt)
    tree_logits = np.array(verify_forward(point, item)[0])
    for i, k in enumerate(kids, start=1):
        alone = np.array(point.forward([root, k])[0, -1])
        np.testing.assert_allclose(tree_logits[i], alone, rtol=1e-4, atol=1e-4)
    chain = np.array(point.forward([root, *kids])[0])
    assert not np.allclose(chain[2], tree_logits[2], atol=1e-3)   # the control: a chain's node 2 sees node 1


@pytest.fixture(scope="module")
def surface(hybrid, prompt):
    return measure_surface(hybrid.model, [prompt], budgets=[2], positions=3, reps=1, block_reps=1)


def test_surface_points(surface, prompt):
    assert [c["context"] for c in surface["contexts"]] == [len(prompt)]
    assert surface["budgets"] == [2] and surface["shapes"] == ["best-first", "wide", "deep"] and surface["top_k"] == 4
    for at in surface["contexts"]:
        assert at["tree_refusal"] is None
        pts = at["points"]
        assert [(p["kind"], p["shape"], p["width"]) for p in pts] == [
            ("chain", "chain", 1), ("chain", "chain", 2), ("chain", "chain", 3),
            ("tree", "best-first", 3), ("tree", "wide", 3), ("tree", "deep", 3)]
        assert at["t_decode_ms"] == pts[0]["whole_ms"]
        # the block rulers at width 1 and at the trees' width only
        assert [("blocks" in p) for p in pts] == [True, False, True, True, True, True]
        for p in pts:
            assert p["whole_ms_min"] <= p["whole_ms"] <= p["whole_ms_max"]
            assert len(p["routes"]) == 8   # every MoE layer's distinct experts
        assert [p["depth"] for p in pts[3:]] == [2, 1, 2] and pts[4]["widths"] == [2]
        assert {"linear_attention", "full_attention", "moe"} <= set(pts[3]["blocks"])


def test_tree_state_traffic_in_the_floor(hybrid, prompt):
    """A tree's recurrent layers read and write one state per node: the linear-attention bytes grow by that."""
    cost = model_cost(hybrid.model)
    chain, tree = cost.forward(5, 40), cost.forward(5, 40, states=5)
    state = sum(b.state_bytes for b in cost.blocks if b.block_name == "linear_attention")
    assert state > 0
    assert tree["linear_attention"]["other_bytes"] - chain["linear_attention"]["other_bytes"] == 2 * 4 * state
    assert tree["moe"] == chain["moe"]
    mx.eval(mx.zeros(1))
