"""Walking an acceptance trace: the rounds at every k, E(k), acceptance by depth, and the K_max bias it removes."""

from __future__ import annotations

import random

import pytest

from specscope.profiler.analysis import trace_walk as tw


def rounds_of(accepted_fn, n, k):
    """A direct simulation of the engine's loop (emitted counts, the last rounds draft fewer)."""
    out, emitted = [], 1
    while emitted < n:
        kk = min(k, n - emitted - 1)
        acc = accepted_fn(emitted - 1, kk)
        out.append((emitted - 1, kk, acc))
        emitted += acc + 1
    return out


def test_walk_follows_the_engine_loop_including_the_end():
    rng = random.Random(3)
    for _ in range(50):
        n = rng.randint(2, 40)
        A = [rng.randint(0, 4) for _ in range(n - 1)]
        for k in range(1, 5):
            assert tw.walk(A, k) == rounds_of(lambda s, kk: min(kk, A[s]), n, k)


def test_figures_at_k():
    A = [4, 4, 4, 0, 0, 2, 1, 0, 0, 3, 2, 1, 0]
    t = {"k_max": 4, "A": A}
    f = tw.at_k(t, 2)
    rounds = [r for r in tw.walk(A, 2) if r[1] == 2]
    assert f["full_rounds"] == len(rounds)
    assert f["tokens_per_round"] == pytest.approx(1 + sum(a for *_, a in rounds) / len(rounds))
    assert f["acceptance_by_depth"][0] == pytest.approx(sum(1 for *_, a in rounds if a >= 1) / len(rounds))
    assert sum(f["tokens_per_round_hist"]) == len(rounds)
    with pytest.raises(tw.TraceError):
        tw.at_k(t, 5)


def bursty(n, seed):
    """Alternating spans of 3-15 tokens where the drafter is right (A = remaining span length) and wrong (0)."""
    rng = random.Random(seed)
    right = []
    while len(right) < n:
        right += [True] * rng.randint(3, 15) + [False] * rng.randint(3, 15)
    right = right[:n]
    return [next((j for j in range(4) if not right[min(s + 1 + j, n - 1)]), 4) if s + 1 < n else 0
            for s in range(n - 1)]


def test_kmax_rounds_are_biased_on_bursty_text_the_walk_is_not():
    A = bursty(4000, 1)
    t = {"k_max": 4, "A": A}
    exact = tw.at_k(t, 1)["tokens_per_round"]
    old = tw.k_max_estimate(A, 4, 1)
    assert abs(old / exact - 1) >= 0.05  # the length-biased K_max sample
    iid = [min(4, sum(1 for _ in iter(lambda: random.random() < 0.6, False))) for _ in range(4000)]
    # with i.i.d. acceptance the K_max estimate agrees with the walk (within sampling noise)
    assert tw.k_max_estimate(iid, 4, 1) == pytest.approx(tw.at_k({"k_max": 4, "A": iid}, 1)["tokens_per_round"], rel=0.05)


def test_draws_are_pooled_and_labelled_an_estimate():
    t = {"k_max": 2, "A": [1, 0, 1], "draws": [[2, 0, 1], [0, 0, 0]], "estimate": True}
    f = tw.at_k(t, 1)
    assert f["estimate"] and f["draws"] == 2
    assert f["tokens_per_round_spread"][0] < f["tokens_per_round_spread"][1]


def test_pooled_curve_and_classes():
    cases = [{"content_class": "code", "trace": {"k_max": 3, "A": [3, 2, 1, 0, 3, 2, 1]}},
             {"content_class": "en", "trace": {"k_max": 3, "A": [0, 0, 0, 0, 0]}},
             {"content_class": "en"}]
    by = tw.by_class(cases)
    assert set(by) == {"code", "en"}
    assert by["en"][0]["tokens_per_round"] == 1.0
    assert by["code"][2]["tokens_per_round"] > by["code"][0]["tokens_per_round"]
    assert len(tw.curve([c["trace"] for c in cases[:2]])) == 3


def test_a_drafter_that_drafts_to_the_end_walks_one_more_in_its_last_rounds():
    """DFlash's last blocks draft min(k, tokens left) where a chain drafter drafts one fewer (its bonus would be cut):
    the walk follows the engine's loop either way (a DFlash confirmation run was called "not the walk" at its last
    round before the trace said so)."""
    from specscope.profiler.analysis.trace_walk import walk

    A = [4, 4, 4, 4, 4, 4, 3, 2, 1]  # 10 tokens, every draft right (K_max 4)
    assert [d for _, d, _ in walk(A, 4)] == [4, 3]
    assert [d for _, d, _ in walk(A, 4, to_the_end=True)] == [4, 4]
