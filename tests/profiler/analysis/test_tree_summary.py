"""The summary of a tree run (``--tree-budget``): acceptance is the accepted path, "full" is a round that could draft
its whole budget to depth k, the tree's own figures, and the live summary equal to the reference at every event."""

from __future__ import annotations

import json
import random

import pytest

from specscope.profiler.analysis import stats
from specscope.profiler.analysis.rounds import full_round
from specscope.profiler.analysis.summary import LiveSummary, summarize
from specscope.profiler.analysis.summary_intervals import acceptance_by_unit
from specscope.profiler.session.schema import migrate_names
from specscope.profiler.session.session import Session

from session_events import BUDGET, PAIRED, paired_events, tree_round, tree_session_dict  # noqa: F401 (tests/session_events.py)

def test_full_round_for_chains_and_trees():
    assert full_round({"drafted": [1, 2, 3]}, 3) and not full_round({"drafted": [1, 2]}, 3)
    tree = {"nodes": 8, "depth": 3, "widths": [4, 2, 2], "parents": [], "path": [], "budget": 8}
    assert full_round({"drafted": [1] * 8, "tree": {**tree, "max_depth": 15}}, 15)  # 8 nodes at k = 15: full
    assert not full_round({"drafted": [1] * 8, "tree": {**tree, "max_depth": 4}}, 15)  # cut by the output's end


def test_a_tree_runs_acceptance_is_its_accepted_path_and_the_live_summary_equals_the_reference():
    d = tree_session_dict()
    s = Session()
    live = LiveSummary(s)
    for ev in paired_events(d):
        s.apply(ev)
        assert live.summary() == summarize(s), ev["event"]
    out = summarize(s)
    k = s.k
    counted = [r for c in s.cases for r in c["spec"]["rounds"]
               if r["tree"]["max_depth"] == k and r.get("pass") != "ledger" and not r.get("repeat")]
    assert len(counted) > 20
    acc = [r["accepted"] for r in counted]
    assert out["tokens_per_round"] == pytest.approx(1 + sum(acc) / len(acc), rel=1e-12)
    assert out["per_position"] == [sum(1 for a in acc if a >= i) / len(acc) for i in range(1, k + 1)]
    lo, hi = out["tokens_per_round_ci95"]
    assert lo < out["tokens_per_round"] < hi
    t = out["tree"]
    assert t["budget"] == BUDGET and t["rounds"] == len(counted) and t["nodes_per_round"] == BUDGET
    assert t["depth_histogram"] == [acc.count(j) for j in range(k + 1)]
    assert t["nodes_per_accepted"] == BUDGET * len(acc) / sum(acc)
    assert t["nodes_per_token"] == BUDGET * len(acc) / (sum(acc) + len(acc))
    # the prediction is judged (components timed apart) and its verdict given, as for a chain
    assert out["prediction_source"] == "components" and out["prediction_verdict"]["state"] is not None
    # negative control: the chain's filter (len(drafted) == k) finds no tree round of this run (budget 4 != k = 2)
    assert not [r for r in counted if len(r["drafted"]) == k]


def test_a_chain_run_has_no_tree_figures():
    d = migrate_names(json.loads(PAIRED.read_text(encoding="utf-8")))
    s = Session()
    for ev in paired_events(d):
        s.apply(ev)
    assert summarize(s)["tree"] is None and LiveSummary(s).summary()["tree"] is None


# -- the interval of a tree's tokens per round, by the chain's units: coverage simulated ------------------------------

def _tree_case(rng: random.Random, rounds: int, k: int, bias: float) -> list[int]:
    """Accepted path lengths of one case: bursty (the case's own acceptance level), truncated at k."""
    q = min(0.95, max(0.05, 0.55 + bias))
    return [min(k, sum(1 for _ in iter(lambda: rng.random() < q, False))) for _ in range(rounds)]


def _truth(k: int, n: int = 200_000) -> float:
    rng = random.Random(7)
    xs = [a for _ in range(n // 25) for a in _tree_case(rng, 25, k, rng.gauss(0.0, 0.2))]
    return 1 + sum(xs) / len(xs)


def test_tree_tokens_per_round_interval_covers_and_a_nodes_as_trials_interval_does_not():
    """Eight cases of 25 tree rounds each, case-level acceptance varying (bursty content): the summary's interval (the
    case as the unit, as for chains) covers the true E near 95%; the negative control (every verified node a trial,
    Wilson, budget 8) is far too narrow and misses it often."""
    k, budget, sims = 6, 8, 300
    true_e = _truth(k)
    rng = random.Random(1)
    ours = control = 0
    for _ in range(sims):
        cases = [_tree_case(rng, 25, k, rng.gauss(0.0, 0.2)) for _ in range(8)]
        per_case = [({"content_class": "x"}, {"acceptance": stats.acceptance_from_rounds(a, k)}) for a in cases]
        pooled = stats.acceptance_from_rounds([a for c in cases for a in c], k)
        acc, _ = acceptance_by_unit(per_case, pooled, {}, k)
        lo, hi = acc["tokens_per_round_ci95"]
        ours += lo <= true_e <= hi
        flat = [a for c in cases for a in c]
        wl, wh = stats.wilson_interval(sum(flat), budget * len(flat))  # accepted per node verified, nodes as trials
        control += 1 + budget * wl <= true_e <= 1 + budget * wh
    assert ours / sims >= 0.90, ours / sims
    assert control / sims <= 0.75, control / sims
