"""Intervals whose coverage is what they claim, and a verdict that can fail. Pure Python + numpy; no MLX, no Qt.

**Acceptance.** The k drafts of a round are not independent trials (after the first rejection every later draft is
rejected) and the rounds of one prompt are correlated (bursty content), so a Wilson interval on accepted ÷ drafted
treats far more evidence as independent than there is (DESIGN §6: its nominal 95% covers 66–88%). Here the
independent unit is the round or, with enough cases, the whole case: the ratio estimator's variance over units
(A_u accepted of D_u drafted) gives an effective number of trials, n_eff = p(1 − p) / var(p̂), and the interval is
Wilson's at n_eff with Student's t quantile for the number of units (tested by simulation to cover ≥ 93% at
α 0.5–0.8, k 2–7, 20–60 rounds, and with bursty spans over cases; the per-token Wilson interval does not).

**The prediction error.** predicted ÷ measured = E · (1000 / spec tok/s) ÷ (T_verify + T_draft): T_decode cancels,
and E and the measured speed come from the same rounds. So the interval resamples them *together*: the unit
(a case, or a block of consecutive measured rounds when there are too few cases) carries its tokens, its time, its
accepted count and rounds, and the component timings taken at it; a percentile bootstrap over units gives the
interval (widened for few units by Student's t, tested by simulation to cover ≥ 93%). No worst-end combination of
independent intervals.

**The verdict.** "Within noise" only when the interval is narrow enough to matter (half-width ≤ ``JUDGEABLE``) and
holds zero; "off" when it is narrow and excludes zero; otherwise — wider, or from fewer than ``MIN_UNITS`` independent
units — "too little data to judge (±X%)", with how many more cases (or tokens per case) would do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

JUDGEABLE = 0.05            # a verdict needs the error's 95% interval no wider than ±5%
MIN_UNITS = 8               # ... and at least this many independent units (fewer: a bootstrap has too few distinct draws)
CASES_AS_UNIT = 6           # from this many cases on, the case is the unit (rounds of one prompt correlate)
ROUND_BLOCK = 4             # fewer cases: blocks of this many consecutive measured rounds are the unit
BOOTSTRAP = 2000            # resamples
_SEED = 20261201            # a fixed seed: the same session always gives the same interval (live = reference)

WITHIN_NOISE, OFF, TOO_LITTLE = "within_noise", "off", "too_little_data"


def t95(df: int) -> float:
    """Student's t 97.5% quantile (two-sided 95%) for ``df`` degrees of freedom (Hill's approximation, < 1e-4 off)."""
    if df <= 0:
        return math.inf
    if df == 1:
        return 12.706204736174698
    if df == 2:
        return 4.302652729749464
    if df == 3:
        return 3.182446305284263
    z = 1.959963984540054
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def _wilson(p: float, n: float, z: float) -> list[float]:
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(max(p * (1 - p) / n + z * z / (4 * n * n), 0.0)) / denom
    return [float(max(0.0, centre - half)), float(min(1.0, centre + half))]


def proportion_interval(accepted: Sequence[float], drafted: Sequence[float]) -> list[float] | None:
    """95% interval of Σ accepted ÷ Σ drafted with each (accepted, drafted) pair one independent unit."""
    a = np.asarray(accepted, dtype=float)
    d = np.asarray(drafted, dtype=float)
    keep = d > 0
    a, d = a[keep], d[keep]
    n = len(d)
    if n < 2:
        return None
    total = d.sum()
    p = a.sum() / total
    resid = a - p * d
    var = n / (n - 1) * float((resid**2).sum()) / total**2
    z = t95(n - 1)
    if var <= 0 or not 0 < p < 1:
        n_eff = float(n)  # every unit agreed: as much evidence as one trial per unit, no more
    else:
        n_eff = min(p * (1 - p) / var, float(total))
    return _wilson(p, n_eff, z)


def rounds_interval_from_sums(rounds: int, accepted: int, squares: int, k: int) -> list[float] | None:
    """``rounds_interval`` from running sums (rounds, Σ accepted, Σ accepted²), for a series that grows."""
    if rounds < 2:
        return None
    total = rounds * k
    p = accepted / total
    # Σ (a − p·k)² = Σ a² − 2 p k Σ a + n (p k)²
    ss = squares - 2 * p * k * accepted + rounds * (p * k) ** 2
    var = rounds / (rounds - 1) * max(ss, 0.0) / total**2
    z = t95(rounds - 1)
    n_eff = float(rounds) if var <= 0 or not 0 < p < 1 else min(p * (1 - p) / var, float(total))
    return _wilson(p, n_eff, z)


def rounds_interval(hist, k: int) -> list[float] | None:
    """The per-token acceptance interval with the round as the unit, from a histogram accepted count -> rounds."""
    acc, dr = [], []
    for n, c in hist.items():
        acc += [n] * c
        dr += [k] * c
    return proportion_interval(acc, dr)


# -- the prediction error, resampled by unit -------------------------------------------------------------------

def prediction_units(cases: list[dict], k: int) -> tuple[str, list[dict]]:
    """The resampling units of a session's prediction: ("cases" | "round blocks", units). Each unit holds the
    measured rounds' tokens and time, the accepted count and number of counted (full, first-repeat) rounds, and
    the component timings (verify, draft: sum and count) taken with it. ``cases``: per case ``{"rounds": [...],
    "components": {...} | None}`` with ``rounds`` the measured rounds in order, each ``(emitted, ms, accepted,
    counted)``."""
    with_rounds = [c for c in cases if c["rounds"]]
    if len(with_rounds) >= CASES_AS_UNIT:
        return "cases", [_unit(c["rounds"], c.get("components")) for c in with_rounds]
    units = []
    for c in with_rounds:
        rs = c["rounds"]
        blocks = [rs[i:i + ROUND_BLOCK] for i in range(0, len(rs), ROUND_BLOCK)]
        comp = c.get("components") or {}
        ver, dra = list(comp.get("verify_ms") or []), list(comp.get("draft_ms") or [])
        for j, b in enumerate(blocks):  # the case's component samples spread over its blocks, each used once
            units.append(_unit(b, {"verify_ms": ver[j::len(blocks)], "draft_ms": dra[j::len(blocks)]}))
    return "round blocks", units


def _unit(rounds, comp) -> dict:
    comp = comp or {}
    v, d = [x for x in comp.get("verify_ms") or [] if x is not None], [x for x in comp.get("draft_ms") or [] if x is not None]
    return {"tokens": sum(r[0] for r in rounds), "ms": math.fsum(r[1] for r in rounds),
            "accepted": sum(r[2] for r in rounds if r[3]), "counted": sum(1 for r in rounds if r[3]),
            "v_sum": math.fsum(v), "v_n": len(v), "d_sum": math.fsum(d), "d_n": len(d)}


def error_interval(units: list[dict], reps: int = BOOTSTRAP) -> list[float] | None:
    """95% percentile-bootstrap interval of predicted ÷ measured − 1 over the units, resampled together."""
    if len(units) < 2:
        return None
    cols = {key: np.array([u[key] for u in units], dtype=float) for key in units[0]}
    rng = np.random.default_rng(_SEED)
    idx = rng.integers(0, len(units), size=(reps, len(units)))

    def s(key):
        return cols[key][idx].sum(axis=1)

    with np.errstate(divide="ignore", invalid="ignore"):
        rate = 1000.0 * s("tokens") / s("ms")                 # measured speculative tok/s
        e = 1.0 + s("accepted") / s("counted")                # tokens per round
        round_ms = s("v_sum") / s("v_n") + s("d_sum") / s("d_n")
        ratio = e * 1000.0 / (rate * round_ms)
    ratio = ratio[np.isfinite(ratio)]
    if len(ratio) < reps // 2:
        return None
    lo, hi, mid = percentiles_and_median(ratio)
    # Few units: a percentile bootstrap is too narrow (its variance is (n−1)/n of the plug-in's and its tails are
    # normal ones). Widen it about its centre by Student's t over z and √(n/(n−1)), as a t interval would be.
    n = len(units)
    widen = t95(n - 1) / 1.959963984540054 * math.sqrt(n / (n - 1))
    return [mid - (mid - lo) * widen - 1.0, mid + (hi - mid) * widen - 1.0]


def percentiles_and_median(x: np.ndarray, q: tuple[float, float] = (2.5, 97.5)) -> tuple[float, float, float]:
    """``np.percentile(x, q)`` and ``np.median(x)`` of finite ``x``, the same numbers bit for bit (numpy's default
    linear method, its interpolation written out; tested against numpy), from one sort: numpy's own import
    ``numpy.ma`` when first called, some 10 ms of the app's start (a session opened shows this interval)."""
    s = np.sort(x)
    n = len(s)
    v = (n - 1) * np.true_divide(np.asarray(q, dtype=float), 100)
    prev, nxt = np.floor(v), np.floor(v) + 1
    top = v >= n - 1
    prev[top], nxt[top] = -1, -1
    prev, nxt = prev.astype(np.intp), nxt.astype(np.intp)
    a, b, t = s[prev], s[nxt], np.asarray(v - prev, dtype=v.dtype)
    diff = b - a
    out = np.add(a, diff * t)
    np.subtract(b, diff * (1 - t), out=out, where=t >= 0.5, casting="unsafe", dtype=type(out.dtype))
    h = n // 2
    mid = np.mean(s[h:h + 1] if n % 2 else s[h - 1:h + 1])
    return float(out[0]), float(out[1]), float(mid)


def judge(error: float | None, interval: list[float] | None, unit: str, n_units: int, n_cases: int,
          max_tokens: int | None) -> dict:
    """The verdict on a prediction error and its interval: ``{"state", "half_width", "text", …}``.

    ``state``: "within_noise" (interval holds zero and is no wider than ±JUDGEABLE), "off" (narrow, excludes
    zero), "too_little_data" (wider: with how many more cases or tokens per case would narrow it enough), or
    None when there is no error to judge."""
    if error is None:
        return {"state": None, "text": "no prediction to judge"}
    if not interval:
        return {"state": TOO_LITTLE, "half_width": None, "text": "too little data to judge (no interval: too few units)"}
    lo, hi = interval
    half = (hi - lo) / 2.0
    out = {"half_width": half, "interval": [lo, hi], "unit": unit, "units": n_units}
    if half > JUDGEABLE or n_units < MIN_UNITS:
        # a half-width shrinks as 1/sqrt(units); and a verdict needs MIN_UNITS units at least
        grow = max((half / JUDGEABLE) ** 2, MIN_UNITS / max(n_units, 1))
        more_cases = max(1, math.ceil(n_cases * grow - n_cases))
        tokens = math.ceil(max_tokens * grow) if max_tokens else None
        fix = f"run about {more_cases} more cases" + (f", or --max-tokens {tokens} per case" if tokens else "")
        why = (f"±{half * 100:.1f}%, needs ±{JUDGEABLE * 100:.0f}%" if half > JUDGEABLE
               else f"±{half * 100:.1f}% from only {n_units} {unit or 'units'}, needs {MIN_UNITS}")
        out.update(state=TOO_LITTLE, more_cases=more_cases, max_tokens=tokens, text=f"too little data to judge ({why}): {fix}")
    elif lo <= 0.0 <= hi:
        out.update(state=WITHIN_NOISE, text=f"within noise (error {error * 100:+.1f}%, ±{half * 100:.1f}%)")
    else:
        out.update(state=OFF, text=f"off by {error * 100:+.1f}% (interval {lo * 100:+.1f}%…{hi * 100:+.1f}%)")
    return out
