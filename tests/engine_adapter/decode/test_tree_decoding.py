"""Speculative decoding with trees (``decode.tree_decoding``): greedy output equal to plain decoding on the hybrid
(with accepted paths through later siblings, so every cache must be compacted; the same run with the KV compaction
broken differs), DFlash's and DFlash2's trees end to end, the round records' tree shapes, refusals, and at
temperature the output distribution against plain sampling's (two-sample chi-square) with the test's power."""

from collections import Counter

import mlx.core as mx
import numpy as np
import pytest
from chi2 import chi2_sf, chi2_two_sample
from mlx_lm.models.cache import KVCache

from specscope.engine_adapter.cache.tree_verify import TreeForward
from specscope.engine_adapter.decode import tree_decoding
from specscope.engine_adapter.decode.decoding import plain_generate
from specscope.engine_adapter.decode.records import tokens_of
from specscope.engine_adapter.decode.sampling import Sampling
from specscope.engine_adapter.cache.tree import Tree, grow
from specscope.engine_adapter.decode.tree_decoding import tree_speculative_generate
from specscope.engine_adapter.drafters.drafter import Drafter, NgramDrafter
from specscope.engine_adapter.drafters.dflash_loader import load_dflash_drafter
from specscope.errors import SpecscopeError

N = 20


class PlainTreeDrafter(Drafter):
    """Trees that hold plain decoding's next tokens as the *second* child at each depth (a wrong token first), the
    right chain cut at a depth that changes every round: accepted paths skip nodes, and rounds reject too."""

    kind = "plain-tree"
    drafts_trees = True

    def __init__(self, plain: list[int], vocab: int):
        self.plain, self.vocab, self.pos, self.rounds = plain, vocab, 0, 0

    def begin(self, prompt, first_token, hidden=None):
        assert first_token == self.plain[0]
        self.pos, self.rounds = 0, 0

    def draft_tree(self, last_token, depth, budget):
        tree = Tree([last_token], [-1], [0], [1.0])
        if self.pos >= len(self.plain) or self.plain[self.pos] != last_token:
            return tree  # the output has left plain decoding's (a broken run): nothing to draft from

        def add(tok, parent):
            tree.tokens.append(tok % self.vocab)
            tree.parents.append(parent)
            tree.depths.append(tree.depths[parent] + 1)
            tree.probs.append(1.0)
            return len(tree) - 1

        right, cut = 0, 1 + self.rounds % max(depth, 1)
        for j in range(1, min(cut, depth) + 1):
            at = self.pos + j
            if at >= len(self.plain):
                break
            wrong = add(self.plain[at] + 1, right)        # a wrong token first, then the right one
            right = add(self.plain[at], right)
            if j < depth:
                add(self.plain[at] + 2, wrong)            # a branch under the wrong one
        if tree.depths[right] < depth:                     # the right chain ends: its next node is wrong
            at = min(self.pos + tree.depths[right] + 1, len(self.plain) - 1)
            add(self.plain[at] + 3, right)
        tree.check()
        return tree

    def update(self, accepted, draft, emitted, hidden=None):
        self.pos += len(emitted)
        self.rounds += 1


@pytest.fixture(scope="module")
def trained():
    """The shipped trained hybrid (Gated DeltaNet, attention, MoE), in float32: its attention matters to its output,
    so a wrong key in a cache changes what it decodes (the random demo's scaled-down branches often hide one)."""
    from specscope.engine_adapter.model.loader import load_model
    from specscope.engine_adapter.model.shipped import trained_demo_path

    path = trained_demo_path("hybrid")
    if path is None:
        pytest.skip("this install has no trained demo")
    lm = load_model(path, dtype="float32")
    return lm, lm.encode("def fibonacci(n):\n")  # a prompt whose output a stale key changes (measured)


@pytest.fixture(scope="module")
def trained_plain(trained):
    lm, prompt = trained
    return tokens_of(list(plain_generate(lm.model, prompt, N)))


def _run(trained, plain, budget=8, depth=4, kinds="instrumented"):
    lm, prompt = trained
    drafter = PlainTreeDrafter(plain, lm.vocab_size)
    return list(tree_speculative_generate(lm.model, prompt, drafter, depth, budget, N, round_kinds=kinds))


@pytest.mark.parametrize("kinds", ["instrumented", "end_to_end"])
def test_greedy_trees_equal_plain_decoding(trained, trained_plain, kinds):
    plain = trained_plain
    ev = _run(trained, plain, kinds=kinds)
    assert tokens_of(ev) == plain
    rounds = ev[1:]
    assert sum(r["accepted"] for r in rounds) >= N // 2   # most tokens came from accepted nodes
    moved = [r for r in rounds if r["tree"]["path"] != list(range(1, r["accepted"] + 1))]
    assert len(moved) >= 3                                  # accepted paths that skip nodes: compacted, not trimmed
    for r in rounds:
        t = r["tree"]
        assert t["nodes"] == len(r["drafted"]) == len(t["parents"]) and len(t["path"]) == r["accepted"]
        assert sum(t["widths"]) == t["nodes"] and len(t["widths"]) == t["depth"]
        assert r["emitted"][:-1] == [r["drafted"][i - 1] for i in t["path"]]
        assert (r["draft_ms"] is None) == (kinds == "end_to_end")
    # the depth limit each round drafted under: k until the output's end cuts it (what makes a round "full")
    limits = [r["tree"]["max_depth"] for r in rounds]
    assert all(r["tree"]["budget"] == 8 for r in rounds) and limits[0] == 4
    assert limits == sorted(limits, reverse=True)  # cut only as the output's end nears
    assert all(t["tree"]["depth"] <= t["tree"]["max_depth"] for t in rounds)


def test_breaking_the_kv_compaction_breaks_the_output(trained, trained_plain, monkeypatch):
    """The test above has power over the compaction: trim the KV caches instead of moving the path's entries, and the
    output leaves plain decoding's."""

    def trim_only(self, path):
        for c in self.cache:
            if isinstance(c, KVCache) and c.keys is not None:
                c.offset = self.prefix + len(path)
        return []

    monkeypatch.setattr(TreeForward, "_keep_kv", trim_only)
    assert tokens_of(_run(trained, trained_plain)) != trained_plain


@pytest.mark.parametrize("kind", ["dflash", "dflash2"])
def test_dflash_trees_equal_plain_decoding(trained, trained_plain, kind):
    """The shipped trained DFlash and DFlash2 drafters (block 16) with budget 8: paths accepted, output plain's."""
    from specscope.engine_adapter.model.shipped import trained_demo_path

    lm, prompt = trained
    folder = trained_demo_path(kind)
    if folder is None:
        pytest.skip(f"this install has no trained {kind} demo drafter")
    drafter = load_dflash_drafter(lm, folder)
    assert drafter.drafts_trees
    ev = list(tree_speculative_generate(lm.model, prompt, drafter, drafter.spec.max_draft_tokens, 8, N))
    assert tokens_of(ev) == trained_plain
    assert all(1 <= r["tree"]["nodes"] <= 8 for r in ev[1:]) and sum(r["accepted"] for r in ev[1:]) > 0


def test_drafters_without_distributions_and_bad_budgets_are_refused(hybrid, prompt):
    """(The dflash drafters' trees on a random hybrid, whose trees are all rejected: ``check``'s tree test covers the
    random hybrid's exactness node by node.)"""
    with pytest.raises(SpecscopeError, match="ngram drafter gives no per-position distributions"):
        next(tree_speculative_generate(hybrid.model, prompt, NgramDrafter(), 3, 4, 8))
    with pytest.raises(ValueError, match="budget"):
        next(tree_speculative_generate(hybrid.model, prompt, NgramDrafter(), 3, 0, 8))


# -- at temperature: the token at a drafted position over many seeds, trees against plain sampling -------------------

POSITION, SEEDS = 1, 60
REGIME = {"temp": 0.25, "top_p": 0.9}


class SelfTreeDrafter(Drafter):
    """The target drafting for itself: the three likeliest next tokens after the context, at every depth (so the first
    level is often right and its siblings are tried in turn)."""

    kind = "self-tree"
    drafts_trees = True

    def __init__(self, model, memo: dict):
        self.model, self.context, self.memo = model, [], memo  # memo: context -> candidates (the seeds share contexts)

    def begin(self, prompt, first_token, hidden=None):
        self.context = list(prompt) + [first_token]

    def draft_tree(self, last_token, depth, budget):
        key = tuple(self.context)
        if key not in self.memo:
            logits = self.model(mx.array(self.context, dtype=mx.uint32)[None])[0, -1]
            top = np.argsort(-np.array(logits.astype(mx.float32)))[:3]
            self.memo[key] = [(int(t), 1.0 / (i + 1)) for i, t in enumerate(top)]
        lists = self.memo[key]
        return grow(last_token, depth, budget, lambda d, node, tok: lists)

    def update(self, accepted, draft, emitted, hidden=None):
        self.context += list(emitted)


@pytest.fixture(scope="module")
def tiny(draft):
    return draft.model, draft.encode("Why is the sky blue?")


@pytest.fixture(scope="module")
def tiny_plain(tiny):
    model, prompt = tiny
    out = Counter()
    for seed in range(SEEDS):
        toks = tokens_of(plain_generate(model, prompt, POSITION + 1, Sampling(**REGIME, seed=seed)))
        out[toks[POSITION]] += 1
    return out


def _tree_counts(tiny):
    model, prompt = tiny
    drafter = SelfTreeDrafter(model, {})
    tokens, accepted = Counter(), Counter()
    for seed in range(SEEDS):  # one level of three siblings decides the token at POSITION
        ev = list(tree_speculative_generate(model, prompt, drafter, 1, 3, POSITION + 2,
                                            Sampling(**REGIME, seed=1_000_000 + seed)))
        accepted[ev[1]["accepted"]] += 1
        tokens[tokens_of(ev)[POSITION]] += 1
    return tokens, accepted


@pytest.mark.slow  # ~10 s; the default run keeps the chain drafters' tree at temperature (test_tree_chain_drafters)
def test_trees_at_temperature_sample_the_targets_distribution(tiny, tiny_plain):
    spec, accepted = _tree_counts(tiny)
    assert accepted[0] >= SEEDS // 10 and SEEDS - accepted[0] >= SEEDS // 10, accepted  # both branches of the rule
    stat, dof = chi2_two_sample(tiny_plain, spec)
    p = chi2_sf(stat, dof)
    print(f"tree rule: chi-square {stat:.1f}, dof {dof}, p = {p:.3g}; first-round accepted {dict(accepted)}")
    assert dof >= 1 and p > 1e-3, (stat, dof, p, tiny_plain.most_common(5), spec.most_common(5))


@pytest.mark.slow  # the power of the test above, not a check of specscope: `pytest -m slow`
def test_the_chi_square_catches_a_wrong_tree_rule(tiny, tiny_plain, monkeypatch):
    """Always accepting the best child: the distribution shifts to the drafter's picks, and the test sees it."""

    def first_child(tree, p, rng):
        path = [0]
        while kids := tree.children(path[-1]):
            path.append(kids[0])
        return path, int(p[path[-1]].argmax())

    monkeypatch.setattr(tree_decoding, "accept_sampled", first_child)
    spec, _ = _tree_counts(tiny)
    stat, dof = chi2_two_sample(tiny_plain, spec)
    p = chi2_sf(stat, dof)
    print(f"always-first-child rule: chi-square {stat:.1f}, dof {dof}, p = {p:.3g}")
    assert p < 1e-3, (stat, dof, p)
