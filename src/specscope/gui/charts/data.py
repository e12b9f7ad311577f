"""Plot-ready series from a Session: plain lists of numbers, no Qt.

This is the one place that turns a Session into what the charts draw, so the
live app and the exported report images always agree. Statistics (acceptance,
intervals, the division) come from ``profiler.stats`` / ``Session.summary``;
this module only arranges measured values along an axis.
"""

from __future__ import annotations

from specscope.profiler import stats
from specscope.profiler.session import CATEGORY_LABELS

ROLLING_STEPS = 8  # plain steps / spec rounds per point on the throughput chart


def throughput_series(session, window: int = ROLLING_STEPS) -> dict:
    """Plain and speculative tok/s over each mode's own generation clock (seconds)."""
    px, py, sx, sy = [], [], [], []
    t = 0.0
    for c in session.cases:
        ms = c["plain"]["step_ms"]
        for i, m in enumerate(ms):
            t += m / 1000.0
            lo = max(0, i - window + 1)
            tot = sum(ms[lo:i + 1])
            if tot > 0:
                px.append(t)
                py.append(1000.0 * (i + 1 - lo) / tot)
    t = 0.0
    for c in session.cases:
        rs = c["spec"]["rounds"]
        for i, r in enumerate(rs):
            t += r["ms"] / 1000.0
            lo = max(0, i - window + 1)
            tot = sum(x["ms"] for x in rs[lo:i + 1])
            n = sum(len(x["emitted"]) for x in rs[lo:i + 1])
            if tot > 0:
                sx.append(t)
                sy.append(1000.0 * n / tot)
    return {"plain_x": px, "plain_y": py, "spec_x": sx, "spec_y": sy}


def acceptance_series(session) -> dict:
    """Cumulative acceptance over drafted tokens (full-k rounds) with its 95% Wilson band."""
    k = session.k
    x, y, lo, hi = [], [], [], []
    drafted = accepted = 0
    for c in session.cases:
        for r in c["spec"]["rounds"]:
            if len(r["drafted"]) != k:
                continue
            drafted += k
            accepted += r["accepted"]
            a, b = stats.wilson_interval(accepted, drafted)
            x.append(drafted)
            y.append(100.0 * accepted / drafted)
            lo.append(100.0 * a)
            hi.append(100.0 * b)
    return {"x": x, "y": y, "lo": lo, "hi": hi, "low_sample_limit": stats.LOW_SAMPLE_DRAFTED}


def tokens_per_round_hist(session) -> dict:
    k = session.k
    counts = [0] * (k + 1)
    for c in session.cases:
        for r in c["spec"]["rounds"]:
            n = len(r["emitted"])
            if 1 <= n <= k + 1:
                counts[n - 1] += 1
    return {"bins": list(range(1, k + 2)), "counts": counts}


def breakdown_data(summary: dict) -> dict | None:
    bd = summary.get("breakdown")
    if not bd:
        return None
    cats = list(bd["categories"])
    labels = {c: CATEGORY_LABELS.get(c, c) for c in cats + ["inter_block"]}
    labels.update({c: v for c, v in (bd.get("labels") or {}).items() if c in labels})
    sides = {}
    for side in ("decode", "verify"):
        d = bd[side]
        sides[side] = {
            "positions": d["positions"],
            "blocks": [d["blocks"].get(c) or 0.0 for c in cats],
            "block_sum_ms": d["block_sum_ms"],
            "whole_ms": d["whole_ms"],
            "instrumented_ms": d["instrumented_ms"],
            "inter_block_ms": d["inter_block_ms"],
            "barrier_distortion": d.get("barrier_distortion"),
            "skip_estimates": [d.get("skip_estimates", {}).get(c) for c in cats],
        }
    return {
        "categories": cats,
        "labels": [labels[c] for c in cats],
        "inter_block_label": labels["inter_block"],
        "ratios": [bd["ratios"].get(c) for c in cats],
        "ratio_inter_block": bd["ratios"].get("inter_block"),
        "ratio_whole": bd["ratios"].get("whole"),
        "decode": sides["decode"],
        "verify": sides["verify"],
    }


def division_data(session, summary: dict, t_verify_ms: float | None = None, p: float | None = None) -> dict | None:
    """Predicted speedup over p from measured times; optional what-if overrides of T_verify and p."""
    s = summary
    if not s.get("t_decode_ms") or s.get("t_verify_ms") is None or s.get("t_draft_ms") is None:
        return None
    k = s["k"]
    tv = s["t_verify_ms"] if t_verify_ms is None else t_verify_ms
    ps = [i / 100.0 for i in range(101)]
    curve = stats.speedup_curve(s["t_decode_ms"], tv, s["t_draft_ms"], k, ps)
    measured_curve = (
        stats.speedup_curve(s["t_decode_ms"], s["t_verify_ms"], s["t_draft_ms"], k, ps) if t_verify_ms is not None else None
    )
    block_curve = None
    bd = s.get("breakdown")
    if bd and bd["decode"].get("block_sum_ms"):
        block_curve = stats.speedup_curve(bd["decode"]["block_sum_ms"], s["t_verify_ms"], s["t_draft_ms"], k, ps)
    points = []
    if s.get("p") is not None and s.get("measured_speedup") is not None:
        points.append({"label": "all cases", "p": s["p"], "p_lo": s["p_ci95"][0], "p_hi": s["p_ci95"][1],
                       "speedup": s["measured_speedup"], "main": True})
    for c in session.cases:
        cs = session.case_stats(c)
        acc = cs["acceptance"]
        if acc["p"] is not None and cs["measured_speedup"] is not None:
            points.append({"label": c["id"], "p": acc["p"], "p_lo": acc["p_ci95"][0], "p_hi": acc["p_ci95"][1],
                           "speedup": cs["measured_speedup"], "main": False})
    what_if = None
    if p is not None:
        what_if = {"p": p, "speedup": stats.speedup_curve(s["t_decode_ms"], tv, s["t_draft_ms"], k, [p])[0]}
    return {
        "k": k,
        "ps": ps,
        "curve": curve,
        "measured_curve": measured_curve,
        "block_curve": block_curve,
        "points": points,
        "what_if": what_if,
        "t_decode_ms": s["t_decode_ms"],
        "t_verify_ms": tv,
        "t_draft_ms": s["t_draft_ms"],
        "predicted": {"p": s["p"], "speedup": s["predicted_speedup"]} if s.get("predicted_speedup") is not None else None,
    }


def all_chart_data(session, summary: dict | None = None) -> dict:
    summary = session.summary() if summary is None else summary
    return {
        "summary": summary,
        "throughput": {**throughput_series(session), "predicted_tok_s": summary.get("predicted_tok_s"),
                       "plain_tok_s": summary.get("plain_tok_s"), "spec_tok_s": summary.get("spec_tok_s")},
        "acceptance": {**acceptance_series(session), "regime": summary.get("regime"), "drafted": summary.get("drafted")},
        "tokens_per_round": {**tokens_per_round_hist(session), "mean": summary.get("tokens_per_round"), "k": summary.get("k")},
        "breakdown": breakdown_data(summary),
        "division": division_data(session, summary),
    }
