"""The verdict as soon as it can be known, without the bias of looking again and again.

``run --until decided`` adds cases (the suite again, ABBA order intact) and looks at the verdict after each one, until
it is decided or a cap is reached. A 95% interval looked at after every case is not a 95% interval of the whole
procedure: each look is another chance for noise to push it wholly inside or outside ±5%. So each of at most
``max_looks`` looks uses a (1 − 0.05 / max_looks) interval (Bonferroni: the chance that any look's interval misses the
truth is at most 5%), and the one verdict rule (``verdict_rule.decide``) judges that wider interval.

Simulated in ``tests/profiler/analysis/test_sequential.py``: with the true error at 0 or ±2.5% a decided verdict says
"agrees", and at ±7.5% "off", at least 93% of the time; the naive repeated look (a 95% interval every time) does not.
"""

from __future__ import annotations

import math
from statistics import NormalDist

ALPHA = 0.05
# ``run --until decided``'s cap without ``--cases``: the suite cycled to this many cases (the built-in 18 allowed 11
# looks, and the demo's MTP head, about +1% off with a ±2.5% interval at 18 cases, stopped undecided in two of four
# sessions); at about 8 s a case on the demo, some 5 minutes at most
UNTIL_DECIDED_CASES = 40


def look_level(max_looks: int) -> float:
    """The two-sided confidence of each look's interval when at most ``max_looks`` are made."""
    return 1.0 - ALPHA / max(1, max_looks)


def t_quantile(level: float, df: float) -> float:
    """Student's t quantile for a two-sided ``level`` interval (Cornish-Fisher in 1/df, as ``uncertainty.t95``)."""
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    if df <= 0:
        return math.inf
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def widen(interval: list[float] | None, point: float | None, df: float, level: float) -> list[float] | None:
    """A 95% interval about ``point`` stretched to ``level`` (each side by the ratio of the t quantiles)."""
    if not interval or point is None:
        return interval
    f = t_quantile(level, df) / t_quantile(0.95, df)
    return [point - (point - interval[0]) * f, point + (interval[1] - point) * f]
