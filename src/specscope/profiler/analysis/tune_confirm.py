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

The error's interval. Where the confirmation's rounds are the walked ones (greedy decoding, a trace of the same
prompts: E(k) exact), the prediction and the measurement are paired repeat by repeat: each repeat's predicted round is
priced from the timings re-taken right before and after its own pair, and T_decode is the same plain runs' on both
sides, so it cancels: predicted ÷ measured = E(k) · Σ round ms ÷ (Σ tokens · mean predicted round). Its interval is
the delta method over the repeats (``paired_error``), Student's t: drift that moves a repeat's timings and its rounds
alike cancels instead of adding, as it does in the unpaired bound (the prediction's interval over the measured one,
half-widths added), which stays for a what-if or sampled acceptance. The confirmations stop on the verdict once it is
decided at a level corrected for the looks (``tune_decide``), so looking after every repeat does not bias it
(simulated, with a negative control that stops on a 95% interval, in ``test_tune_confirm.py``).
"""

from __future__ import annotations

import math

from specscope.profiler.analysis.records import Agreement
from specscope.profiler.analysis.uncertainty import t95

MIN_REPS, MAX_REPS = 6, 30  # adaptive repeats: the first look, and the cap
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


def paired_error(rounds: list[tuple[float, float]], costs: list[float],
                 t_quantile=t95) -> tuple[float | None, float | None]:
    """Predicted ÷ measured over paired repeats, as a factor of E(k): ``rounds`` each repeat's (tokens, ms) over its
    full rounds, ``costs`` each repeat's predicted round (ms) from the timings taken beside its pair. Returns
    (Σms ÷ (Σtokens · mean cost), the 95% interval's relative half-width: Student t × the delta method's standard
    error over the repeats), the half-width None with fewer than ``MIN_INTERVAL_REPS`` repeats. ``t_quantile(df)``:
    replaceable (the coverage test's negative control)."""
    if len(rounds) != len(costs):
        raise ValueError("rounds and predicted costs must pair up")
    if not rounds or min(sum(t for t, _ in rounds), sum(m for _, m in rounds), min(costs)) <= 0:
        return None, None
    a, b = [float(t) for t, _ in rounds], [float(m) for _, m in rounds]
    ma, mb, mc = _mean(a), _mean(b), _mean(costs)
    n = len(rounds)
    factor = mb / (ma * mc)
    if n < MIN_INTERVAL_REPS:
        return factor, None
    z = [bi / mb - ai / ma - ci / mc for ai, bi, ci in zip(a, b, costs)]
    zm = _mean(z)
    se = math.sqrt(sum((x - zm) ** 2 for x in z) / (n - 1) / n)
    return factor, t_quantile(n - 1) * se


def agreement(error: float | None, predicted: float, measured_ci: list[float] | None, n: int,
              predicted_ci: list[float] | None = None, paired_half: float | None = None,
              level: float = 0.95) -> Agreement | None:
    """What a confirmation says about a prediction, by the project's one rule (``verdict_rule.decide``) on the error's
    interval: ``agrees`` (wholly within ±AGREE), ``off`` (wholly beyond) or ``too_little_data``. The interval is the
    paired one (``paired_half``, relative, from ``paired_error``) when given, else the prediction's interval over the
    measured one. No interval (fewer than ``MIN_INTERVAL_REPS`` repeats) decides nothing. ``level``: the intervals'
    level (a look's corrected one when the repeats stop on the verdict, ``tune_decide``), said in the text."""
    from specscope.profiler.analysis.verdict_rule import decide

    if error is None:
        return None
    iv = None
    if paired_half is not None:
        iv = [(1.0 + error) * (1.0 - paired_half) - 1.0, (1.0 + error) * (1.0 + paired_half) - 1.0]
    elif measured_ci and measured_ci[0] > 0:
        p_lo, p_hi = predicted_ci if predicted_ci else (predicted, predicted)
        iv = [p_lo / measured_ci[1] - 1.0, p_hi / measured_ci[0] - 1.0]
    out = decide(error, iv, units=n, min_units=MIN_INTERVAL_REPS, unit="repeats", level=level, look="repeat")
    return {"state": out["state"], "text": out["text"], "half_width": out["half_width"], "interval": out["interval"],
            "data_needed": out["data_needed"], "interval_kind": "paired" if paired_half is not None else "unpaired",
            "level": level}
