"""``specscope tune``'s confirmation (step 5 of ``profiler.analysis.tune``): what the measured speedup is, how well it is
known, and what the prediction's error then says.

The prediction is a ratio of means (``tune_predict``: E(k) · mean T_decode over a mean round), so the measured side is
the same estimand: the pooled rates, speculative tok/s over plain tok/s, with every repeat's tokens and time summed
(``rate_ratio``). A median of per-repeat ratios estimates something else: with right-skewed stalls it sits below the
ratio of means (it ignores the stalls the rates pay), so an unbiased prediction would read optimistic against it.

Its 95% interval is the delta method over the paired repeats (each repeat a speculative run and the plain run made
right before it) with Student's t on n − 1 degrees of freedom. Simulated coverage (``tests/profiler/analysis/
test_tune_confirm.py``) on skewed, drifting, stalling repeats: 96% from 3 to 10 repeats, 94–95% at 15; a percentile
bootstrap over the same repeats covers 84–90%, and the normal quantile in place of t 83% at three.
"""

from __future__ import annotations

import math

from specscope.profiler.analysis.uncertainty import t95

from specscope.profiler.analysis.verdict_rule import AGREE
MIN_REPS, MAX_REPS = 6, 15
MIN_INTERVAL_REPS = 3  # fewer paired repeats: no interval (the spread of two pairs says little)


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def rate_ratio(spec: list[tuple[float, float]], plain: list[tuple[float, float]],
               t_quantile=t95) -> tuple[float | None, list[float] | None]:
    """The pooled speedup (Σ tokens_s / Σ ms_s) ÷ (Σ tokens_p / Σ ms_p) over paired repeats ((tokens, ms) each, the
    i-th speculative run beside the i-th plain run), and its 95% interval (delta method, Student t), or None for the
    interval with fewer than ``MIN_INTERVAL_REPS`` pairs. ``t_quantile(df)``: replaceable to show what a worse
    quantile does (the coverage test)."""
    if len(spec) != len(plain):
        raise ValueError("speculative and plain repeats must pair up")
    if not spec:
        return None, None
    a, b = [float(t) for t, _ in spec], [float(m) for _, m in spec]
    c, d = [float(t) for t, _ in plain], [float(m) for _, m in plain]
    if min(sum(a), sum(b), sum(c), sum(d)) <= 0:
        return None, None
    ma, mb, mc, md = _mean(a), _mean(b), _mean(c), _mean(d)
    ratio = (ma / mb) / (mc / md)
    n = len(spec)
    if n < MIN_INTERVAL_REPS:
        return ratio, None
    # the linearised ratio per pair: how much each repeat moves log R, times R
    z = [ratio * (ai / ma - bi / mb - ci / mc + di / md) for ai, bi, ci, di in zip(a, b, c, d)]
    zm = _mean(z)
    se = math.sqrt(sum((x - zm) ** 2 for x in z) / (n - 1) / n)
    half = t_quantile(n - 1) * se
    return ratio, [ratio - half, ratio + half]


def precise(interval: list[float] | None, value: float | None) -> bool:
    """Known to ±AGREE: the interval's half-width within AGREE of the value."""
    return bool(interval and value and (interval[1] - interval[0]) / 2.0 <= AGREE * value)


def agreement(error: float | None, predicted: float, measured_ci: list[float] | None, n: int,
              predicted_ci: list[float] | None = None) -> dict | None:
    """What a confirmation says about a prediction, by the project's one rule (``verdict_rule.decide``) on the error's
    interval — the prediction's interval over the measured one: ``agrees`` (wholly within ±AGREE), ``off`` (wholly
    beyond) or ``too_little_data``. No interval (fewer than ``MIN_INTERVAL_REPS`` repeats) decides nothing."""
    from specscope.profiler.analysis.verdict_rule import decide

    if error is None:
        return None
    iv = None
    if measured_ci and measured_ci[0] > 0:
        p_lo, p_hi = predicted_ci if predicted_ci else (predicted, predicted)
        iv = [p_lo / measured_ci[1] - 1.0, p_hi / measured_ci[0] - 1.0]
    out = decide(error, iv, units=n, min_units=MIN_INTERVAL_REPS, unit="repeats")
    return {"state": out["state"], "text": out["text"], "half_width": out["half_width"], "interval": out["interval"],
            "data_needed": out["data_needed"]}
