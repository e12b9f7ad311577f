"""A tree run's budget what-if: the predicted speedup at other node budgets, by the one round model.

At budget B a round emits E(B) tokens and costs T_verify(B) + T_draft + T_rollback + T_bookkeeping, so

    speedup(B) = E(B) · T_decode / (T_verify(B) + T_draft + T_rollback + T_bookkeeping)

is the run's own prediction (``round_model.RoundModel`` from the summary) with E and T_verify changed
(``RoundModel.what_if``). Where each term comes from:

- **the run's budget**: the run's prediction itself, every term (so its what-if figure *is* the prediction);
- **T_verify(B)**, measured, on the prediction's scale: a tree run times, beside its rounds and at the same points of
  each case as its components, the verify of the drafter's own tree from that prefix at each budget of the what-if and
  at its own (``engine_adapter.measure.tree_components``: ``budget_verify_ms``, one loop, the budgets alternating).
  T_verify(B) = the prediction's T_verify × (B's mean ÷ the run's budget's mean in that loop): the budgets are compared
  where they were timed together, and the level is the prediction's (the what-if loop and the components' loop run
  under different conditions — measured 0.85× and 1.23× apart in two runs —, and the run's own point must be its prediction). The
  loop's raw means are kept (``timed_verify_ms``);
- **E(B)**: from the run's acceptance traces where it has them (``run --trace``: the walk of ``tree_trace``, exact
  under greedy, every budget 1..b); else from the run's own full tree rounds, each round's tree cut to its first B
  nodes (a tree grown best first holds, in node order, the tree a smaller budget grows from the same prefix, so the
  path the target accepts in it is the round's path cut at the first node past B) — budgets up to the run's only, and
  an estimate: the rounds start where the run's budget left them, not where budget B's own rounds would — after a
  longer path failed, at a harder token, so E at a much smaller budget reads low (measured on the trained demo, 6
  cases × 32 tokens, budget 8: −11% at budget 1, −10% at 2, −5% at 4, within 3% at 5–8; the default suite, 18 cases ×
  64 tokens: −9%, −10%, −8% at 1, 2, 4 — against the trace's walk);
- **T_draft, T_rollback, T_bookkeeping**: the run's budget's, assumed for every budget (labelled). DFlash's draft is
  one block forward over the depth limit whatever the budget; building a larger tree on the host, keeping a path of
  a larger tree and the bookkeeping after a longer path cost somewhat more, untimed here;
- **the interval**: E(B)'s 95% interval by the summary's rule (the case as the unit with enough cases, else the round),
  carried through the model with every time as measured: the times' own noise is not in it (said).

The best budget is the highest predicted point figure; budgets within the verdict's tolerance of it are named as not
told apart by this what-if.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from specscope.profiler.analysis import tree_trace
from specscope.profiler.analysis.round_model import RoundModel

CLOSE = 0.05  # budgets whose figure is within this share of the best's are not told apart (the verdict's tolerance)
ASSUMED = ("T_draft, T_rollback and T_bookkeeping taken at the run's budget for every budget (not timed per budget: "
           "the draft's block forward is the same, building, keeping and bookkeeping a larger tree cost somewhat more)")
SOURCES = {"trace": "E from the acceptance trace (exact under greedy)",
           "rounds": "E from the run's own rounds, each tree cut to its first B nodes: an estimate, low at budgets well "
                     "below the run's (its rounds start where its longer paths failed, at harder tokens: on the trained "
                     "demo at budget 8, −9 to −11% at budgets 1–2, −5 to −8% at 4, against the trace's exact walk), "
                     "so it leans toward the run's budget; run --trace walks every budget exactly"}


class BudgetPoint(TypedDict):
    """One budget of the what-if."""
    budget: int
    this_run: bool                        # the run's own budget: every figure is the run's prediction
    tokens_per_round: float | None        # E(B); None: not known at this budget (no trace, B above the run's)
    tokens_per_round_ci95: list[float] | None
    t_verify_ms: float | None             # T_verify(B): on the prediction's scale (the prediction's at the run's budget)
    timed_verify_ms: float | None         # the what-if loop's own mean at B
    verify_samples: int
    nodes: float | None                   # the nodes of the trees whose verify was timed (fewer than B: lists ran out)
    speedup: float | None                 # the round model at E(B), T_verify(B), the rest as the run's
    speedup_ci95: list[float] | None      # from E(B)'s interval only, the times as measured


class BudgetWhatIf(TypedDict):
    budget: int                           # the run's
    k: int                                # the depth limit
    e_source: str | None                  # "trace" | "rounds" | None (no E for other budgets)
    points: list[BudgetPoint]
    best: int | None                      # the budget with the highest predicted speedup
    close: list[int]                      # other budgets within CLOSE of the best's figure
    own_verify_ms: float | None           # the what-if loop's mean at the run's budget (the scale's denominator)
    prediction_verify_ms: float | None
    cost_s: float | None                  # what timing the what-if's verifies cost the run
    assumed: str


def _mean(xs: Sequence[float]) -> float | None:
    return math.fsum(xs) / len(xs) if xs else None


def budget_verify_times(cases: Sequence[Mapping[str, Any]]) -> Mapping[int, list[float]]:
    """Every case's what-if verify samples by budget, pooled (the prediction's T_verify pools its samples the same way)."""
    out: dict[int, list[float]] = {}
    for c in cases:
        for b, xs in ((c.get("components") or {}).get("budget_verify_ms") or {}).items():
            out.setdefault(int(b), []).extend(float(x) for x in xs if x is not None)
    return out


def _shapes(cases: Sequence[Mapping[str, Any]]) -> Mapping[int, float]:
    by: dict[int, list[int]] = {}
    for c in cases:
        for b, shape in (((c.get("components") or {}).get("tree") or {}).get("budget_shapes") or {}).items():
            by.setdefault(int(b), []).append(int(shape[0]))
    return {b: math.fsum(xs) / len(xs) for b, xs in by.items()}


def cut_accepted(path: Sequence[int], budget: int) -> int:
    """The accepted path's length in the round's tree cut to its first ``budget`` nodes: a path's node indices grow
    with depth (a child is grown after its parent), so the path stops at its first node past the budget."""
    a = 0
    while a < len(path) and int(path[a]) <= budget:
        a += 1
    return a


def _counted_paths(session) -> list[list[list[int]]]:
    """Per case, the accepted paths of the full tree rounds acceptance counts (the summary's rounds)."""
    from specscope.profiler.analysis.rounds import counts_for_acceptance, full_round
    from specscope.profiler.analysis.summary_core import summary_cases

    k = session.k
    return [[list(r["tree"]["path"]) for r in c["spec"]["rounds"]
             if r.get("tree") is not None and full_round(r, k) and counts_for_acceptance(r)]
            for c in summary_cases(session)]


def _e_with_interval(per_case: Sequence[Sequence[int]], k: int) -> tuple[float | None, list[float] | None]:
    """E and its 95% interval from accepted path lengths per case, by the summary's rule: the case as the unit with
    enough cases (``summary_intervals.acceptance_by_unit``), else the round (``stats.acceptance_from_histogram``)."""
    from specscope.profiler.analysis import stats
    from specscope.profiler.analysis.uncertainty import CASES_AS_UNIT, proportion_interval

    acc = stats.acceptance_from_histogram(Counter(a for xs in per_case for a in xs), k)
    e, iv = acc["tokens_per_round"], acc["tokens_per_round_ci95"]
    rows = [xs for xs in per_case if xs]
    if len(rows) >= CASES_AS_UNIT:
        p = proportion_interval([sum(xs) for xs in rows], [len(xs) * k for xs in rows])
        iv = [1 + k * p[0], 1 + k * p[1]] if p else iv
    return e, iv


def e_by_budget(session, budgets: Sequence[int], budget: int
                ) -> tuple[str | None, dict[int, tuple[float | None, list[float] | None]]]:
    """E(B) and its interval at each budget, and where E came from: the traces (any budget up to theirs), else the
    run's rounds cut (budgets up to the run's)."""
    k = session.k
    traces = tree_trace.tree_traces(session.cases)
    if traces:
        out = {}
        for b in budgets:
            try:
                per_case = [tree_trace.at_budget([t], b, k)["accepted"] for t in traces]
            except tree_trace.TraceError:
                continue
            out[b] = _e_with_interval(per_case, k)
        return "trace", out
    paths = _counted_paths(session)
    if not any(paths):
        return None, {}
    return "rounds", {b: _e_with_interval([[cut_accepted(p, b) for p in ps] for ps in paths], k)
                      for b in budgets if b <= budget}


def budget_what_if(session, s: Mapping[str, Any]) -> BudgetWhatIf | None:
    """The what-if of a tree run (None for a chain run, or a tree run whose components timed no other budget)."""
    t = s.get("tree")
    model = RoundModel.from_summary(s)
    if not t or model is None or s.get("division_inputs") != "components":
        return None
    budget = int(t["budget"])
    times = budget_verify_times(session.cases)
    if not times:
        return None
    budgets = sorted(set(times) | {budget})
    source, es = e_by_budget(session, budgets, budget)
    shapes = _shapes(session.cases)
    own_timed = _mean(times.get(budget, []))
    scale = model.t_verify_ms / own_timed if own_timed else None  # the loop's times onto the prediction's scale
    points: list[BudgetPoint] = []
    for b in budgets:
        own = b == budget
        e, iv = (s["tokens_per_round"], s.get("tokens_per_round_ci95")) if own else es.get(b, (None, None))
        timed = _mean(times.get(b, []))
        tv = model.t_verify_ms if own else (timed * scale if timed is not None and scale is not None else None)
        m = model.what_if(tokens_per_round=e, t_verify_ms=tv) if e is not None and tv is not None else None
        sp = model.speedup if own else (m.speedup if m is not None else None)
        points.append({"budget": b, "this_run": own, "tokens_per_round": e, "tokens_per_round_ci95": iv,
                       "t_verify_ms": tv, "timed_verify_ms": timed,
                       "verify_samples": _own_samples(s) if own else len(times.get(b, [])), "nodes": shapes.get(b),
                       "speedup": sp, "speedup_ci95": _carried(m, iv) if sp is not None else None})
    priced = [p for p in points if p["speedup"] is not None]
    best = max(priced, key=lambda p: p["speedup"]) if priced else None  # type: ignore[arg-type,return-value]
    close = ([p["budget"] for p in priced if p is not best and p["speedup"] >= best["speedup"] * (1 - CLOSE)]  # type: ignore[operator,index]
             if best else [])
    walls = [w for c in session.cases if (w := (c.get("components") or {}).get("budget_verify_wall_ms")) is not None]
    return {"budget": budget, "k": session.k, "e_source": source, "points": points,
            "best": best["budget"] if best else None, "close": close,
            "own_verify_ms": own_timed, "prediction_verify_ms": model.t_verify_ms,
            "cost_s": math.fsum(walls) / 1000.0 if walls else None, "assumed": ASSUMED}


def _carried(m: RoundModel | None, iv: Sequence[float] | None) -> list[float] | None:
    """E's interval carried through the round model (every time as it is): the speedup at each end."""
    if m is None or not iv:
        return None
    ends = [m.what_if(tokens_per_round=x).speedup for x in iv]
    return [x for x in ends if x is not None] if None not in ends else None


def _own_samples(s: Mapping[str, Any]) -> int:
    """How many verify samples the prediction's T_verify is the mean of."""
    return int((((s.get("prediction_components") or {}).get("samples") or {}).get("verify")) or 0)
