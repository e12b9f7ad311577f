"""Trees from the chain drafters (the MTP head and a draft model: their greedy chain's top-b a step,
``drafters.tree_drafts.chain_tree``) on the shipped trained demo in float32: greedy output equal to plain decoding with
accepted paths that leave the chain (the drafter's state must be rolled back to the common prefix and re-fed), the
drafter's state after every round equal to a fresh drafter's on the true prefix (a broken rollback caught), the
acceptance trace's walk at a budget equal to the measured tree run, and at temperature the output distribution against
plain sampling's (the lossless point-mass rule needs no drafter probability)."""

from __future__ import annotations

import random
from collections import Counter

import mlx.core as mx
import pytest
from chi2 import chi2_sf, chi2_two_sample

from specscope.engine_adapter.decode.decoding import plain_generate
from specscope.engine_adapter.decode.records import tokens_of
from specscope.engine_adapter.decode.sampling import Sampling
from specscope.engine_adapter.decode.tree_decoding import tree_speculative_generate
from specscope.engine_adapter.drafters import tree_drafts
from specscope.engine_adapter.drafters.drafter import DraftModelDrafter
from specscope.engine_adapter.drafters.mtp import MTPDrafter, load_mtp_head
from specscope.engine_adapter.measure.acceptance_trace import record_trace
from specscope.profiler.analysis import tree_trace

N, DEPTH, BUDGET = 24, 4, 8


@pytest.fixture(scope="module")
def demo():
    """The trained hybrid with its MTP head and the trained draft model, float32; a prompt on which their trees accept
    paths through siblings of the chain (measured)."""
    from specscope.engine_adapter.model.loader import load_model
    from specscope.engine_adapter.model.shipped import trained_demo_path

    path, dpath = trained_demo_path("hybrid"), trained_demo_path("draft")
    if path is None or dpath is None:
        pytest.skip("this install has no trained demo")
    lm, dm = load_model(path, dtype="float32"), load_model(dpath, dtype="float32")
    prompt = lm.encode("The history of the city begins")
    return lm, dm, load_mtp_head(lm), prompt, tokens_of(list(plain_generate(lm.model, prompt, N)))


class Checked:
    """After every round: the drafter holds exactly the true prefix (prompt + output so far), and its next tree's
    candidate lists equal a fresh drafter's begun on that prefix (top tokens equal, probabilities within float32
    noise of another chunking). Records each round's accepted length and its common prefix with the chain."""

    def setup(self, fresh, prompt, hidden_of):
        self.fresh, self.prompt, self.hidden_of = fresh, list(prompt), hidden_of
        self.out: list[int] = []
        self.off_chain = 0  # rounds whose accepted path left the chain
        self.worst = 0.0

    def begin(self, prompt, first_token, hidden=None):
        super().begin(prompt, first_token, hidden)
        self.out = [first_token]

    def draft_tree(self, last_token, depth, budget):
        tree = super().draft_tree(last_token, depth, budget)
        self.chain = [tree.tokens[i] for i in _chain_nodes(tree)]
        return tree

    def update(self, accepted, draft, emitted, hidden=None):
        kept = list(draft.tokens)
        self.off_chain += tree_drafts.common_prefix(kept, self.chain) < len(kept)
        super().update(accepted, draft, emitted, hidden)
        self.out += list(emitted)
        seq = self.prompt + self.out
        mine = self.position_candidates(seq[-1], DEPTH, 4)
        ref = self.fresh()
        ref.begin(seq[:-1], seq[-1], hidden=self.hidden_of(seq))
        want = ref.position_candidates(seq[-1], DEPTH, 4)
        assert [[t for t, _ in lst] for lst in mine] == [[t for t, _ in lst] for lst in want], len(self.out)
        self.worst = max([self.worst] + [abs(a - b) for x, y in zip(mine, want) for (_, a), (_, b) in zip(x, y)])


def _chain_nodes(tree) -> list[int]:
    """The chain's nodes: from the root, each node's first child (the chain's token comes first in every list)."""
    path, kids = [], tree.children(0)
    while kids:
        path.append(kids[0])
        kids = tree.children(kids[0])
    return path


class CheckedDraft(Checked, DraftModelDrafter):
    pass


class CheckedMTP(Checked, MTPDrafter):
    pass


def _hidden(lm, mode="post-norm"):
    from mlx_lm.models.cache import make_prompt_cache

    from specscope.engine_adapter.cache.hidden import install_tap, tapping

    install_tap(lm.model)

    def of(seq):
        with tapping(True) as tap:
            mx.eval(lm.model(mx.array(seq[:-1], dtype=mx.uint32)[None], cache=make_prompt_cache(lm.model)))
            return tap.hidden(mode)
    return of


def _checked(kind, demo):
    lm, dm, head, prompt, _ = demo
    if kind == "draft":
        d = CheckedDraft(dm.model, "draft")
        d.setup(lambda: DraftModelDrafter(dm.model, "draft"), prompt, lambda seq: None)
    else:
        d = CheckedMTP(lm, head)
        d.setup(lambda: MTPDrafter(lm, head), prompt, _hidden(lm))
    return d


@pytest.mark.parametrize("kind", ["mtp", "draft"])
def test_chain_drafter_trees_equal_plain_and_leave_the_drafter_on_the_path(demo, kind):
    lm, _, _, prompt, plain = demo
    d = _checked(kind, demo)
    ev = list(tree_speculative_generate(lm.model, prompt, d, DEPTH, BUDGET, N))
    assert tokens_of(ev) == plain
    rounds = ev[1:]
    assert sum(r["accepted"] for r in rounds) >= N // 3
    assert d.off_chain >= 1  # a path through a sibling of the chain: the drafter was rolled back and re-fed
    assert all(1 <= r["tree"]["nodes"] <= BUDGET for r in rounds if r["tree"]["max_depth"] > 0)
    assert d.worst < 1e-4, d.worst


def test_a_draft_model_left_on_the_chain_is_caught(demo, monkeypatch):
    """Negative control: the tree round's update restores the chain's own checkpoint (the accepted count, as a chain
    round would) instead of the common prefix: the state check sees it."""

    def chain_keep(self, path, emitted):
        chain, self.tree_chain = self.tree_chain or [], None
        keep = min(len(path), len(chain) - 1)
        if keep < len(chain) - 1:
            self.checkpoints[keep].restore()
        self.pending = list(emitted[keep:])

    monkeypatch.setattr(DraftModelDrafter, "_update_tree", chain_keep)
    lm, _, _, prompt, _ = demo
    with pytest.raises(AssertionError):
        list(tree_speculative_generate(lm.model, prompt, _checked("draft", demo), DEPTH, BUDGET, N))


@pytest.mark.parametrize("kind", ["mtp", pytest.param("draft", marks=pytest.mark.slow)])  # the same walk: one by default
def test_the_trace_walk_is_the_measured_tree_run(demo, kind):
    """As the DFlash test (``tests/profiler/analysis/test_tree_trace.py``): the walk at a budget gives the measured
    tree run's accepted paths exactly, and a shuffled trace is caught."""
    lm, dm, head, prompt, plain = demo

    def make():
        return MTPDrafter(lm, head) if kind == "mtp" else DraftModelDrafter(dm.model, "draft")

    trace = record_trace(lm.model, prompt, plain, make(), 2, tree_b=8, tree_depth=DEPTH)
    t = trace["tree"]
    assert t["kind"] == "per_position" and t["b"] == 8 and len(t["rank"]) == len(plain) - 1
    assert not t["to_the_end"]
    for budget in (2, 8):
        rounds = list(tree_speculative_generate(lm.model, prompt, make(), DEPTH, budget, len(plain)))[1:]
        measured = [r["accepted"] for r in rounds if r["tree"]["max_depth"] == DEPTH]
        walked = tree_trace.at_budget([t], budget, DEPTH)
        assert walked["accepted"] == measured, budget
        assert walked["rounds"] == len(rounds)
        assert walked["nodes_per_round"] == pytest.approx(
            sum(r["tree"]["nodes"] for r in rounds if r["tree"]["max_depth"] == DEPTH) / len(measured))
    e8 = tree_trace.at_budget([t], 8, DEPTH)
    rng = random.Random(0)
    shuffled = {**t, "rank": rng.sample(t["rank"], len(t["rank"]))}
    assert tree_trace.at_budget([shuffled], 8, DEPTH)["accepted"] != e8["accepted"]


def test_chain_candidates_put_the_chain_first_and_grow_a_tree_per_position():
    logits = [mx.array([0.0, 2.0, 2.0, 1.0, -1.0]), mx.array([3.0, 0.0, 1.0, 1.5, 0.5])]
    chain = [mx.argmax(x, keepdims=True) for x in logits]  # 1 (tied with 2: the chain's token first), 0
    four = tree_drafts.chain_candidates(logits, chain, 4)
    assert [t for t, _ in four[0]] == [1, 2, 3, 0] and [t for t, _ in four[1]] == [0, 3, 2, 4]
    assert tree_drafts.chain_candidates(logits, chain, 2) == [lst[:2] for lst in four]
    assert sum(p for _, p in tree_drafts.chain_candidates(logits, chain, 5)[0]) == pytest.approx(1.0)
    # every node at depth d takes position d's list: .39 (1), .39 (2), then .39 x .67 under node 1 before node 2
    tree = tree_drafts.chain_tree(9, 2, 3, four)
    assert tree.tokens == [9, 1, 2, 0] and tree.parents == [-1, 0, 0, 1]
    assert tree_drafts.common_prefix([1, 3], [1, 0]) == 1 and tree_drafts.common_prefix([2], [1, 0]) == 0


# -- at temperature: the lossless rule needs no drafter probability ---------------------------------------------------

POSITION, SEEDS = 1, 60
REGIME = {"temp": 0.25, "top_p": 0.9}


@pytest.fixture(scope="module")
def tiny(draft):
    model, prompt = draft.model, draft.encode("Why is the sky blue?")
    plain = Counter()
    for seed in range(SEEDS):
        plain[tokens_of(plain_generate(model, prompt, POSITION + 1, Sampling(**REGIME, seed=seed)))[POSITION]] += 1
    return model, prompt, plain


@pytest.mark.parametrize("kind", ["mtp", "draft"])
def test_at_temperature_the_drafter_stays_on_the_sampled_path(demo, kind):
    """Rounds whose next token was sampled off the tree (or whose path left the chain): every round leaves the drafter
    exactly on the true prefix, as greedy rounds do (the state check of ``Checked``)."""
    lm, _, _, prompt, _ = demo
    d = _checked(kind, demo)
    ev = list(tree_speculative_generate(lm.model, prompt, d, DEPTH, BUDGET, 16, Sampling(temp=0.8, seed=3)))
    assert len(tokens_of(ev)) == 16 and len(d.out) >= 8 and d.worst < 1e-4


@pytest.mark.slow  # ~12 s here; the rule itself is tested by default with a self-drafting tree (test_tree_decoding)
def test_draft_model_trees_at_temperature_sample_the_targets_distribution(tiny):
    """A draft model's trees (the random demo draft model drafting for itself, 2 levels of 3 candidates) under the
    point-mass recursive rejection: the token at a drafted position is distributed as plain sampling's."""
    model, prompt, plain = tiny
    spec, accepted = Counter(), Counter()
    for seed in range(SEEDS):
        ev = list(tree_speculative_generate(model, prompt, DraftModelDrafter(model), 2, 3, POSITION + 2,
                                            Sampling(**REGIME, seed=1_000_000 + seed)))
        accepted[ev[1]["accepted"]] += 1
        spec[tokens_of(ev)[POSITION]] += 1
    assert accepted[0] >= SEEDS // 10 and SEEDS - accepted[0] >= SEEDS // 10, accepted  # both branches of the rule
    stat, dof = chi2_two_sample(plain, spec)
    p = chi2_sf(stat, dof)
    print(f"draft-model trees: chi-square {stat:.1f}, dof {dof}, p = {p:.3g}; first-round accepted {dict(accepted)}")
    assert dof >= 1 and p > 1e-3, (stat, dof, p, plain.most_common(5), spec.most_common(5))


# -- `specscope check`: a chain drafter's state after a tree round off its chain ---------------------------------------

@pytest.mark.parametrize("kind", ["mtp", "draft"])
def test_the_check_finds_the_drafter_on_the_path_and_catches_its_control(demo, kind):
    from specscope.engine_adapter.measure.tree_check import describe_drafter_check, drafter_tree_state

    lm, dm, head, _, _ = demo
    make = (lambda: MTPDrafter(lm, head)) if kind == "mtp" else (lambda: DraftModelDrafter(dm.model, "draft"))
    t = drafter_tree_state(lm.model, make, lm.encode("Explain why a verification pass costs as much."), 1e-3)
    assert t["exact"] and t["same_tokens"] and t["max_probability_error"] <= 1e-3, t
    assert t["control_caught"] and t["path_depth"] >= t["off_chain_at"] >= 1
    assert describe_drafter_check(t).startswith("exact: ")


def test_the_check_catches_a_draft_model_left_on_its_chain(demo, monkeypatch):
    from specscope.engine_adapter.measure.tree_check import drafter_tree_state

    def chain_keep(self, path, emitted):  # as a chain round accepting len(path) drafts: the chain's cache kept
        chain, self.tree_chain = self.tree_chain or [], None
        keep = min(len(path), len(chain) - 1)
        if keep < len(chain) - 1:
            self.checkpoints[keep].restore()
        self.pending = list(emitted[keep:])

    monkeypatch.setattr(DraftModelDrafter, "_update_tree", chain_keep)
    lm, dm, _, _, _ = demo
    t = drafter_tree_state(lm.model, lambda: DraftModelDrafter(dm.model, "draft"),
                           lm.encode("Explain why a verification pass costs as much."), 1e-3)
    assert not t["exact"], t
