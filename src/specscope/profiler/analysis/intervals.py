"""Intervals on the numbers a session reports, and the one rule for a time whose interval reaches zero.

Pure Python, no MLX, no Qt. Everything here is interval arithmetic on plain numbers:

- a mean over many samples (steps, rounds) gets its 95% confidence interval (normal approximation);
- a figure measured once per repeat, or per rep, gets its spread (lowest, highest);
- acceptance, E and the prediction error get theirs in ``uncertainty`` (resampled or pooled by independent
  unit: the round or the case), never by combining the worst ends of intervals of correlated figures;

``noise_state`` is the rule every view, report and CSV applies to an estimated time (a barrier-free
estimate, the inter-block overhead): an interval that straddles zero is "below noise"; one that lies wholly
below zero is a measured effect of the ruler, not noise, and is named as one ("ruler bias": the barrier ruler's
per-block syncs cost more than the gap between blocks), with its value and interval; never a negative time.
"""

from __future__ import annotations

import math

from specscope.profiler.analysis.stats import Z95

BELOW_NOISE = "below noise"
RULER_BIAS = "ruler bias"
NOISE, BIAS, MEASURED = "noise", "bias", "measured"


def span(xs) -> list[float] | None:
    """[lowest, highest] of the values (None skipped); None for none."""
    xs = [x for x in xs if x is not None]
    return [min(xs), max(xs)] if xs else None


def mean_ci(xs, z: float = Z95) -> list[float] | None:
    """95% confidence interval of the mean (normal approximation); None below two samples."""
    xs = [x for x in xs if x is not None]
    n = len(xs)
    if n < 2:
        return None
    m = math.fsum(xs) / n
    var = math.fsum((x - m) ** 2 for x in xs) / (n - 1)
    half = z * math.sqrt(var / n)
    return [m - half, m + half]


def union(*intervals) -> list[float] | None:
    """The smallest interval holding every given one (None ones skipped)."""
    ivs = [iv for iv in intervals if iv]
    return [min(iv[0] for iv in ivs), max(iv[1] for iv in ivs)] if ivs else None


def rate_interval(n_tokens: int, round_ms: list[float]) -> list[float] | None:
    """tok/s of ``n_tokens`` made over these rounds, with the round time's mean at its 95% bounds."""
    iv = mean_ci(round_ms)
    if iv is None or not n_tokens:
        return None
    n = len([x for x in round_ms if x is not None])
    lo_ms, hi_ms = iv
    return [1000.0 * n_tokens / (n * hi_ms), 1000.0 * n_tokens / (n * lo_ms) if lo_ms > 0 else math.inf]


def within(x: float, iv) -> bool:
    return bool(iv) and iv[0] <= x <= iv[1]


def noise_state(value, interval=None) -> str | None:
    """What an estimated time is: "measured" (its interval lies above zero), "noise" (the interval straddles zero,
    or, with no interval, the value is at or below zero), "bias" (the interval lies wholly below zero: a measured
    effect of the ruler, e.g. barriers that cost more than the gap they time). None when not measured."""
    if value is None:
        return None
    if interval:
        if interval[1] < 0.0:
            return BIAS
        return NOISE if interval[0] <= 0.0 else MEASURED
    return NOISE if value <= 0.0 else MEASURED


def below_noise(value, interval=None) -> bool:
    """An estimated time that is noise: its interval straddles zero (with no interval, a value at or below zero).
    An interval wholly below zero is a ruler bias (``noise_state``), not noise. None (not measured) is not noise."""
    return noise_state(value, interval) == NOISE


def not_a_time(value, interval=None) -> bool:
    """Noise or a ruler bias: either way not a time to print as one."""
    return noise_state(value, interval) in (NOISE, BIAS)


def bias_text(value, interval, spec: str = ".2f", unit: str = "") -> str:
    """"ruler bias −3.20 ms (−5.10…−1.40)": a measured effect of the ruler, with its value and interval."""
    return f"{RULER_BIAS} {value:{spec}}{unit} ({interval[0]:{spec}}…{interval[1]:{spec}})"


def noise_label(value, interval=None, spec: str = ".2f") -> str | None:
    """The label that replaces an estimated time that is not one ("below noise" / "ruler bias …"), else None."""
    state = noise_state(value, interval)
    if state == NOISE:
        return BELOW_NOISE
    if state == BIAS:
        return bias_text(value, interval, spec)
    return None


def time_text(value, interval=None, spec: str = ".2f", unit: str = "", none: str = "—") -> str:
    """An estimated time as text: "below noise" when its interval straddles zero, "ruler bias …" when it lies wholly
    below zero, else the value (never a negative time)."""
    if value is None:
        return none
    state = noise_state(value, interval)
    if state == NOISE:
        return BELOW_NOISE
    if state == BIAS:
        return bias_text(value, interval, spec, unit)
    return f"{value:{spec}}{unit}"


def draft_time_text(value, interval=None, spec: str = ".2f", unit: str = "", none: str = "—") -> str:
    """T_draft as text. Timed as what drafting adds to a round (a round less the verify before it), it is a
    difference: at or below zero, or with an interval that reaches zero, it is "below noise", never a negative time."""
    if value is None:
        return none
    if value <= 0.0 or (interval and interval[0] <= 0.0):
        return BELOW_NOISE
    return f"{value:{spec}}{unit}"


RULER_BIAS_NOTE = ("ruler bias: the barrier ruler's per-block syncs cost more than the gap between blocks, so the "
                   "whole graph ran faster than the sum of its barrier-timed blocks")


def spread_text(interval, spec: str = ".2f") -> str:
    """"lo–hi" (for a spread or an interval), or "" when there is none."""
    if not interval:
        return ""
    lo, hi = interval
    return f"{max(lo, 0.0):{spec}}–{hi:{spec}}"
