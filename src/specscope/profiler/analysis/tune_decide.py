"""When ``specscope tune`` may stop: once its recommendation is decided, at a level corrected for the looks.

Tune confirms two settings end to end (``tune_recommend.confirm_set``, "decide"): the best predicted one and its
nearest rival; the rest are ranked from the acceptance trace and the timings, never run. After each confirmation
repeat (from ``MIN_REPS`` on) it looks at two questions, each with an interval at ``look_level`` (Bonferroni over
the looks it may make, as ``run --until decided`` does: any look's interval misses its truth with at most 5%
chance in all):

- **the order**: the pick's measured speedup over the rival's, paired repeat by repeat (each repeat ran both, each
  beside a plain run of its own). Decided when the interval lies wholly above 1 (the pick is faster) or wholly within
  ±``AGREE`` of 1 (the two are equal within 5%: either is the recommendation);
- **the pick's verdict**: its prediction error's interval (paired, as ``tune_confirm.paired_error`` has it, or the
  prediction's over the measured one), judged by the one verdict rule: agrees or off.

Both decided: stop. Else at ``MAX_REPS`` it stops undecided and says so. Simulated in
``tests/profiler/analysis/test_tune_decide.py`` on skewed, drifting repeats with stalls: equal settings are called
different in 0.25% of confirmations, where a 95% interval looked at after every repeat (the negative control) does
so in 14.5%; a pick 10% faster is found before the cap in 68% and never reversed; one 6% faster is never called
equal. The pick's verdict under the same looks: ``test_tune_confirm.py``.
"""

from __future__ import annotations

import math

from specscope.profiler.analysis.sequential import look_level, t_quantile
from specscope.profiler.analysis.tune_confirm import MAX_REPS, MIN_INTERVAL_REPS, MIN_REPS
from specscope.profiler.analysis.verdict_rule import AGREE

LOOKS = MAX_REPS - MIN_REPS + 1   # one look after each repeat from MIN_REPS to MAX_REPS
LEVEL = look_level(LOOKS)         # each look's two-sided level (0.998 for 25 looks)

Pairs = list[tuple[float, float]]  # per repeat: (tokens, ms)


def order_interval(spec_a: Pairs, plain_a: Pairs, spec_b: Pairs, plain_b: Pairs,
                   level: float = LEVEL) -> tuple[float | None, list[float] | None]:
    """(setting a's pooled speedup ÷ setting b's, its interval at ``level``): the delta method over the repeats both
    ran (repeat i of each side paired), Student t on n − 1 degrees of freedom. None for the interval with fewer than
    ``MIN_INTERVAL_REPS`` repeats."""
    n = min(len(spec_a), len(plain_a), len(spec_b), len(plain_b))
    if n == 0:
        return None, None
    cols = [spec_a[:n], plain_a[:n], spec_b[:n], plain_b[:n]]
    tok = [[float(t) for t, _ in c] for c in cols]
    ms = [[float(m) for _, m in c] for c in cols]
    if min(min(sum(x) for x in tok), min(sum(x) for x in ms)) <= 0:
        return None, None
    mt = [sum(x) / n for x in tok]
    mm = [sum(x) / n for x in ms]
    rate = [t / m for t, m in zip(mt, mm)]
    ratio = (rate[0] / rate[1]) / (rate[2] / rate[3])
    if n < MIN_INTERVAL_REPS:
        return ratio, None
    sign = (1.0, -1.0, -1.0, 1.0)   # log ratio = log r_sa − log r_pa − log r_sb + log r_pb
    z = [sum(s * (tok[j][i] / mt[j] - ms[j][i] / mm[j]) for j, s in enumerate(sign)) for i in range(n)]
    zm = sum(z) / n
    se = math.sqrt(sum((x - zm) ** 2 for x in z) / (n - 1) / n)
    half = t_quantile(level, n - 1) * se
    return ratio, [ratio * math.exp(-half), ratio * math.exp(half)]


def order_state(interval: list[float] | None) -> str | None:
    """"faster" (the pick's speedup above the rival's), "equal" (within ±AGREE of it), "slower" (the rival measures
    faster: the pick changes) or None: not decided."""
    if not interval:
        return None
    lo, hi = interval
    if lo > 1.0:
        return "faster"
    if hi < 1.0:
        return "slower"
    if lo >= 1.0 / (1.0 + AGREE) and hi <= 1.0 + AGREE:
        return "equal"
    return None


def widen_relative(half: float | None, n: int, level: float = LEVEL) -> float | None:
    """A 95% relative half-width (t95 on n − 1 degrees of freedom) at ``level`` instead."""
    if half is None or n < MIN_INTERVAL_REPS:
        return None
    return half * t_quantile(level, n - 1) / t_quantile(0.95, n - 1)
