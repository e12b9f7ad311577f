"""The summary's intervals by unit: acceptance with the case as the unit when there are enough cases, and the
headline figures' 95% intervals (what a comparison needs to say whether two sessions differ)."""

from __future__ import annotations

import math

from specscope.profiler.analysis.records import CasesInterval
from specscope.profiler.session.records import FigureIntervals


def acceptance_by_unit(per_case, acc: dict, by_content_class: dict, k: int) -> tuple[dict, dict]:
    """Acceptance's interval with the case as the unit when there are enough cases (rounds of one prompt are
    correlated: bursty content); otherwise it keeps the round as the unit (``stats.acceptance_from_histogram``)."""
    from specscope.profiler.analysis.uncertainty import CASES_AS_UNIT, proportion_interval

    def by_cases(rows) -> CasesInterval | None:
        rows = [s["acceptance"] for _, s in rows if s["acceptance"]["drafted"]]
        if len(rows) < CASES_AS_UNIT:
            return None
        iv = proportion_interval([a["accepted"] for a in rows], [a["drafted"] for a in rows])
        return {"p_ci95": iv, "p_ci95_unit": "cases",
                "tokens_per_round_ci95": [1 + k * iv[0], 1 + k * iv[1]]} if iv else None

    whole = by_cases(per_case)
    acc = {**acc, **whole} if whole else acc
    out = {}
    for cat, a in by_content_class.items():
        sub = by_cases([(c, s) for c, s in per_case if c["content_class"] == cat])
        out[cat] = {**a, **sub} if sub else a
    return acc, out


def _recentred(iv: list[float] | None, on: float | None, pooled: float | None) -> list[float] | None:
    """An interval of the pooled figure moved (by the same ratio) onto the figure printed beside it, where the two
    differ (several repeats: the printed rate is their median)."""
    if not iv or not on or not pooled:
        return iv
    f = on / pooled
    return [iv[0] * f, iv[1] * f]


def figure_intervals(per_case, reps, noise, pred, division, measured: float | None = None,
                     printed: dict | None = None) -> FigureIntervals:
    """95% intervals of the headline figures (what a comparison needs to say whether two sessions differ), by
    independent unit (``unit_intervals``: cases, or blocks of steps and rounds with few cases; coverage simulated):
    the rates from their steps and measured rounds, T_decode from the plain rate, the measured speedup with a case's
    two sides paired, T_verify and T_draft from the samples they are means of (with cases as units only).
    ``printed``: the plain and speculative rates the summary prints (pooled over every repeat)."""
    from specscope.profiler.analysis import unit_intervals as ui
    from specscope.profiler.analysis.prediction import measured_round_tuples

    printed = printed or {}
    plain_series = [[(1.0, float(x)) for x in c["plain"]["step_ms"] if x is not None] for c, _ in per_case]
    spec_series = [[(float(t), float(ms)) for t, ms, _, _ in measured_round_tuples(c, 0)] for c, _ in per_case]
    pooled_plain = _pooled(plain_series)
    pooled_spec = _pooled(spec_series)
    plain = _recentred(ui.ratio_interval(plain_series, 1000.0), printed.get("plain"), pooled_plain)
    spec = _recentred(ui.ratio_interval(spec_series, 1000.0), printed.get("spec"), pooled_spec)
    speedup = ui.speedup_interval(spec_series, plain_series)
    pooled_speedup = pooled_spec / pooled_plain if pooled_spec and pooled_plain else None
    out: FigureIntervals = {"plain_tok_s_ci95": plain, "spec_tok_s_ci95": spec,
           "t_decode_ms_ci95": [1000.0 / plain[1], 1000.0 / plain[0]] if plain and plain[0] > 0 else None,
           "measured_speedup_ci95": _recentred(speedup, measured, pooled_speedup),
           "t_verify_ms_ci95": None, "t_draft_ms_ci95": None}

    def mean_iv(groups):
        return ui.ratio_interval([[(float(x), 1.0) for x in g if x is not None] for g in groups], cases_only=True)

    if pred.get("source") == "components":
        comps = [c.get("components") or {} for c, _ in per_case]
        out["t_verify_ms_ci95"] = mean_iv([d.get("verify_ms") or [] for d in comps])
        # the draft samples as T_draft is their mean (weighted by the run's accepted counts, prediction.histogram_weighted)
        drafts = pred.get("draft_samples") or [d.get("draft_ms") or [] for d in comps]
        out["t_draft_ms_ci95"] = mean_iv(drafts)
    elif division is not None:
        rounds = [[r for r in c["spec"]["rounds"] if r.get("kind", "instrumented") == "instrumented"
                   and r.get("verify_ms") is not None] for c, _ in per_case]
        out["t_verify_ms_ci95"] = mean_iv([[r["verify_ms"] for r in rs] for rs in rounds])
        out["t_draft_ms_ci95"] = mean_iv([[r["draft_ms"] for r in rs] for rs in rounds])
    return out


def _pooled(series) -> float | None:
    a = math.fsum(x for s in series for x, _ in s)
    b = math.fsum(y for s in series for _, y in s)
    return 1000.0 * a / b if b > 0 else None
