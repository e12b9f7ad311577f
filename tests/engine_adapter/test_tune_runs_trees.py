"""The tune seam's tree runs (``TuneEngine`` with ``tree_budget``), on the trained demo with its DFlash drafter: a
greedy tree run is the run the seam's own trace walks at its budget (what tune's "E(B) exact" rests on), its rounds say
which are full, and a tree round's parts timed apart come back in the shape the prediction reads."""

from __future__ import annotations

import pytest

from specscope.engine_adapter.params import EngineParams
from specscope.profiler.analysis import tune_trees


@pytest.fixture(scope="module")
def seam():
    from specscope.engine_adapter.model.shipped import trained_demo_path
    from specscope.engine_adapter.tune_runs import TuneEngine

    if trained_demo_path("dflash") is None:
        pytest.skip("this install has no trained DFlash drafter")
    return TuneEngine.open(EngineParams(demo=True, drafter="dflash", dtype="float32"))


@pytest.mark.slow  # ~6 s with the seam's opening; the default run keeps the scripted tune tests (test_tune_trees.py)
def test_a_tree_run_is_its_traces_walk_and_its_parts_are_timed_apart(seam):
    assert "dflash" in seam.available_drafters() and seam.tree_refusal("dflash") is None
    prompt = seam.encode("请用简洁的语言解释什么是推测解码。")
    plain = seam.plain(prompt, 20)["tokens"]
    depth, budget = 6, 4
    trace = seam.trace("dflash", prompt, plain, depth, tree_b=budget)
    assert trace["tree"]["depth"] == depth and trace["tree"]["b"] >= budget
    run = seam.speculative("dflash", prompt, plain, depth, len(plain), "end_to_end", tree_budget=budget)
    assert run["tokens"] == plain  # greedy: the tree run's output is plain decoding's
    assert tune_trees.run_mismatch(trace, plain, budget, depth, run) is None
    assert any(r["full"] for r in run["rounds"]) and all(r["full"] == (r["depth_limit"] == depth) for r in run["rounds"])
    assert all(r["nodes"] <= budget for r in run["rounds"])
    # negative control: the walk at another budget is another run, and it is told apart
    other = seam.speculative("dflash", prompt, plain, depth, len(plain), "end_to_end", tree_budget=1)
    if [r["accepted"] for r in other["rounds"]] != [r["accepted"] for r in run["rounds"]]:
        assert tune_trees.run_mismatch(trace, plain, budget, depth, other) is not None
    comps = seam.components("dflash", prompt, plain, depth, reps=1, tree_budget=budget)
    assert len(comps["verify_ms"]) == len(comps["draft_ms"]) == depth + 1
    assert comps["tree"]["budget"] == budget and set(comps["rollback_ms"]) == {str(a) for a in range(depth + 1)}
