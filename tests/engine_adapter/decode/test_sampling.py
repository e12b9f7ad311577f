"""Speculative sampling at temperature keeps the plain sampling distribution (tested statistically)."""

from collections import Counter

import mlx.core as mx
import numpy as np
import pytest
from chi2 import chi2_goodness_of_fit, chi2_sf, chi2_two_sample

from specscope.engine_adapter.decode import sampling as sampling_mod
from specscope.engine_adapter.decode.decoding import plain_generate, speculative_generate
from specscope.engine_adapter.drafters.drafter import Draft, DraftModelDrafter
from specscope.engine_adapter.decode.sampling import Sampling

ALPHA = 1e-3  # a correct rule fails a test 1 time in 1000


def test_chi2_sf_matches_tables():
    for x, dof, p in [(3.841, 1, 0.05), (6.635, 1, 0.01), (16.266, 3, 0.001), (22.458, 6, 0.001), (9.488, 4, 0.05),
                      (0.352, 3, 0.95), (29.588, 10, 0.001)]:
        assert chi2_sf(x, dof) == pytest.approx(p, rel=2e-3), (x, dof)


def test_accept_reject_rule_preserves_target_distribution():
    """Exact check of the rule on fixed distributions: first emitted token ~ p_0, for any q."""
    p_logits = mx.log(mx.array([[0.5, 0.3, 0.15, 0.05], [0.1, 0.2, 0.3, 0.4]]))
    q = mx.array([[0.1, 0.6, 0.2, 0.1]])
    p0 = np.array([0.5, 0.3, 0.15, 0.05])
    counts = np.zeros(4)
    n = 6000
    for seed in range(n):
        s = Sampling(temp=1.0, seed=seed)
        draft_token = int(np.random.default_rng(10_000 + seed).choice(4, p=np.array(q[0])))
        accepted, bonus, _ = s.verify(p_logits, Draft([draft_token], probs=q), 0)
        first = draft_token if accepted == 1 else bonus
        counts[first] += 1
    assert chi2_goodness_of_fit(counts, p0) > ALPHA, (counts, p0 * n)


def test_point_mass_rule_preserves_target_distribution():
    p_logits = mx.log(mx.array([[0.6, 0.25, 0.1, 0.05], [0.25, 0.25, 0.25, 0.25]]))
    p0 = np.array([0.6, 0.25, 0.1, 0.05])
    counts = np.zeros(4)
    n = 6000
    for seed in range(n):
        accepted, bonus, _ = Sampling(temp=1.0, seed=seed).verify(p_logits, Draft([1]), 0)
        counts[1 if accepted else bonus] += 1
    assert chi2_goodness_of_fit(counts, p0) > ALPHA, counts


def test_top_p_filter():
    s = Sampling(temp=1.0, top_p=0.7)
    p = np.array(s.probs(mx.log(mx.array([0.5, 0.3, 0.15, 0.05]))))
    assert p == pytest.approx([0.5 / 0.8, 0.3 / 0.8, 0.0, 0.0])


# -- on a real model -------------------------------------------------------------------------------------
#
# The token at POSITION (after the prefill's token 0) comes from the first speculative round, which drafts
# K tokens: its first draft is accepted or rejected there, so the accept/reject rule and the residual
# resampling decide it. Plain and speculative runs use different seeds (independent samples). The target
# is the small demo model (fast); its own greedy continuation is the drafter (a point-mass draft that the
# target accepts about half the time at this temperature, so both branches of the rule are exercised).

POSITION, K, N = 1, 2, 100
REGIME = {"temp": 0.25, "top_p": 0.9}


@pytest.fixture(scope="module")
def tiny(draft):
    return draft.model, draft.encode("Why is the sky blue?")


@pytest.fixture(scope="module")
def plain_counts(tiny):
    model, prompt = tiny
    out = Counter()
    for seed in range(N):
        toks = [e["token"] for e in plain_generate(model, prompt, POSITION + 1, Sampling(**REGIME, seed=seed))]
        out[toks[POSITION]] += 1
    return out


def speculative_counts(model, prompt) -> tuple[Counter, Counter]:
    """Token counts at POSITION and the first round's accepted counts, over N seeds disjoint from plain's."""
    tokens, accepted = Counter(), Counter()
    for seed in range(N):
        ev = list(speculative_generate(model, prompt, DraftModelDrafter(model), K, POSITION + K + 1,
                                       Sampling(**REGIME, seed=1_000_000 + seed)))
        first_round = ev[1]
        assert len(first_round["drafted"]) == K  # the token at POSITION is decided by a verify with K drafts
        accepted[first_round["accepted"]] += 1
        out = [ev[0]["token"]] + [t for r in ev[1:] for t in r["emitted"]]
        tokens[out[POSITION]] += 1
    return tokens, accepted


def test_speculative_sampling_matches_plain_on_a_tiny_model(tiny, plain_counts):
    """Token frequencies at a drafted position over many seeds: speculative vs plain, two-sample chi-square."""
    spec, accepted = speculative_counts(*tiny)
    # both branches of the rule decided the token at POSITION many times
    assert accepted[0] >= N // 10 and N - accepted[0] >= N // 10, accepted
    stat, dof = chi2_two_sample(plain_counts, spec)
    assert dof >= 2
    p = chi2_sf(stat, dof)
    print(f"correct rule: chi-square {stat:.1f}, dof {dof}, p = {p:.3g}; first-round acceptance {dict(accepted)}")
    assert p > ALPHA, (stat, dof, p, plain_counts.most_common(5), spec.most_common(5))


@pytest.mark.slow  # a check of the test above (its power), not of specscope: `pytest -m slow`
def test_the_chi_square_detects_a_broken_rule(tiny, plain_counts, monkeypatch):
    """The same test, with a rule that accepts every draft: the distribution shifts and the test sees it."""

    from specscope.engine_adapter.engines.audit import AlwaysAccept  # the known-wrong rule check --engine's power uses

    monkeypatch.setattr(sampling_mod.Sampling, "verify", AlwaysAccept.verify)
    spec, accepted = speculative_counts(*tiny)
    assert accepted == Counter({K: N})
    stat, dof = chi2_two_sample(plain_counts, spec)
    p = chi2_sf(stat, dof)
    print(f"always-accept rule: chi-square {stat:.1f}, dof {dof}, p = {p:.3g}")
    assert p < ALPHA, (stat, dof, p, plain_counts.most_common(5), spec.most_common(5))


@pytest.mark.parametrize("temp", [0.0, 1.0])
def test_verify_evaluates_lazy_drafts_with_the_logits(temp):
    """An end-to-end round hands verify unevaluated drafts: same result as evaluated ones, tokens filled in."""
    logits = mx.random.normal((3, 16), key=mx.random.key(3))
    toks = mx.argmax(logits[:2], axis=-1).astype(mx.uint32)  # drafts the target agrees with
    s = Sampling(temp=temp, seed=1)
    lazy = Draft(None, array=toks)
    eager = Draft(toks.tolist())
    assert s.verify(logits, lazy, 5) == s.verify(logits, eager, 5)
    assert lazy.tokens == eager.tokens
