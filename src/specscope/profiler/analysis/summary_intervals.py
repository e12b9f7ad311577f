"""The summary's intervals by unit: acceptance with the case as the unit when there are enough cases, and the
headline figures' 95% intervals (what a comparison needs to say whether two sessions differ)."""

from __future__ import annotations

import math

from specscope.profiler.analysis import intervals


def acceptance_by_unit(per_case, acc: dict, by_content_class: dict, k: int) -> tuple[dict, dict]:
    """Acceptance's interval with the case as the unit when there are enough cases (rounds of one prompt are
    correlated: bursty content); otherwise it keeps the round as the unit (``stats.acceptance_from_histogram``)."""
    from specscope.profiler.analysis.uncertainty import CASES_AS_UNIT, proportion_interval

    def by_cases(rows) -> dict | None:
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


def figure_intervals(per_case, reps, noise, pred, division, measured: float | None = None) -> dict:
    """95% intervals of the headline figures (what a comparison needs to say whether two sessions differ): the rates
    from their step and round times (joined with the spread over repeats), T_decode and the measured speedup from
    them, T_verify and T_draft from the samples they are means of."""
    steps = [x for c, _ in per_case for x in c["plain"]["step_ms"]]
    plain = intervals.union(intervals.rate_interval(len(steps), steps), intervals.span(reps["plain"]) if reps else None)
    spec = intervals.union(intervals.rate_interval(noise["rate_tokens"], noise["rate_ms"]),
                           intervals.span(reps["spec"]) if reps else None)
    out = {"plain_tok_s_ci95": plain, "spec_tok_s_ci95": spec,
           "t_decode_ms_ci95": [1000.0 / plain[1], 1000.0 / plain[0]] if plain and plain[0] > 0 else None,
           "measured_speedup_ci95": None, "t_verify_ms_ci95": None, "t_draft_ms_ci95": None}
    if plain and spec and plain[0] > 0 and all(math.isfinite(x) for x in plain + spec):
        p_mid, s_mid = (plain[0] + plain[1]) / 2, (spec[0] + spec[1]) / 2
        rel = math.hypot((plain[1] - plain[0]) / 2 / p_mid, (spec[1] - spec[0]) / 2 / s_mid)  # independent runs
        m = measured if measured else s_mid / p_mid  # centred on the figure it is printed beside
        out["measured_speedup_ci95"] = [m * (1 - rel), m * (1 + rel)]
    if pred.get("source") == "components":
        comps = [c.get("components") or {} for c, _ in per_case]
        out["t_verify_ms_ci95"] = intervals.mean_ci([x for d in comps for x in d.get("verify_ms") or []])
        out["t_draft_ms_ci95"] = intervals.mean_ci([x for d in comps for x in d.get("draft_ms") or []])
    elif division is not None:
        rounds = [r for c, _ in per_case for r in c["spec"]["rounds"] if r.get("kind", "instrumented") == "instrumented" and r.get("verify_ms") is not None]
        out["t_verify_ms_ci95"] = intervals.mean_ci([r["verify_ms"] for r in rounds])
        out["t_draft_ms_ci95"] = intervals.mean_ci([r["draft_ms"] for r in rounds])
    return out
