"""Chi-square tail and the two-sample homogeneity test: the distribution checks' arithmetic, in one place.

No SciPy: the regularized upper incomplete gamma by its series and its continued fraction (Numerical Recipes 6.2),
checked against tables in the tests.
"""

from __future__ import annotations

import math
from collections import Counter


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
    tiny = 1e-300  # continued fraction for Q(a, x) (modified Lentz)
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


def two_sample(a: Counter, b: Counter, min_count: int = 5) -> tuple[float, int, float]:
    """Homogeneity of two samples of tokens: (statistic, degrees of freedom, p-value), rare tokens pooled."""
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
    dof = len(rows) - 1
    return stat, dof, chi2_sf(stat, dof) if dof > 0 else 1.0
