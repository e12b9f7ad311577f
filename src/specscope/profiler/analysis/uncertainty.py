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

**The verdict.** The project's one rule (``verdict_rule``): "agrees" when the error's whole 95% interval lies within
±5%, "off" when it lies wholly beyond, otherwise — or from fewer than ``MIN_UNITS`` independent units — "too little
data to judge", with how many more cases (or tokens per case) would decide it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from specscope.profiler.analysis import resample
from specscope.profiler.analysis.records import ErrorUnit, Verdict

MIN_UNITS = 8               # ... and at least this many independent units (fewer: a bootstrap has too few distinct draws)
CASES_AS_UNIT = 6           # from this many cases on, the case is the unit (rounds of one prompt correlate)
ROUND_BLOCK = 4             # fewer cases: blocks of this many consecutive measured rounds are the unit
COMPONENT_BLOCK = 5         # ... and blocks of this many consecutive component samples, units of their own
BOOTSTRAP = 2000            # resamples
_SEED = 20261201            # a fixed seed: the same session always gives the same interval (live = reference)



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

def prediction_units(cases: list[dict], k: int) -> tuple[str, list[ErrorUnit]]:
    """The resampling units of a session's prediction: ("cases" | "round blocks", units). Each unit holds the
    measured rounds' tokens and time, the accepted count and number of counted (full, first-repeat) rounds, and
    the component timings (verify, draft: sum and count) taken with it. ``cases``: per case ``{"rounds": [...],
    "components": {...} | None}`` with ``rounds`` the measured rounds in order, each ``(emitted, ms, accepted,
    counted)``."""
    with_rounds = [c for c in cases if c["rounds"]]
    if len(with_rounds) >= CASES_AS_UNIT:
        return "cases", [_unit(c["rounds"], c.get("components")) for c in with_rounds]
    units: list[ErrorUnit] = []
    for c in with_rounds:
        rs = c["rounds"]
        units += [_unit(rs[i:i + ROUND_BLOCK], None) for i in range(0, len(rs), ROUND_BLOCK)]
        comp = c.get("components") or {}
        ver = [x for x in comp.get("verify_ms") or [] if x is not None]
        dra = [x for x in comp.get("draft_ms") or [] if x is not None]
        # the case's component samples in blocks of consecutive ones, units of their own: a few correlated samples are
        # the prediction's timing evidence, and spread thinly over many round blocks their correlation went unseen
        n = max(len(ver), len(dra))
        for i in range(0, n, COMPONENT_BLOCK):
            units.append({**_unit([], {"verify_ms": ver[i:i + COMPONENT_BLOCK], "draft_ms": dra[i:i + COMPONENT_BLOCK]}),
                          "components_only": True})
    return "round blocks", units


def _unit(rounds, comp) -> ErrorUnit:
    comp = comp or {}
    v, d = [x for x in comp.get("verify_ms") or [] if x is not None], [x for x in comp.get("draft_ms") or [] if x is not None]
    return {"tokens": sum(r[0] for r in rounds), "ms": math.fsum(r[1] for r in rounds),
            "accepted": sum(r[2] for r in rounds if r[3]), "counted": sum(1 for r in rounds if r[3]),
            "v_sum": math.fsum(v), "v_n": len(v), "d_sum": math.fsum(d), "d_n": len(d)}


def _split_interval(units: list[ErrorUnit], extra_ms: float = 0.0) -> list[float] | None:
    """Round blocks: predicted ÷ measured − 1 = [E · ms ÷ tokens] ÷ [mean verify + mean draft], the two brackets from
    independent evidence (the rounds' blocks; the component samples' blocks), each by the delta method on its log,
    their variances added, Student's t on Welch–Satterthwaite's degrees of freedom."""
    r = [u for u in units if not u.get("components_only")]
    c = [u for u in units if u.get("components_only")]
    if len(r) < 2 or len(c) < 2:
        return None
    cnt, acc = np.array([u["counted"] for u in r], float), np.array([u["accepted"] for u in r], float)
    ms, tok = np.array([u["ms"] for u in r], float), np.array([u["tokens"] for u in r], float)
    vs, vn = np.array([u["v_sum"] for u in c], float), np.array([u["v_n"] for u in c], float)
    ds, dn = np.array([u["d_sum"] for u in c], float), np.array([u["d_n"] for u in c], float)
    if min(cnt.sum(), ms.sum(), tok.sum(), vn.sum(), dn.sum()) <= 0:
        return None
    log_r = math.log((cnt.sum() + acc.sum()) / cnt.sum() * ms.sum() / tok.sum())
    ur = (cnt + acc) / (cnt.sum() + acc.sum()) - cnt / cnt.sum() + ms / ms.sum() - tok / tok.sum()
    v, d = vs.sum() / vn.sum(), ds.sum() / dn.sum()
    if v + d + extra_ms <= 0:
        return None
    uc = ((vs - v * vn) / vn.sum() + (ds - d * dn) / dn.sum()) / (v + d + extra_ms)
    n_r, n_c = len(r), len(c)
    var_r = n_r / (n_r - 1) * float(((ur - ur.mean()) ** 2).sum())
    var_c = n_c / (n_c - 1) * float(((uc - uc.mean()) ** 2).sum())
    var = var_r + var_c
    if var <= 0:
        return None
    df = var**2 / (var_r**2 / (n_r - 1) + var_c**2 / (n_c - 1)) if var_r > 0 and var_c > 0 else min(n_r, n_c) - 1
    centre = log_r - math.log(v + d + extra_ms)
    half = t95(max(int(df), 1)) * math.sqrt(var)
    return [math.exp(centre - half) - 1.0, math.exp(centre + half) - 1.0]


def error_interval(units: list[ErrorUnit], reps: int = BOOTSTRAP, extra_ms: float = 0.0) -> list[float] | None:
    """95% interval of predicted ÷ measured − 1 over the units: cases resampled together (percentile bootstrap,
    widened for few units); round blocks and component blocks as independent evidence (``_split_interval``)."""
    if any(u.get("components_only") for u in units):
        return _split_interval(units, extra_ms)
    if len(units) < 2:
        return None
    rows: list[Mapping[str, Any]] = list(units)
    cols = {key: np.array([u[key] for u in rows], dtype=float) for key in rows[0]}
    idx = resample.indices(resample.generator(_SEED), len(units), reps)

    def s(key):
        return cols[key][idx].sum(axis=1)

    with np.errstate(divide="ignore", invalid="ignore"):
        rate = 1000.0 * s("tokens") / s("ms")                 # measured speculative tok/s
        e = 1.0 + s("accepted") / s("counted")                # tokens per round
        round_ms = s("v_sum") / s("v_n") + s("d_sum") / s("d_n") + extra_ms
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
          max_tokens: int | None, level: float = 0.95) -> Verdict:
    """The verdict on a prediction error and its interval, by the one rule (``verdict_rule.decide``: "agrees" when
    the whole interval lies within ±AGREE, "off" when it lies wholly beyond, else "too little data to judge"), plus
    what would decide it here: how many more cases, or tokens per case. An interval from fewer than ``MIN_UNITS``
    units decides nothing (a bootstrap over so few units has too few distinct draws to be trusted)."""
    from specscope.profiler.analysis.verdict_rule import PRACTICAL_GROWTH, UNDECIDED, decide

    out = decide(error, interval, units=n_units, min_units=MIN_UNITS, unit=unit or "units", level=level)
    out["unit"], out["units"] = unit, n_units
    grow = out.get("data_needed")
    if out["state"] == UNDECIDED and grow is not None and 1.0 < grow <= PRACTICAL_GROWTH:
        more_cases = max(1, math.ceil(n_cases * grow - n_cases))
        tokens = math.ceil(max_tokens * grow) if max_tokens else None
        out["more_cases"], out["max_tokens"] = more_cases, tokens
        out["text"] += f": run about {more_cases} more cases" + (f", or --max-tokens {tokens} per case" if tokens else "")
    return out
