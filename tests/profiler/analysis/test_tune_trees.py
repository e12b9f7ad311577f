"""``specscope tune --tree-budgets``: trees tuned beside chains (``analysis.tune_trees``), on a scripted engine whose
tree runs are simulated token by token from a script the trace is read from, so the two share only the script.

The script: at every start s the drafter's candidates a position (random probabilities, best first) and where the
target's token ranks among them (-1: not among them). A tree run at budget B grows, at every round, the B label
sequences of highest path probability (best first under a node budget: a path's probability falls along it, so the B
best are closed under ancestors) — enumerated here, not with the engine's heap — and accepts the longest prefix of
the target's ranks that is a node. Times are exact but for the drift and jitter of ``PairDriftEngine``."""

from __future__ import annotations

import itertools
import random

import pytest

from specscope.errors import SpecscopeError
from specscope.profiler.analysis import tune_trees
from specscope.profiler.analysis.tune import confirm_set
from specscope.profiler.run.tune_run import run_tune

from test_tune import PairDriftEngine  # the drifting machine, from the module beside this one

DEPTH, CANDIDATES = 3, 8


def best_nodes(top_p: list[list[float]], depth: int, budget: int) -> set[tuple[int, ...]]:
    """The ``budget`` label sequences (at most ``depth`` long) of highest path probability, by enumeration."""
    nodes = []
    for d in range(1, depth + 1):
        for labels in itertools.product(range(len(top_p[0])), repeat=d):
            p = 1.0
            for i, r in enumerate(labels):
                p *= top_p[i][r]
            nodes.append((p, labels))
    nodes.sort(key=lambda x: -x[0])
    return {labels for _, labels in nodes[:budget]}


class TreeEngine(PairDriftEngine):
    """The bursty chain drafter of ``PairDriftEngine`` named "dflash", plus tree runs from the script. A tree round at
    budget B costs a verify of 10 + 2.5·B ms, drafting 1.5 + 0.1·B ms, a keep of 0.3 ms, bookkeeping 0.2 ms (times
    the machine's drift); end-to-end tree rounds cost ``tree_bias`` more than their parts."""

    def __init__(self, tree_bias=0.0, n=240, seed=7, flip_at=None, **kw):
        super().__init__(n=n, drafters=("dflash",), **kw)
        rng = random.Random(seed)
        self.tree_bias, self.flip_at = tree_bias, flip_at
        self.top_p, self.rank, self.trees, self.points = [], [], {}, []
        for _ in range(n - 1):
            lists = [sorted((rng.random() for _ in range(CANDIDATES)), reverse=True) for _ in range(DEPTH)]
            self.top_p.append([[p / sum(lst) for p in lst] for lst in lists])
            self.rank.append([rng.choices([0, 1, 2, 4, -1], [0.55, 0.2, 0.1, 0.05, 0.1])[0] for _ in range(DEPTH)])

    def tree_refusal(self, name):
        return None

    def trace(self, name, prompt, plain_tokens, k_max, seed=0, tree_b=0):
        out = super().trace(name, prompt, plain_tokens, k_max, seed)
        if tree_b:
            out["tree"] = {"b": CANDIDATES, "depth": DEPTH, "top_p": self.top_p, "rank": self.rank, "to_the_end": True}
        return out

    def _tree_rounds(self, budget, depth, n, kinds):
        rounds, s = [], 0
        while s + 1 < n:
            limit = min(depth, n - s - 1)  # a drafter that drafts to the end: the limit is what is left
            key = (s, limit, budget)
            if key not in self.trees:  # the same tree every run: grown once
                self.trees[key] = best_nodes(self.top_p[s], limit, budget)
            tree = self.trees[key]
            ranks = list(self.rank[s][:limit])
            if self.flip_at is not None and s == self.flip_at:  # a run that is not the trace's (a control)
                ranks[0] = 0 if ranks[0] != 0 else -1
            a = 0
            while a < limit and ranks[a] >= 0 and tuple(ranks[:a + 1]) in tree:
                a += 1
            f = self._f()
            parts = (f * (1.5 + 0.1 * budget), f * (10 + 2.5 * budget), f * 0.3, f * 0.2)
            inst = kinds == "instrumented"
            ms = sum(parts) * (1.0 if inst else 1.0 + self.tree_bias)
            rounds.append({"drafted": len(tree), "accepted": a, "emitted": a + 1, "ms": ms,
                           "draft_ms": parts[0] if inst else None, "verify_ms": parts[1] if inst else None,
                           "rollback_ms": parts[2] if inst else None, "kind": kinds, "depth_limit": limit,
                           "nodes": len(tree), "full": limit == depth})
            s += a + 1
        return rounds

    def speculative(self, name, prompt, plain_tokens, k, n, kinds, seed=0, tree_budget=0):
        if not tree_budget:
            return super().speculative(name, prompt, plain_tokens, k, n, kinds, seed)
        self.calls.append((name + "+tree", tree_budget, kinds))
        return {"rounds": self._tree_rounds(tree_budget, k, n, kinds), "tokens": []}

    def components(self, name, prompt, plain_tokens, k, reps=3, tree_budget=0, points=None):
        if not tree_budget:
            return super().components(name, prompt, plain_tokens, k, reps)
        self.points.append((tree_budget, len(plain_tokens), points))
        f, m = self._f(), reps * (k + 1)
        return {"draft_ms": [f * (1.5 + 0.1 * tree_budget)] * m, "verify_ms": [f * (10 + 2.5 * tree_budget)] * m,
                "bookkeeping_ms": [f * 0.2] * m, "rollback_ms": {a: [f * 0.3] * reps for a in range(k + 1)}}


def _tree_rows(res):
    return {r["k"]: r for r in res["rows"] if r["drafter"] == "dflash+tree"}


def test_tree_budgets_are_predicted_from_the_trace_exactly_and_the_runs_agree():
    """Every budget's E(B) walked on the trace is what a tree run at B measures (the scripted runs share only the
    script); the confirmation holds a tree against the best chain (the question "does a tree pay"), and a tree
    prediction judged on its paired interval agrees."""
    eng = TreeEngine()
    res = run_tune(eng, [[1, 2, 3]], k_max=DEPTH, max_tokens=eng.n, reps=8, tree_budgets=[1, 2, 4, 8])
    rows = _tree_rows(res)
    assert sorted(rows) == [1, 2, 4, 8]
    for b, r in rows.items():
        full = [x for x in eng._tree_rounds(b, DEPTH, eng.n, "instrumented") if x["full"]]
        assert r["tokens_per_round"] == pytest.approx(1 + sum(x["accepted"] for x in full) / len(full))
        assert r["tree_budget"] == b and r["depth"] == DEPTH
        assert r["t_verify_ms"] == pytest.approx(10 + 2.5 * b, rel=0.15)  # the tree's own verify, not a chain's
    es = [rows[b]["tokens_per_round"] for b in (1, 2, 4, 8)]
    assert es == sorted(es) and es[-1] > es[0]  # a larger tree holds every smaller one's best paths
    confirmed = [r for r in res["rows"] if r.get("agreement")]
    assert {tune_trees.is_tree(r["drafter"]) for r in confirmed} == {True, False}
    tree = next(r for r in confirmed if tune_trees.is_tree(r["drafter"]))
    assert tree["e_exact"] and tree["agreement"]["interval_kind"] == "paired"
    assert tree["agreement"]["state"] == "agrees", tree["agreement"]["text"]
    assert "tree_budgets" not in res  # the budgets are in the rows and the trace facts
    facts = res["drafters"]["dflash+tree"]["trace"]
    assert facts["budgets"] == [1, 2, 4, 8] and facts["tokens_per_round"] == pytest.approx(es)


def test_a_tree_round_dearer_than_its_parts_reads_off():
    """Negative control: end-to-end tree rounds 15% dearer than the parts timed apart; the tree's verdict is "off"."""
    eng = TreeEngine(tree_bias=0.15)
    res = run_tune(eng, [[1, 2, 3]], k_max=DEPTH, max_tokens=eng.n, reps=8, tree_budgets=[2, 4])
    tree = next(r for r in res["rows"] if r.get("agreement") and tune_trees.is_tree(r["drafter"]))
    assert tree["agreement"]["state"] == "off", tree["agreement"]["text"]


def test_a_tree_run_that_is_not_the_trace_s_walk_voids_exact():
    """A confirmation run whose rounds differ from the trace's walk at its budget (one rank flipped) is caught: E(B)
    is not called exact there, and the reason is said."""
    eng = TreeEngine(flip_at=0)
    res = run_tune(eng, [[1, 2, 3]], k_max=DEPTH, max_tokens=eng.n, reps=2, tree_budgets=[2, 4])
    confirmed = [r for r in _tree_rows(res).values() if r.get("agreement")]
    assert confirmed
    for r in confirmed:
        assert r["e_exact"] is False and "differs from the trace's walk" in r["e_exact_void"]
    assert all(r["e_exact"] for r in _tree_rows(res).values() if not r.get("agreement"))  # not run: nothing against


def test_tree_budgets_refused_with_the_reason():
    eng = TreeEngine()
    with pytest.raises(SpecscopeError, match="drafts trees"):
        run_tune(PairDriftEngine(n=eng.n, drafters=("ngram",)), [[1]], k_max=2, max_tokens=eng.n, reps=1,
                 tree_budgets=[2])
    with pytest.raises(SpecscopeError, match="cannot run tree rounds"):  # a seam with no tree runs (mtp drafts trees)
        run_tune(PairDriftEngine(n=eng.n), [[1]], k_max=2, max_tokens=eng.n, reps=1, tree_budgets=[2])
    with pytest.raises(SpecscopeError, match="1 to 64"):
        run_tune(eng, [[1]], k_max=2, max_tokens=eng.n, reps=1, tree_budgets=[0])


def test_the_confirm_set_holds_a_tree_against_the_best_chain():
    pred = {"dflash": [{"k": 1, "predicted_speedup": 1.5}, {"k": 2, "predicted_speedup": 1.4}],
            "dflash+tree": [{"k": 2, "predicted_speedup": 1.2}, {"k": 4, "predicted_speedup": 1.3}]}
    assert confirm_set(pred, 2) == [("dflash", 1), ("dflash+tree", 4)]
    assert confirm_set(pred, 2, "best") == [("dflash", 1), ("dflash", 2), ("dflash+tree", 2), ("dflash+tree", 4)]
    assert confirm_set({"ngram": pred["dflash"]}, 2) == [("ngram", 1), ("ngram", 2)]  # chains alone: as before


def test_settings_read_as_people_say_them():
    assert tune_trees.setting_text("dflash+tree", 8) == "trees of budget 8 with the DFlash drafter"
    assert tune_trees.setting_text("dflash", 3) == "k=3 with the DFlash drafter"
    assert tune_trees.short_setting("dflash+tree", 8) == "the DFlash drafter, tree budget 8"
    assert tune_trees.short_setting("dflash", 3) == "the DFlash drafter k=3"


def test_a_tree_settings_parts_are_timed_where_its_rounds_start():
    """A tree's verify costs what the tree a prefix grows costs, so a tree setting's parts are timed at the starts of
    the rounds a run at that budget makes (walked on the prompt's trace), each round once: here they are the scripted
    runs' own full rounds' starts, at every budget and in every call (before the confirmations and beside them)."""
    eng = TreeEngine(n=60)
    run_tune(eng, [[1, 2, 3]], k_max=DEPTH, max_tokens=eng.n, reps=3, tree_budgets=[2, 4])
    assert eng.points and {b for b, _, _ in eng.points} == {2, 4}
    for budget, n, points in eng.points:
        starts, s = [], 0
        for r in eng._tree_rounds(budget, DEPTH, eng.n, "instrumented"):
            if r["full"]:
                starts.append(s)
            s += r["emitted"]
        assert points == pytest.approx([(s0 + 1) / n for s0 in starts])
