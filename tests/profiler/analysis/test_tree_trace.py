"""Walking tree runs from a trace (``analysis.tree_trace``): the growth is ``cache.tree.grow``'s, and on the trained
demo the walk at a budget gives the measured tree run's accepted paths exactly (greedy), with a shuffled trace
caught."""

from __future__ import annotations

import random

import pytest

from specscope.profiler.analysis import tree_trace
from specscope.profiler.session.trace_record import TraceError


def _lists(rng: random.Random, depth: int, b: int) -> list[list[float]]:
    out = []
    for _ in range(depth):
        xs = sorted((rng.random() ** 3 for _ in range(b)), reverse=True)
        total = sum(xs) * rng.uniform(1.0, 2.0)
        out.append([x / total for x in xs])
    return out


def test_grow_ranks_is_the_engines_grow():
    from specscope.engine_adapter.cache.tree import grow

    rng = random.Random(3)
    for _ in range(200):
        depth, b = rng.randint(1, 6), rng.randint(1, 6)
        budget = rng.randint(1, 12)
        top = _lists(rng, depth, b)
        if rng.random() < 0.3:  # ties
            top = [[round(p, 1) for p in lst] for lst in top]
        tree = grow(0, depth, budget, lambda d, node, tok: [(100 * d + j, p) for j, p in enumerate(top[d - 1])])
        want = {tuple(tree.tokens[i] % 100 for i in tree.path(n)[1:]) for n in range(1, len(tree))}
        got, held = tree_trace.grow_ranks(top, depth, budget)
        assert got == want and held == len(tree) - 1


def test_grow_selected_is_dflash2s_growth():
    """Children ranked by the selector's q given the node's own candidate: as ``tree_drafts.dflash2_tree`` grows."""
    import numpy as np

    from specscope.engine_adapter.cache.tree import grow, top_candidates

    rng = np.random.default_rng(5)
    for _ in range(100):
        depth, K, budget = int(rng.integers(1, 5)), int(rng.integers(1, 5)), int(rng.integers(1, 12))
        Q = [rng.dirichlet(np.ones(K), size=1 if i == 0 else K).astype(np.float32) for i in range(depth)]
        if rng.random() < 0.3:
            Q = [np.round(q, 1).astype(np.float32) for q in Q]  # ties

        def candidates(d, node, tok):  # tokens: 100 * depth + index, so a token names its index
            row = 0 if d == 1 else tok % 100
            return [(100 * d + j, p) for j, p in top_candidates(Q[d - 1][row:row + 1], budget)[0]]

        tree = grow(0, depth, budget, candidates)
        want = {tuple(tree.tokens[i] % 100 for i in tree.path(n)[1:]) for n in range(1, len(tree))}
        q = [[[float(f"{x:.9g}") for x in r] for r in m.tolist()] for m in Q]
        got, held = tree_trace.grow_selected(q, depth, budget)
        assert got == want and held == len(tree) - 1


def test_accepted_path_and_the_walk_on_a_made_up_trace():
    # depth 3, b 3: the first candidate twice as likely as the second everywhere
    top = [[[0.6, 0.3, 0.05]] * 3 for _ in range(6)]
    rank = [[0, 1, 0], [1, 0, 0], [-1, 0, 0], [0, 0, 0], [0, 0, 1], [0, 0, 0]]
    trace = {"b": 3, "depth": 3, "top_p": top, "rank": rank}
    one = tree_trace.walk(trace, 1)  # a budget of 1: the argmax chain of depth 1 (the last round cut to depth 0)
    assert [(s, limit, a) for s, limit, a, _ in one] == [(0, 3, 1), (2, 3, 0), (3, 2, 1), (5, 0, 0)]
    three = tree_trace.walk(trace, 3)  # nodes (0), (0, 0), (1): path probabilities .6, .36, .3 before .216
    assert [(s, a) for s, _, a, _ in three] == [(0, 1), (2, 0), (3, 2)]
    assert tree_trace.grow_ranks(top[0], 3, 3) == ({(0,), (0, 0), (1,)}, 3)
    figs = tree_trace.at_budget([trace], 3)  # the last round (depth limit 2) is not full: not counted
    assert figs["accepted"] == [1, 0] and figs["tokens_per_round"] == 1.5 and figs["depth_histogram"] == [1, 1, 0, 0]
    with pytest.raises(TraceError):
        tree_trace.walk(trace, 3, k=4)
    with pytest.raises(TraceError):
        tree_trace.walk(trace, 4)  # more nodes than candidates a position


@pytest.fixture(scope="module")
def trained():
    from specscope.engine_adapter.decode.decoding import plain_generate
    from specscope.engine_adapter.decode.records import tokens_of
    from specscope.engine_adapter.model.loader import load_model
    from specscope.engine_adapter.model.shipped import trained_demo_path

    path = trained_demo_path("hybrid")
    if path is None:
        pytest.skip("this install has no trained demo")
    lm = load_model(path, dtype="float32")
    prompt = lm.encode("请用简洁的语言解释什么是推测解码，它为什么能在不改变输出分布的情况下加快大语言模型的生成速度。")
    return lm, prompt, tokens_of(list(plain_generate(lm.model, prompt, 40)))


# DFlash2's walk (the same loop, per-parent lists) in the slow set: about 5 s of the default run
@pytest.mark.parametrize("kind", ["dflash", pytest.param("dflash2", marks=pytest.mark.slow)])
def test_the_walk_is_the_measured_tree_run_and_a_shuffled_trace_is_caught(trained, kind):
    """DFlash (one candidate list a position) and DFlash2 (the selector's q given the previous candidate)."""
    from specscope.engine_adapter.decode.tree_decoding import tree_speculative_generate
    from specscope.engine_adapter.drafters.dflash_loader import load_dflash_drafter
    from specscope.engine_adapter.measure.acceptance_trace import record_trace
    from specscope.engine_adapter.model.shipped import trained_demo_path

    lm, prompt, plain = trained
    folder = trained_demo_path(kind)
    if folder is None:
        pytest.skip(f"this install has no trained {kind} drafter")
    k = 15
    trace = record_trace(lm.model, prompt, plain, load_dflash_drafter(lm, folder), 2, tree_b=8, tree_depth=k)
    t = trace["tree"]
    assert len(t["rank"]) == len(plain) - 1 and t["b"] == 8
    assert t["kind"] == ("per_parent" if kind == "dflash2" else "per_position")
    for budget in (2, 8):
        rounds = list(tree_speculative_generate(lm.model, prompt, load_dflash_drafter(lm, folder), k, budget,
                                                len(plain)))[1:]
        measured = [r["accepted"] for r in rounds if r["tree"]["max_depth"] == k]
        walked = tree_trace.at_budget([t], budget, k)
        assert walked["accepted"] == measured, budget  # exact: the same rounds, path for path
        assert walked["nodes_per_round"] == pytest.approx(sum(r["tree"]["nodes"] for r in rounds
                                                              if r["tree"]["max_depth"] == k) / len(measured))
    e8 = tree_trace.at_budget([t], 8, k)["tokens_per_round"]
    assert e8 > 1.5
    # negative control: the ranks shuffled across positions walk another run, and it is caught
    rng = random.Random(0)
    shuffled = {**t, "rank": rng.sample(t["rank"], len(t["rank"]))}
    other = tree_trace.at_budget([shuffled], 8, k)
    assert other["accepted"] != measured and other["tokens_per_round"] != e8
