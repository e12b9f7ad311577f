"""Plot-ready series from a Session: plain lists of numbers, no Qt.

This is the one place that turns a Session into what the charts draw, so the
live app and the exported report images always agree. Statistics (acceptance,
intervals) come from ``profiler.analysis.stats`` / ``profiler.analysis.summary``, every predicted figure from
``profiler.analysis.round_model.RoundModel``;
this module only arranges measured values along an axis.

``all_chart_data`` walks the whole session; ``live_data.LiveChartData`` gives the same
result for a session that grows (the app's snapshots), extending each series
with the steps and rounds that arrived since it last looked.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from specscope.profiler.session.records import Case, Round, Summary
from specscope.profiler.session.session import Session
from specscope.profiler.analysis import stats
from specscope.profiler.analysis.round_model import REST, RoundModel
from specscope.profiler.analysis.drift import drift_warning, judged
from specscope.profiler.analysis.summary import BLOCK_LABELS, session_case_stats, summarize
from specscope.profiler.analysis.uncertainty import rounds_interval_from_sums
from specscope.profiler.analysis.rounds import full_round

from .tree_acceptance import tree_acceptance
from .records import (AcceptanceSeries, BreakdownData, BreakdownSide, ChartData, DivisionAt, DivisionData, DivisionPoint, ProbeSeries,
                      ThroughputSeries, TokensPerRoundHist)

ROLLING_STEPS = 8  # plain steps / spec rounds per point on the throughput chart
_NONE: list[Round] = []  # the rounds a discarded case contributes to acceptance (shared, never written to)


def counted_rounds(c: Case) -> list[Round]:
    """The rounds acceptance may count: none from a case left out of the summary (--discard-first)."""
    return _NONE if c.get("discarded") else c["spec"]["rounds"]


# Per-case pieces of the series, shared by the whole-session functions and the live fold: each
# appends the points of items[start:] to its columns and returns the running state after them.

def plain_points(ms: list, start: int, t: float, px: list, py: list, window: int = ROLLING_STEPS) -> float:
    for i in range(start, len(ms)):
        t += ms[i] / 1000.0
        lo = max(0, i - window + 1)
        tot = sum(ms[lo:i + 1])
        if tot > 0:
            px.append(t)
            py.append(1000.0 * (i + 1 - lo) / tot)
    return t


def _ledger(r: dict) -> bool:
    """A round of a paired run's ledger pass: it repeats the measured pass's drafts, timed apart; no chart of the
    measured speed or of acceptance counts it."""
    return r.get("pass") == "ledger"


def spec_points(rs: list, start: int, t: float, sx: list, sy: list, window: int = ROLLING_STEPS) -> float:
    for i in range(start, len(rs)):
        if _ledger(rs[i]):
            continue
        t += rs[i]["ms"] / 1000.0
        recent: list[dict] = []  # the last ``window`` measured rounds up to i
        j = i
        while j >= 0 and len(recent) < window:
            if not _ledger(rs[j]):
                recent.append(rs[j])
            j -= 1
        tot = sum(x["ms"] for x in recent)
        n = sum(len(x["emitted"]) for x in recent)
        if tot > 0:
            sx.append(t)
            sy.append(1000.0 * n / tot)
    return t


def acceptance_points(rs: list, start: int, state: tuple, k: int, x: list, y: list, lo: list, hi: list):
    drafted, accepted, squares = state
    for r in rs[start:]:
        # acceptance counts a case's first repeat, measured pass only (summary.counts_for_acceptance)
        if not full_round(r, k) or r.get("repeat") or _ledger(r):  # a tree round's: drafted to depth k
            continue
        drafted += k
        accepted += r["accepted"]
        squares += r["accepted"] ** 2
        # the round is the unit (its drafts are not independent trials): uncertainty.proportion_interval
        a, b = rounds_interval_from_sums(drafted // k, accepted, squares, k) or stats.wilson_interval(accepted, drafted)
        x.append(drafted)
        y.append(100.0 * accepted / drafted)
        lo.append(100.0 * a)
        hi.append(100.0 * b)
    return drafted, accepted, squares


def count_emitted(rs: list, start: int, k: int, counts: list) -> None:
    for r in rs[start:]:
        if r.get("repeat") or _ledger(r):
            continue
        n = len(r["emitted"])
        if 1 <= n <= k + 1:
            counts[n - 1] += 1


def throughput_series(session: Session, window: int = ROLLING_STEPS) -> ThroughputSeries:
    """Plain and speculative tok/s over each mode's own generation clock (seconds)."""
    px: list[float] = []
    py: list[float] = []
    sx: list[float] = []
    sy: list[float] = []
    t = 0.0
    for c in session.cases:
        t = plain_points(c["plain"]["step_ms"], 0, t, px, py, window)
    t = 0.0
    for c in session.cases:
        t = spec_points(c["spec"]["rounds"], 0, t, sx, sy, window)
    return {"plain_x": px, "plain_y": py, "spec_x": sx, "spec_y": sy}


def acceptance_series(session: Session) -> AcceptanceSeries:
    """Cumulative acceptance over drafted tokens (full-k rounds) with its 95% band (rounds as the unit)."""
    k = session.k
    x: list[int] = []
    y: list[float] = []
    lo: list[float] = []
    hi: list[float] = []
    state = (0, 0, 0)
    for c in session.cases:
        state = acceptance_points(counted_rounds(c), 0, state, k, x, y, lo, hi)
    return {"x": x, "y": y, "lo": lo, "hi": hi, "low_sample_limit": stats.LOW_SAMPLE_DRAFTED}


def tokens_per_round_hist(session: Session) -> TokensPerRoundHist:
    k = session.k
    counts = [0] * (k + 1)
    for c in session.cases:
        count_emitted(counted_rounds(c), 0, k, counts)
    return {"bins": list(range(1, k + 2)), "counts": counts}


def _run_times(series: Sequence[Mapping[str, Any]]) -> list[float | None]:
    """Each reading's time on one clock for the whole session, in the series' order (None: the reading has no time):
    a context sweep's visits each start their clock at zero, so a reading earlier than the one before starts a new
    visit, laid after the last (drawn as they were taken, not as lines folding back across the chart)."""
    out: list[float | None] = []
    offset, last = 0.0, None
    for p in series:
        t = p.get("t")
        if t is not None:
            if last is not None and t < last:
                offset += last
            last = t
        out.append(None if t is None else offset + t)
    return out


def probe_series(session: Session, summary: Summary) -> ProbeSeries:
    """The clock probe over the run's wall clock: each reading's speed as a share of the fastest (100% =
    the best clock seen), the band of its own noise, and the runs' GPU clock where sensors recorded it."""
    series = session.data.get("probe") or []
    best = min((p["ms"] for p in series), default=1.0)  # (no readings: nothing divides by it)
    rs = judged(series)
    x: list[float] = []
    cool_x: list[float] = []
    for p, t in zip(series, _run_times(series)):
        if p in rs:  # a judged reading without a time is placed by its rank among them
            x.append(float(len(x)) if t is None else t)
        else:
            cool_x.append(0.0 if t is None else t)
    cool = [p for p in series if p not in rs]
    d: Mapping[str, Any] = summary.get("probe") or {}
    gpu = [(t, f) for w in session.data.get("sensors") or []
           if (f := w.get("gpu_freq_mhz")) and (t := w.get("t")) is not None]
    top = max((f for _, f in gpu), default=None)
    return {
        "x": x,
        "y": [100.0 * best / p["ms"] for p in rs],
        "cool_x": cool_x,
        "cool_y": [100.0 * best / p["ms"] for p in cool],
        "noise": d.get("noise"),
        "slowdown": d.get("slowdown"),
        "drift": bool(d.get("drift")),
        "warning": drift_warning(d),
        "gpu_x": [t for t, _ in gpu],
        "gpu_y": [100.0 * f / top for _, f in gpu] if top else [],
    }


def breakdown_data(summary: Summary) -> BreakdownData | None:
    bd = summary.get("breakdown")
    if not bd:
        return None
    cats = list(bd["block_order"])
    labels = {c: BLOCK_LABELS.get(c, c) for c in cats + ["inter_block"]}
    labels.update({c: v for c, v in (bd.get("labels") or {}).items() if c in labels})
    sides: dict[str, BreakdownSide] = {}
    for side in ("decode", "verify"):
        d = bd[side]
        sp = d.get("spread") or {}
        sides[side] = {
            "positions": d["positions"],
            "blocks": [d["blocks"].get(c) or 0.0 for c in cats],
            "block_sum_ms": d["block_sum_ms"],
            "whole_ms": d["whole_ms"],
            "instrumented_ms": d["instrumented_ms"],
            "inter_block_ms": d["inter_block_ms"],
            "barrier_distortion": d.get("barrier_distortion"),
            "skip_estimates": [d.get("skip_estimates", {}).get(c) for c in cats],
            # spread over reps (median over cases of each end); None in sessions from before it was kept
            "spread": {
                "blocks": [(sp.get("blocks") or {}).get(c) for c in cats],
                "skip_estimates": [(sp.get("skip_estimates") or {}).get(c) for c in cats],
                "whole_ms": sp.get("whole_ms"), "block_sum_ms": sp.get("block_sum_ms"),
                "inter_block_ms": sp.get("inter_block_ms"), "instrumented_ms": sp.get("instrumented_ms"),
            },
        }
    return {
        "block_order": cats,
        "labels": [labels[c] for c in cats],
        "inter_block_label": labels["inter_block"],
        "ratios": [bd["ratios"].get(c) for c in cats],
        "ratio_inter_block": bd["ratios"].get("inter_block"),
        "ratio_whole": bd["ratios"].get("whole"),
        "decode": sides["decode"],
        "verify": sides["verify"],
    }


def _curve(values) -> list[float]:
    """A curve for the chart: a point the round model cannot price (None) is a gap (NaN), never a zero."""
    return [float("nan") if v is None else v for v in values]


def division_data(session: Session, summary: Summary, t_verify_ms: float | None = None, p: float | None = None,
                  case_stats=None) -> DivisionData | None:
    """The round model's speedup over the per-position acceptance α (geometric model), from measured times; optional
    what-if overrides of T_verify and α. Every figure here is ``RoundModel``'s (``from_summary``): the curve, the
    marker at the run's α, the what-if point; the seed's bare division is drawn as its own labelled curve where the
    round pays more than it (rollback or bookkeeping timed apart).

    ``case_stats`` (a case -> statistics function) defaults to ``summary.session_case_stats``."""
    s = summary
    model = RoundModel.from_summary(s)
    if model is None or not model.t_decode_ms:
        return None
    k = s["k"]
    drawn = model if t_verify_ms is None else model.what_if(t_verify_ms=t_verify_ms)
    ps = [i / 100.0 for i in range(101)]
    curve = _curve(drawn.curve(ps, k))
    measured_curve = _curve(model.curve(ps, k)) if t_verify_ms is not None else None
    # the seed's division E·T_decode/(T_verify + T_draft), its own curve, where the round pays rollback or bookkeeping
    division_curve = (_curve(drawn.at_alpha(a, k).division for a in ps)
                      if any(getattr(drawn, t) for t in REST) else None)
    block_curve = None
    bd = s.get("breakdown")
    if bd and bd["decode"].get("block_sum_ms"):
        block_curve = _curve(model.what_if(t_decode_ms=bd["decode"]["block_sum_ms"]).curve(ps, k))
    # The curve is over the per-position acceptance α of the geometric model (E = 1 + α + … + α^k); every marker is
    # placed at the α whose E equals the measured E, with its interval from E's, so all lie on the curve's axis.
    def at(E, e_ci):
        a = stats.alpha_for_tokens_per_round(E, k)
        lo, hi = (stats.alpha_for_tokens_per_round(x, k) for x in e_ci) if e_ci else (a, a)
        return a, lo, hi

    points: list[DivisionPoint] = []
    alpha_run = None
    tokens_per_round, measured = s.get("tokens_per_round"), s.get("measured_speedup")
    if tokens_per_round is not None:
        alpha_run = stats.alpha_for_tokens_per_round(tokens_per_round, k)
    if tokens_per_round is not None and measured is not None:
        alpha_run, lo, hi = at(tokens_per_round, s.get("tokens_per_round_ci95"))
        points.append({"label": "all cases", "p": alpha_run, "p_lo": lo, "p_hi": hi, "speedup": measured, "main": True})
    for c in session.cases:
        if c.get("discarded"):
            continue
        cs = case_stats(c) if case_stats else session_case_stats(session, c)
        acc = cs["acceptance"]
        if acc.get("tokens_per_round") is not None and cs["measured_speedup"] is not None:
            a, lo, hi = at(acc["tokens_per_round"], acc.get("tokens_per_round_ci95"))
            points.append({"label": c["id"], "p": a, "p_lo": lo, "p_hi": hi, "speedup": cs["measured_speedup"], "main": False})
    what_if: DivisionAt | None = None
    if p is not None:
        what_if = {"p": p, "speedup": drawn.at_alpha(p, k).speedup}
    # the model at the run's own E (the summary's prediction, or the ledger's figure where it stands in)
    at_run = drawn.speedup if alpha_run is not None else None
    return {
        "k": k,
        "ps": ps,
        "curve": curve,
        "measured_curve": measured_curve,
        "division_curve": division_curve,
        "block_curve": block_curve,
        "points": points,
        "what_if": what_if,
        "t_decode_ms": model.t_decode_ms,
        "t_verify_ms": drawn.t_verify_ms,
        "t_draft_ms": model.t_draft_ms,
        "t_draft_ms_ci95": s.get("t_draft_ms_ci95"),
        "t_rollback_ms": model.t_rollback_ms,
        "t_bookkeeping_ms": model.t_bookkeeping_ms,
        "untimed": model.untimed,
        "formula": model.formula,
        "alpha": alpha_run,
        "p_ci95_unit": s.get("p_ci95_unit"),  # the run's α interval: cases or rounds as units
        # where the curve's T_verify and T_draft came from: a prediction timed apart, or the ledger's own rounds
        "source": s.get("division_inputs"),
        # the round model at the run's E, on the curve drawn (a T_verify what-if moves it with the curve)
        "predicted": ({"p": alpha_run, "speedup": at_run}
                      if alpha_run is not None and at_run is not None and s.get("predicted_speedup") is not None
                      else None),
    }


def all_chart_data(session: Session, summary: Summary | None = None) -> ChartData:
    summary = summarize(session) if summary is None else summary
    return _chart_data(summary, throughput_series(session), acceptance_series(session), tokens_per_round_hist(session),
                       breakdown_data(summary), division_data(session, summary), probe_series(session, summary))


def _chart_data(summary: Summary, throughput: ThroughputSeries, acceptance: AcceptanceSeries, tpr: TokensPerRoundHist,
                breakdown: BreakdownData | None, division: DivisionData | None, probe: ProbeSeries) -> ChartData:
    return {
        "probe": probe,
        "summary": summary,
        "throughput": {**throughput, "predicted_tok_s": summary.get("predicted_tok_s"),
                       "plain_tok_s": summary.get("plain_tok_s"), "spec_tok_s": summary.get("spec_tok_s")},
        "acceptance": {**acceptance, "regime": summary.get("regime"), "drafted": summary.get("drafted"),
                       "tree": tree_acceptance(summary)},
        "tokens_per_round": {**tpr, "mean": summary.get("tokens_per_round"), "k": summary.get("k")},
        "breakdown": breakdown,
        "division": division,
    }
