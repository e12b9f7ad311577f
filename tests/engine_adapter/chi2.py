"""Chi-square helpers for the tests that check speculative sampling's output distribution (decode/test_sampling,
drafters/test_dflash): importable as ``chi2`` from any test under tests/engine_adapter (its conftest's folder is on
the path)."""

import math
from collections import Counter

import numpy as np


def chi2_sf(x: float, dof: int) -> float:
    """P(X ≥ x) for X ~ chi-square(dof): the regularized upper incomplete gamma Q(dof/2, x/2)."""
    a, x = dof / 2.0, x / 2.0
    if x <= 0:
        return 1.0
    log_front = -x + a * math.log(x) - math.lgamma(a)
    if x < a + 1:  # series for P(a, x)
        term = total = 1.0 / a
        n = a
        while abs(term) > abs(total) * 1e-15:
            n += 1
            term *= x / n
            total += term
        return max(0.0, 1.0 - total * math.exp(log_front))
    # continued fraction for Q(a, x) (modified Lentz)
    tiny = 1e-300
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = d if abs(d) > tiny else tiny
        c = b + an / c
        c = c if abs(c) > tiny else tiny
        d = 1 / d
        h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return math.exp(log_front) * h


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


def chi2_goodness_of_fit(counts: np.ndarray, probs: np.ndarray) -> float:
    """P-value of observed counts against known probabilities."""
    expected = probs * counts.sum()
    return chi2_sf(float(((counts - expected) ** 2 / expected).sum()), len(counts) - 1)
