"""Derived numbers over a Session: per-case statistics, the session summary, the breakdown aggregate.

Everything here is recomputed from the raw measurements a Session holds, never trusted from a file.

- ``case_stats`` and ``summarize`` are the reference: they walk the whole session every time.
- ``LiveSummary`` (``summary_live``) gives the same numbers for a session that grows while it is watched (the app's
  snapshots): it folds only the steps and rounds that arrived since it last looked into running
  aggregates, and recomputes per-case figures only for a case that changed and the breakdown medians
  only when a breakdown arrives. Its numbers are *equal* to the reference's, not close: sums are exact
  (Shewchuk partials, read back with ``math.fsum``; the reference sums with ``math.fsum`` too), counts
  are integers, and everything after that goes through the same code (tested on the fixture session
  fed event by event, and on a live run).
- ``summary_core`` holds what both share (so the incremental path never imports this module); this module
  re-exports its public names and ``summary_live``'s, for the app and the reports.
"""

from __future__ import annotations

import math
from collections import Counter

from specscope.profiler.session.records import Case, CaseStats, Round, Summary
from specscope.profiler.analysis import stats
from specscope.profiler.analysis.rounds import (counts_for_acceptance, first_repeat, full_round, instrumented, judged_rounds,
                                                measured_rounds)
from specscope.profiler.analysis.stats import tok_s
from specscope.profiler.analysis.summary_core import (
    BLOCK_LABELS,
    COMMUNICATION,
    aggregate_breakdown,
    assemble,
    case_result,
    energy,
    measured_cases,
    round_time,
    summary_cases,
)
from specscope.profiler.analysis.summary_live import ExactSum, LiveSummary
from specscope.profiler.analysis.tree_figures import tally, tree_budget, tree_figures

__all__ = ["BLOCK_LABELS", "COMMUNICATION", "ExactSum", "LiveSummary", "aggregate_breakdown",
           "case_stats", "counts_for_acceptance", "energy", "first_repeat", "instrumented",
           "measured_cases", "session_case_stats", "summarize", "summary_cases", "tok_s"]


def _rate(rounds: list[Round]) -> float | None:
    return tok_s(sum(len(r["emitted"]) for r in rounds), math.fsum(r["ms"] for r in rounds))


def case_stats(case: Case, k: int) -> CaseStats:
    plain, spec = case["plain"], case["spec"]
    # pooled rates: every repeat's tokens over every repeat's time (a ratio of means, the last short round included),
    # the one definition of a measured speed (the prediction's error and its units read the same rounds)
    plain_tok_s = tok_s(len(plain["step_ms"]), math.fsum(plain["step_ms"])) or stats.median(plain.get("repeats_tok_s") or [])
    e2e = [r for r in spec["rounds"] if not instrumented(r)]
    timed = [r for r in spec["rounds"] if instrumented(r)]
    # the measured speed: end-to-end rounds where the run has them (production-like, one sync per round)
    spec_tok_s = _rate(e2e or spec["rounds"]) or stats.median(spec.get("repeats_tok_s") or [])
    instr_tok_s = (_rate(timed) or stats.median(spec.get("repeats_instrumented_tok_s") or [])) if e2e else None
    full = [r for r in spec["rounds"] if full_round(r, k)]
    full_timed = [r for r in full if instrumented(r)]
    counted = [r["accepted"] for r in full if counts_for_acceptance(r)]
    acc = stats.acceptance_from_rounds(counted, k)
    judged = judged_rounds(case, k)
    return case_result(case, plain_tok_s, spec_tok_s, acc,
                       stats.mean(r["verify_ms"] for r in full_timed), stats.mean(r["draft_ms"] for r in full_timed),
                       instr_tok_s, judged=(_rate(judged) if len(judged) != len(e2e or spec["rounds"]) else spec_tok_s,
                                            sum(len(r["emitted"]) for r in judged)), hist=Counter(counted))


def session_case_stats(session, case: Case) -> CaseStats:
    """One case's statistics in a session (its k, and the session's sampling regime)."""
    return {**case_stats(case, session.k), "regime": session.regime}


def summarize(session) -> Summary:
    k = session.k
    cases = summary_cases(session)
    per_case = [(c, case_stats(c, k)) for c in cases]
    spec_emitted = [sum(len(r["emitted"]) for r in c["spec"]["rounds"]) for c in cases]
    full = [r for c in cases for r in c["spec"]["rounds"] if full_round(r, k)]
    full_timed = [r for r in full if instrumented(r)]
    counted = [r["accepted"] for r in full if counts_for_acceptance(r)]
    by_content_class = {}
    for cat in sorted({c["content_class"] for c in cases}):
        rs = [r for c in cases if c["content_class"] == cat for r in c["spec"]["rounds"] if full_round(r, k) and counts_for_acceptance(r)]
        by_content_class[cat] = stats.acceptance_from_rounds([r["accepted"] for r in rs], k)
    measured: list[Round] = []  # the rounds each case's measured speed comes from (end-to-end where it has them)
    judged: list[Round] = []  # of those, the full ones the prediction is judged against (rounds.judged_rounds)
    for c in cases:
        measured += measured_rounds(c["spec"]["rounds"])
        judged += judged_rounds(c, k)
    return assemble(
        session, per_case=per_case, spec_emitted=spec_emitted,
        acc=stats.acceptance_from_rounds(counted, k),
        # Means, like T_decode (a rate is a mean): medians on one side and a rate on the
        # other would make the prediction drift with the noise of a shared machine.
        t_verify=stats.mean(r["verify_ms"] for r in full_timed),
        t_draft=stats.mean(r["draft_ms"] for r in full_timed),
        t_rollback=stats.mean((r.get("rollback_ms") or 0.0) for r in full_timed),
        by_content_class=by_content_class,
        bd=aggregate_breakdown([b for c in cases if (b := c["breakdown"])]),
        tree=tree_figures(tree_budget(session), tally(r for r in full if counts_for_acceptance(r)), Counter(counted), k),
        noise={"hist": Counter(counted), "round_ms": [round_time(r) for r in full_timed],
               "rate_tokens": sum(len(r["emitted"]) for r in measured), "rate_ms": [r["ms"] for r in measured],
               "judged_tokens": sum(len(r["emitted"]) for r in judged), "judged_ms": [r["ms"] for r in judged]},
    )
