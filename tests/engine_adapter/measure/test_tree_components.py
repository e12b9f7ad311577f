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


def _point(at: float, reps: int, k: int = 2) -> dict:
    """A stand-in for one point's ``measure_tree_components`` record: its verify costs what the tree grown there costs
    (1 deep before the case's middle, 16.5 ms; 4 deep after it, 19.3 ms: as the demo's trees at budget 4 did)."""
    verify = 16.5 if at < 0.5 else 19.3
    m = reps * (k + 1)
    return {"at": at, "context": 100 + round(100 * at), "k": k, "reps": reps, "verify_ms": [verify] * m,
            "draft_ms": [10.0] * m, "prior_accepted": [i % (k + 1) for i in range(m)], "bookkeeping_ms": [0.1] * m,
            "round_ms": [verify + 10.0] * m, "draft_alone_ms": [11.0], "wall_ms": 5.0, "round_drafts_agree": 1.0,
            "rollback_ms": {str(a): [0.3] * reps for a in range(k + 1)}, "tree": {"budget": 4, "depth": 1 + 3 * (at >= 0.5)}}


def test_spread_times_a_tree_round_over_the_case_as_the_runs_rounds_are():
    from specscope.engine_adapter.measure.tree_components import spread

    asked = []
    out = spread(lambda at, reps: asked.append((at, reps)) or _point(at, reps), 6)
    assert asked == [(0.125, 2), (0.375, 2), (0.625, 2), (0.875, 2)]  # four points, as many reps at each (6 asked)
    assert out["reps"] == 8 and len(out["verify_ms"]) == len(out["prior_accepted"]) == 8 * 3
    assert out["rollback_ms"] == {str(a): [0.3] * 8 for a in range(3)} and out["at"] == 0.5 and out["tree"]["depth"] == 1  # the first point's
    # the runs' rounds stand all over the case (half its trees 1 deep, half 4 deep): the spread verify is theirs,
    # where one call at the middle (the negative control: what tune did) prices every round at the deep tree
    runs = (16.5 + 19.3) / 2
    spread_mean = sum(out["verify_ms"]) / len(out["verify_ms"])
    middle = spread(lambda at, reps: _point(0.5, reps), 6, points=1)
    assert abs(spread_mean / runs - 1) < 1e-9 and abs(sum(middle["verify_ms"]) / len(middle["verify_ms"]) / runs - 1) > 0.07
    assert spread(lambda at, reps: _point(at, reps), 1) == _point(0.5, 1)  # one point: its own record, tree and all


def test_spread_over_the_rounds_starts_prices_each_round_once():
    """Rounds that accept more grow deeper trees (a confident drafter), and a deeper tree's verify costs more. Points
    evenly spaced over the positions land in a round as often as it is long: they price the long rounds' deep trees
    too often (the negative control, off by more than 5%); the rounds' own starts price every round once, exactly."""
    from specscope.engine_adapter.measure.tree_components import spread

    rounds = [(1, 16.0), (1, 16.0), (8, 20.0), (1, 16.0), (8, 20.0), (2, 17.0), (1, 16.0), (8, 20.0)]  # (tokens, ms)
    n = sum(t for t, _ in rounds)
    starts, s = [], 0
    for t, _ in rounds:
        starts.append(s)
        s += t

    def measure_at(at, reps):  # the verify of the round whose first verify input stands at ``at``
        pos = round(at * n) - 1
        ms = next(v for (t, v), s0 in zip(rounds, starts) if s0 <= pos < s0 + t)
        return {**_point(at, reps), "verify_ms": [ms] * reps * 3}

    def mean(rec):
        return sum(rec["verify_ms"]) / len(rec["verify_ms"])

    truth = sum(v for _, v in rounds) / len(rounds)
    at_starts = spread(measure_at, len(rounds), [(s0 + 1) / n for s0 in starts])
    assert mean(at_starts) == pytest.approx(truth)
    over_positions = spread(measure_at, len(rounds), len(rounds))
    assert mean(over_positions) / truth - 1 > 0.05
