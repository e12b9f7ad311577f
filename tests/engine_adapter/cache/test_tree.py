"""The draft tree (``cache.tree``): grown best first by path probability under a budget, its arrays, and the rules
that keep its accepted path (greedy; at temperature the recursive rejection over siblings, its output distribution
tested with a chi-square, and the test's power against a wrong rule)."""

import itertools

import numpy as np
import pytest
from chi2 import chi2_goodness_of_fit

from specscope.engine_adapter.cache.tree import Tree, accept_greedy, accept_sampled, grow, top_candidates

ALPHA = 1e-3


def _paths(lists, depth):
    """Every path of the per-depth candidate lists, with its probability (brute force)."""
    out = []
    for d in range(1, depth + 1):
        for combo in itertools.product(*[range(len(lists[i])) for i in range(d)]):
            out.append((float(np.prod([lists[i][j][1] for i, j in enumerate(combo)])), combo))
    return out


def test_grow_keeps_the_budget_most_probable_paths():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(6) * 0.5, size=4)  # 4 positions over 6 tokens
    lists = top_candidates(probs, 3)
    for budget in (1, 3, 8, 20):
        tree = grow(99, 4, budget, lambda d, node, tok: lists[d - 1])
        tree.check()
        assert len(tree) - 1 == budget
        want = sorted((p for p, _ in _paths(lists, 4)), reverse=True)[:budget]
        assert sorted(tree.probs[1:], reverse=True) == pytest.approx(want)
        assert tree.probs[1:] == sorted(tree.probs[1:], reverse=True)  # added best first
        for i in range(1, len(tree)):  # each node's probability is its parent's times its own candidate's
            d, par = tree.depths[i], tree.parents[i]
            own = dict(lists[d - 1])[tree.tokens[i]]
            assert tree.probs[i] == pytest.approx(tree.probs[par] * own)


def test_one_candidate_a_position_grows_the_chain():
    lists = [[(t, 0.9)] for t in (5, 6, 7)]
    tree = grow(1, 3, 8, lambda d, node, tok: lists[d - 1])
    assert tree.tokens == [1, 5, 6, 7] and tree.parents == [-1, 0, 1, 2] and tree.depths == [0, 1, 2, 3]
    assert Tree.chain(1, [5, 6, 7]).parents == tree.parents
    assert grow(1, 0, 8, lambda d, n, t: lists[0]).tokens == [1]


def test_tree_arrays():
    t = Tree([9, 1, 2, 3, 4], [-1, 0, 0, 1, 1], [0, 1, 1, 2, 2])
    t.check()
    assert t.children(1) == [3, 4] and t.path(4) == [0, 1, 4] and t.widths() == [2, 2] and t.depth == 2
    vis = t.visibility()
    assert vis[4].tolist() == [True, True, False, False, True]
    assert vis[2].tolist() == [True, False, True, False, False]
    with pytest.raises(ValueError, match="parent"):
        Tree([9, 1, 2], [-1, 2, 0], [0, 1, 1]).check()
    with pytest.raises(ValueError, match="same token"):
        Tree([9, 1, 1], [-1, 0, 0], [0, 1, 1]).check()


def test_accept_greedy_follows_the_targets_argmax():
    t = Tree([9, 1, 2, 3, 4, 5], [-1, 0, 0, 2, 2, 4], [0, 1, 1, 2, 2, 3])
    picks = [2, 0, 4, 0, 7, 0]  # root -> 2 (node 2), node 2 -> 4 (node 4), node 4 -> 7: not a child
    assert accept_greedy(t, picks) == [0, 2, 4]
    assert accept_greedy(t, [8, 0, 0, 0, 0, 0]) == [0]


# -- at temperature: the first two tokens a tree round emits, against the target's distributions ---------------------

TREE = Tree([9, 1, 2, 0, 3], [-1, 0, 0, 1, 1], [0, 1, 1, 2, 2])  # root children 1, 2; node 1's children 0, 3
P = np.array([[0.15, 0.45, 0.25, 0.15],   # root
              [0.40, 0.10, 0.20, 0.30],   # node 1 (token 1)
              [0.25, 0.25, 0.25, 0.25],   # node 2
              [0.25, 0.25, 0.25, 0.25],   # node 3
              [0.25, 0.25, 0.25, 0.25]])  # node 4


def _draws(rule, n=6000):
    """Counts of the first emitted token, and of the second given the first was token 1 (node 1's distribution)."""
    first, second = np.zeros(4), np.zeros(4)
    for seed in range(n):
        path, nxt = rule(TREE, P, np.random.default_rng(seed))
        toks = [TREE.tokens[i] for i in path[1:]] + [nxt]
        first[toks[0]] += 1
        if toks[0] == 1 and len(toks) > 1:  # (a wrong rule may emit token 1 as the root's bonus)
            second[toks[1]] += 1
    return first, second


def test_recursive_rejection_over_siblings_is_lossless():
    first, second = _draws(accept_sampled)
    assert chi2_goodness_of_fit(first, P[0]) > ALPHA, first
    assert chi2_goodness_of_fit(second, P[1]) > ALPHA, second


def _no_residual(tree, p, rng):
    """A wrong rule: each sibling accepted with its own target probability, the rejected ones left in the residual."""
    path = [0]
    while True:
        for c in tree.children(path[-1]):
            if rng.random() < p[path[-1]][tree.tokens[c]]:
                path.append(c)
                break
        else:
            return path, int(rng.choice(p.shape[1], p=p[path[-1]]))


def test_the_chi_square_catches_a_rule_that_keeps_rejected_siblings():
    """The same test's power: keeping rejected siblings' mass in the residual over-samples them."""
    first, second = _draws(_no_residual)
    assert min(chi2_goodness_of_fit(first, P[0]), chi2_goodness_of_fit(second, P[1])) < ALPHA, (first, second)
