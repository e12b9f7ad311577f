"""95% intervals of the headline figures, by independent unit (``summary_intervals`` uses them).

A rate is a ratio of sums (tokens ÷ time), and its steps are not independent: a case has its own cost (its context,
its content), and the steps of one case drift and stall together. An interval that treats every step as an
independent draw is far too narrow. So every figure here is taken over units:

- with at least ``CASES_AS_UNIT`` cases, the **case** is the unit (all its steps, rounds or samples together), and the
  interval is for the population of cases the suite samples (each case's own cost is part of the noise);
- with fewer, the unit is a **block** of ``BLOCK`` consecutive steps or rounds within a case; the interval is for
  these cases on this machine (their own costs fixed; time noise, drift and stalls random), and conservative: the
  cases' cost differences widen a rate's (97–99% simulated; stratified by case it covered 92–94%, the blocks'
  short-range correlation left in), while the speedup takes each case as a stratum on each side (98%). Component
  timings (T_verify, T_draft) with fewer cases get no interval: a handful of correlated samples per case does not
  support one (simulated: 88% at best).

Each is the delta method on the ratio of sums (each unit's linearised contribution), with Student's t on the units'
degrees of freedom; the measured speedup pairs a case's two sides (cases as units) or adds the two sides' variances
(strata of blocks). Coverage is simulated in ``tests/profiler/analysis/test_unit_intervals.py`` with autocorrelated
steps, a drift over the run, stalls and per-case offsets (with cases as units: 96% for rates, 94–95% for the speedup,
94% for component means), each with a negative control — the step-as-unit interval the summary showed before — that fails there.
"""

from __future__ import annotations

import math

import numpy as np

from specscope.profiler.analysis.uncertainty import CASES_AS_UNIT, t95

BLOCK = 24         # consecutive steps or rounds in a block unit (fewer cases than CASES_AS_UNIT)
MIN_UNITS = 3      # fewer units: no interval
# The interval is the delta method's on the log scale: a figure whose standard error is more than half of it (a mean
# near zero, e.g. an oracle's draft time: a round minus its verify) has no interval there, and none is given (its
# exp once overflowed and crashed a summary).
MAX_RELATIVE_SE = 0.5

Series = list[list[tuple[float, float]]]  # per case, (numerator, denominator) items: a step (1, ms), a round (tokens, ms)


def units(series: Series, block: int | None = None) -> tuple[str, list[tuple[float, float]]]:
    """(unit name, [(numerator, denominator)]) from per-case series of (numerator, denominator) items — a step is
    (1 token, ms), a round (its tokens, ms), a timing sample (ms, 1): cases when there are enough, else blocks."""
    cases = [s for s in series if s]
    if len(cases) >= CASES_AS_UNIT:
        return "cases", [(math.fsum(a for a, _ in s), math.fsum(b for _, b in s)) for s in cases]
    out = []
    size = block or BLOCK
    for s in cases:
        for i in range(0, len(s), size):
            b = s[i:i + size]
            out.append((math.fsum(a for a, _ in b), math.fsum(d for _, d in b)))
    return "blocks", out


def _side(strata: list[list[tuple[float, float]]]) -> tuple[float, float, int] | None:
    """(Σa ÷ Σb, its relative variance, degrees of freedom) over strata of units (one stratum: no strata)."""
    if any(len(st) < 2 for st in strata):
        return None
    a = np.concatenate([np.array(st, dtype=float)[:, 0] for st in strata])
    b = np.concatenate([np.array(st, dtype=float)[:, 1] for st in strata])
    if b.sum() <= 0 or a.sum() <= 0:
        return None
    r = a.sum() / b.sum()
    var, df, start = 0.0, 0, 0
    for st in strata:
        n = len(st)
        z = (a[start:start + n] - r * b[start:start + n]) / b.sum()
        var += n / (n - 1) * float(((z - z.mean()) ** 2).sum())
        df += n - 1
        start += n
    return r, var / r**2, df


def ratio_interval(series: Series, scale: float = 1.0, block: int | None = None,
                   cases_only: bool = False) -> list[float] | None:
    """95% interval of scale · Σ numerator ÷ Σ denominator (a rate, a mean), by unit; ``cases_only``: no interval
    from blocks (component timings)."""
    name, us = units(series, block)
    if name == "blocks" and cases_only:
        return None
    # blocks are not stratified by case here: the cases' own cost differences widen it (conservative: it covers more
    # than 95% for these cases; stratified, the blocks' short-range correlation left it at 92-94%)
    side = _side([us]) if len(us) >= MIN_UNITS else None
    if side is None or side[2] < MIN_UNITS - 1:
        return None
    r, rel_var, df = side
    if math.sqrt(rel_var) > MAX_RELATIVE_SE:
        return None
    half = t95(df) * math.sqrt(rel_var)
    return [scale * r * math.exp(-half), scale * r * math.exp(half)]


def speedup_interval(spec: Series, plain: Series, block: int | None = None) -> list[float] | None:
    """95% interval of (Σ spec tokens ÷ Σ spec ms) ÷ (Σ plain tokens ÷ Σ plain ms). With enough cases a case's two
    sides are paired (they share its cost); with fewer, each case is a stratum of blocks on each side and the two
    sides' variances add (their short-range noise is independent)."""
    pairs = [(s, p) for s, p in zip(spec, plain) if s and p]
    if len(pairs) >= CASES_AS_UNIT:
        cols = np.array([[math.fsum(a for a, _ in s), math.fsum(b for _, b in s),
                          math.fsum(a for a, _ in p), math.fsum(b for _, b in p)] for s, p in pairs], dtype=float)
        tot = cols.sum(axis=0)
        rs, rp = tot[0] / tot[1], tot[2] / tot[3]
        u = (cols[:, 0] - rs * cols[:, 1]) / tot[1] / rs - (cols[:, 2] - rp * cols[:, 3]) / tot[3] / rp
        n = len(pairs)
        half = t95(n - 1) * math.sqrt(n / (n - 1) * float(((u - u.mean()) ** 2).sum()))
        return [rs / rp * math.exp(-half), rs / rp * math.exp(half)]
    s_side = _side([units([s], block)[1] for s, _ in pairs]) if pairs else None
    p_side = _side([units([p], block)[1] for _, p in pairs]) if pairs else None
    if s_side is None or p_side is None:
        return None
    (rs, vs, dfs), (rp, vp, dfp) = s_side, p_side
    half = t95(min(dfs, dfp)) * math.sqrt(vs + vp)
    return [rs / rp * math.exp(-half), rs / rp * math.exp(half)]
