"""Speculative sampling at temperature keeps the plain sampling distribution (tested statistically)."""

from collections import Counter

import mlx.core as mx
import numpy as np
import pytest

from specscope.engine_adapter.decoding import plain_generate, speculative_generate
from specscope.engine_adapter.drafters import Draft, DraftModelDrafter, NgramDrafter
from specscope.engine_adapter.sampling import Sampling

def chi2_critical(dof: int, z: float = 3.090) -> float:
    """Upper 0.999 quantile of chi-square (Wilson–Hilferty; within ~1% for dof ≥ 3)."""
    a = 2.0 / (9.0 * dof)
    return dof * (1 - a + z * a**0.5) ** 3


def chi2_two_sample(a: Counter, b: Counter, min_count=5):
    """Chi-square homogeneity statistic and degrees of freedom, rare tokens pooled."""
    keys = sorted(set(a) | set(b))
    common = [k for k in keys if a[k] + b[k] >= min_count]
    rows = [(a[k], b[k]) for k in common]
    rest = (sum(a[k] for k in keys if k not in common), sum(b[k] for k in keys if k not in common))
    if sum(rest):
        rows.append(rest)
    na, nb = sum(a.values()), sum(b.values())
    stat = 0.0
    for x, y in rows:
        tot = x + y
        ea, eb = tot * na / (na + nb), tot * nb / (na + nb)
        stat += (x - ea) ** 2 / ea + (y - eb) ** 2 / eb
    return stat, len(rows) - 1


def test_accept_reject_rule_preserves_target_distribution():
    """Exact check of the rule on fixed distributions: first emitted token ~ p_0, for any q."""
    p_logits = mx.log(mx.array([[0.5, 0.3, 0.15, 0.05], [0.1, 0.2, 0.3, 0.4]]))
    q = mx.array([[0.1, 0.6, 0.2, 0.1]])
    s = Sampling(temp=1.0)
    p0 = np.array([0.5, 0.3, 0.15, 0.05])
    counts = np.zeros(4)
    n = 6000
    for seed in range(n):
        s = Sampling(temp=1.0, seed=seed)
        draft_token = int(np.random.default_rng(10_000 + seed).choice(4, p=np.array(q[0])))
        accepted, bonus, _ = s.verify(p_logits, Draft([draft_token], probs=q), None, 0)
        first = draft_token if accepted == 1 else bonus
        counts[first] += 1
    expected = p0 * n
    stat = float(((counts - expected) ** 2 / expected).sum())
    assert stat < chi2_critical(3), (counts, expected)


def test_point_mass_rule_preserves_target_distribution():
    p_logits = mx.log(mx.array([[0.6, 0.25, 0.1, 0.05], [0.25, 0.25, 0.25, 0.25]]))
    p0 = np.array([0.6, 0.25, 0.1, 0.05])
    counts = np.zeros(4)
    n = 6000
    for seed in range(n):
        accepted, bonus, _ = Sampling(temp=1.0, seed=seed).verify(p_logits, Draft([1]), None, 0)
        counts[1 if accepted else bonus] += 1
    stat = float(((counts - p0 * n) ** 2 / (p0 * n)).sum())
    assert stat < chi2_critical(3), counts


def test_top_p_filter():
    s = Sampling(temp=1.0, top_p=0.7)
    p = np.array(s.probs(mx.log(mx.array([0.5, 0.3, 0.15, 0.05]))))
    assert p == pytest.approx([0.5 / 0.8, 0.3 / 0.8, 0.0, 0.0])


@pytest.mark.parametrize("which", ["ngram", "draft"])
def test_speculative_sampling_matches_plain_on_a_tiny_model(which, draft, prompt):
    """Token frequencies at one position over many seeds: speculative vs plain sampling, two-sample chi-square."""
    target = draft  # the small demo model keeps this fast
    position, n = 1, 120
    plain, spec = Counter(), Counter()
    for seed in range(n):
        s = Sampling(temp=0.25, top_p=0.9, seed=seed)
        toks = [e.token for e in plain_generate(target.model, prompt, position + 1, s)]
        plain[toks[position]] += 1
        drafter = NgramDrafter() if which == "ngram" else DraftModelDrafter(target.model)
        ev = list(speculative_generate(target.model, prompt, drafter, 2, position + 1, s))
        out = [ev[0].token] + [t for r in ev[1:] for t in r.emitted]
        spec[out[position]] += 1
    stat, dof = chi2_two_sample(plain, spec)
    assert dof >= 1
    assert stat < chi2_critical(dof), (stat, dof, plain.most_common(5), spec.most_common(5))
