"""A tree run's components timed apart (``measure.tree_components``) and its breakdown (``tree_breakdown``) time the
tree the rounds verify: at the first round's point the timed tree is the first round's tree, node for node."""

from __future__ import annotations

import pytest

from specscope.engine_adapter.decode.decoding import plain_generate
from specscope.engine_adapter.decode.records import tokens_of
from specscope.engine_adapter.decode.sampling import Sampling
from specscope.engine_adapter.decode.tree_decoding import tree_speculative_generate
from specscope.engine_adapter.drafters.dflash_loader import load_dflash_drafter
from specscope.engine_adapter.measure.tree_breakdown import measure_tree_breakdown
from specscope.engine_adapter.measure.tree_components import _path_of, cut, measure_tree_components, what_if_budgets

N, BUDGET = 16, 8


@pytest.fixture(scope="module")
def trained():
    from specscope.engine_adapter.model.loader import load_model
    from specscope.engine_adapter.model.shipped import trained_demo_path

    path, folder = trained_demo_path("hybrid"), trained_demo_path("dflash")
    if path is None or folder is None:
        pytest.skip("this install has no trained demo with its DFlash drafter")
    lm = load_model(path, dtype="float32")
    prompt = lm.encode("def fibonacci(n):\n")
    return lm, folder, prompt, tokens_of(list(plain_generate(lm.model, prompt, N)))


@pytest.mark.slow  # ~5 s; the default run keeps the cut trees' test (the what-if's) and the run's own components
def test_the_timed_tree_is_the_rounds_tree(trained):
    lm, folder, prompt, plain = trained
    k = 15
    rounds = list(tree_speculative_generate(lm.model, prompt, load_dflash_drafter(lm, folder), k, BUDGET, N))[1:]
    first = rounds[0]["tree"]
    comp = measure_tree_components(lm.model, lambda: load_dflash_drafter(lm, folder), Sampling(), prompt, plain, k,
                                   BUDGET, reps=1, at=0.0)  # at 0: the first round's point (prompt, then c_0)
    t = comp["tree"]
    assert (t["nodes"], t["depth"], t["widths"]) == (first["nodes"], first["depth"], first["widths"])
    assert len(comp["verify_ms"]) == len(comp["draft_ms"]) == len(comp["bookkeeping_ms"]) == k + 1
    assert comp["round_drafts_agree"] == 1.0  # every timed round drafted that same tree
    assert set(comp["rollback_ms"]) == {str(a) for a in range(k + 1)}
    assert all(n <= t["depth"] for n in t["rollback_path_nodes"].values())
    # negative control: a chain's components verify k + 1 = 16 positions, the tree verifies its nodes + 1 = 9
    assert t["nodes"] + 1 == BUDGET + 1 != k + 1
    # the budget what-if: every budget's verify timed (what_if_reps each, 1 by default), its tree the cut of one
    # drafted at the largest budget, and that cut at the run's budget is the run's tree
    budgets = what_if_budgets(BUDGET)
    assert set(comp["budget_verify_ms"]) == {str(b) for b in budgets} and all(
        len(xs) == 1 and xs[0] > 0 for xs in comp["budget_verify_ms"].values())
    assert t["budget_cut_agrees"] is True and t["budget_shapes"][str(BUDGET)] == [t["nodes"], t["depth"]]
    assert [t["budget_shapes"][str(b)][0] for b in budgets] == budgets
    assert 0 < comp["budget_verify_wall_ms"] < comp["wall_ms"]
    bd = measure_tree_breakdown(lm.model, load_dflash_drafter(lm, folder), prompt, plain, k, BUDGET, reps=1, skip=False)
    assert bd["tree"]["widths"] == first["widths"] and bd["verify"]["positions"] == first["nodes"] + 1


def test_path_of_stops_at_the_trees_depth():
    from specscope.engine_adapter.cache.tree import Tree

    tree = Tree([5, 1, 2, 3, 4], [-1, 0, 0, 1, 3], [0, 1, 1, 2, 3], [1.0] * 5)
    assert _path_of(tree, 0) == [0] and _path_of(tree, 2) == [0, 1, 3] and _path_of(tree, 9) == [0, 1, 3, 4]


@pytest.mark.parametrize("kind", ["dflash", "dflash2"])
def test_the_cut_is_the_tree_a_smaller_budget_grows(trained, kind):
    """The what-if's trees: the tree drafted at the largest budget cut to its first B nodes is, node for node, the tree
    the drafter grows at budget B from the same prefix (DFlash and DFlash2, at two points of the output)."""
    from specscope.engine_adapter.measure.components import round_point
    from specscope.engine_adapter.measure.tree_components import _TreeBench
    from specscope.engine_adapter.model.shipped import trained_demo_path

    lm, folder, prompt, plain = trained
    folder = trained_demo_path(kind)
    if folder is None:
        pytest.skip(f"no trained {kind} drafter")
    k, branched = 15, False
    for at in (0.0, 0.5):
        context, last, _ = round_point(prompt, plain, k, at)
        bench = _TreeBench(lm.model, load_dflash_drafter(lm, folder), Sampling(), context, last, k, BUDGET, None)
        big = bench.ready(0).draft_tree(last, k, 16)
        branched |= any(w > 1 for w in big.widths())
        for b in (1, 2, 4, 8):
            small = bench.ready(0).draft_tree(last, k, b)
            got = cut(big, b)
            assert (got.tokens, got.parents, got.depths) == (small.tokens, small.parents, small.depths), (at, b)
    assert branched  # trees with siblings, so the cut follows node order, not depth
