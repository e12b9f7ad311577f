"""What both summaries share: the reference (``summary``) and the incremental one (``summary_live``).

Per-case figures from their inputs (``case_result``), the session summary from per-case statistics and the
session-wide aggregates (``assemble``), the breakdown aggregate, divergence verdicts and the block labels. Both
paths end in this code, so their numbers are equal, not close.
"""

from __future__ import annotations

from typing import Any, Mapping, cast

from specscope.profiler.session.measured import EnergySummary
from specscope.profiler.session.records import Acceptance, Breakdown, Case, CaseStats, PhaseBreakdown, Round, Summary
from specscope.profiler.analysis import intervals, prediction, stats
from specscope.profiler.analysis.drift import probe_drift
from specscope.profiler.analysis.energy import energy_figures
from specscope.profiler.analysis.intervals import span
from specscope.profiler.analysis.records import (BreakdownAggregate, BreakdownSpread, CommunicationShare, PerRankAggregate,
                                                 PhaseAggregate, RepeatRates, Verdict)
from specscope.profiler.analysis.draft_parts import draft_parts
from specscope.profiler.analysis.round_model import RoundModel
from specscope.profiler.analysis.stats import tok_s
from specscope.profiler.analysis.summary_intervals import (
    acceptance_by_unit as _acceptance_by_unit,
    figure_intervals as _figure_intervals,
)
from specscope.profiler.session.divergence import ENGINE_FAULT, case_divergence

BLOCK_LABELS = {
    "linear_attention": "Linear attention",
    "full_attention": "Full attention",
    "moe": "MoE",  # sessions before dense_mlp existed label a dense "moe" row themselves ("MLP (dense)")
    "dense_mlp": "Dense MLP",
    "output_head": "Output head",
    "other": "Other (embed, norms)",
    "unclassified": "Unclassified",
    "communication": "Communication",  # distributed runs: time inside MLX's collectives (engine_adapter.distributed.engine)
    "inter_block": "Inter-block overhead",
}
COMMUNICATION = "communication"
# the prediction verdict's state as a flag: True "agrees" (the error's whole interval within the tolerance), False "off"
AGREES: dict[str | None, bool] = {"agrees": True, "off": False}


# -- divergence verdicts ------------------------------------------------------------------

def case_result(case: Case, plain_tok_s, spec_tok_s, acc: Acceptance, t_verify, t_draft, instr_tok_s=None,
                judged: tuple[float | None, int] | None = None, hist: Mapping[int, int] | None = None) -> CaseStats:
    """``judged``: (tok/s, tokens) of the full rounds the prediction is judged against (``rounds.judged_rounds``);
    None: all measured rounds. ``hist``: the case's accepted counts (count -> rounds) its own round model weights its
    draft, bookkeeping and rollback by, as the headline does with the run's."""
    t_decode = 1000.0 / plain_tok_s if plain_tok_s else None
    ledger = None
    E = acc["tokens_per_round"]  # None exactly when there are no rounds
    if t_decode and t_verify is not None and t_draft is not None and acc["rounds"] and E is not None:
        # the ledger: the seed's division with the case's own instrumented rounds (a consistency check, not a forecast)
        ledger = RoundModel(E, t_decode, t_verify, t_draft).division
    # the case's own judged prediction: its components timed apart, the whole round (None in sessions without them)
    model = prediction.case_model(case, hist or {}, acc["k"], E, t_decode) if acc["rounds"] else None
    comp = case.get("components") or {}
    c_verify, c_draft = stats.mean(comp.get("verify_ms") or []), stats.mean(comp.get("draft_ms") or [])
    pred = model.speedup if model else None
    measured = spec_tok_s / plain_tok_s if spec_tok_s and plain_tok_s else None
    judged_tok_s = judged[0] if judged else spec_tok_s
    judged_measured = judged_tok_s / plain_tok_s if judged_tok_s and plain_tok_s else None
    plain_tokens, spec_tokens = case["plain"]["tokens"], case["spec"]["tokens"]
    plain_reps, spec_reps = case["plain"].get("repeats_tok_s") or [], case["spec"].get("repeats_tok_s") or []
    return {
        "plain_tok_s": plain_tok_s,
        "spec_tok_s": spec_tok_s,
        # pooled over repeats, and their spread (lowest–highest repeat) when there are several
        "repeats": max(len(plain_reps), len(spec_reps)),
        "plain_tok_s_spread": span(plain_reps) if len(plain_reps) > 1 else None,
        "spec_tok_s_spread": span(spec_reps) if len(spec_reps) > 1 else None,
        "spec_instrumented_tok_s": instr_tok_s,
        "t_decode_ms": t_decode,
        "t_verify_ms": t_verify,
        "t_draft_ms": t_draft,
        "acceptance": acc,
        "predicted_speedup": pred,
        # the seed's bare division from the same components, labelled as such wherever it is shown
        "division_speedup": model.division if model else None,
        "prediction_untimed": model.untimed if model else None,
        "components_t_rollback_ms": model.t_rollback_ms if model else None,
        "components_t_bookkeeping_ms": model.t_bookkeeping_ms if model else None,
        "ledger_speedup": ledger,
        "components_t_verify_ms": c_verify,
        "components_t_draft_ms": c_draft,
        "measured_speedup": measured,
        "judged_tok_s": judged_tok_s,
        "judged_tokens": judged[1] if judged else None,
        "judged_measured_speedup": judged_measured,
        "prediction_error": stats.relative_error(pred, judged_measured),
        "match": stats.match_stats(plain_tokens, spec_tokens) if spec_tokens else None,
        "divergence": case_divergence(case),
        "discarded": bool(case.get("discarded")),
    }


def pooled_tok_s(case_rates: list[tuple[int, float]]) -> float | None:
    """Tokens over time across cases, each case at its pooled rate."""
    toks = sum(n for n, r in case_rates if r)
    ms = sum(1000.0 * n / r for n, r in case_rates if r)
    return tok_s(toks, ms)


def measured_cases(session) -> list[Case]:
    """The cases with at least one plain step or speculative round."""
    return [c for c in session.cases if c["plain"]["step_ms"] or c["spec"]["rounds"]]


def summary_cases(session) -> list[Case]:
    """The measured cases the summary counts: all but those marked discarded (--discard-first)."""
    return [c for c in measured_cases(session) if not c.get("discarded")]


def round_time(r: Round) -> float | None:
    """T_verify + T_draft of one instrumented round (what the division divides by)."""
    verify, draft = r.get("verify_ms"), r.get("draft_ms")
    return verify + draft if verify is not None and draft is not None else None


def _repeat_rates(per_case, spec_emitted) -> RepeatRates:
    """Session rates of each complete repeat (every summarized case measured it in both modes), pooled over
    cases like the medians, and the speedup of each."""
    out: RepeatRates = {"plain": [], "spec": [], "speedup": []}
    n = min((len(c[side].get("repeats_tok_s") or []) for c, _ in per_case for side in ("plain", "spec")), default=0)
    for r in range(n):
        plain = pooled_tok_s([(len(c["plain"]["step_ms"]), _nth(c["plain"].get("repeats_tok_s"), r)) for c, _ in per_case])
        spec = pooled_tok_s([(m, _nth(c["spec"].get("repeats_tok_s"), r)) for (c, _), m in zip(per_case, spec_emitted)])
        out["plain"].append(plain)
        out["spec"].append(spec)
        out["speedup"].append(spec / plain if spec and plain else None)
    return out


def _nth(xs, r: int):
    return xs[r] if xs and len(xs) > r else None


def assemble(session, *, per_case, spec_emitted, acc, t_verify, t_draft, t_rollback, by_content_class, bd, noise, tree=None) -> Summary:
    """The summary from per-case statistics and the session-wide aggregates (shared by both paths)."""
    k = session.k
    reps = _repeat_rates(per_case, spec_emitted)
    several = sum(1 for x in reps["speedup"] if x is not None) > 1
    plain_tok_s, spec_tok_s, instr_tok_s, judged_tok_s, judged_tokens = _pooled_rates(per_case, spec_emitted)
    t_decode = 1000.0 / plain_tok_s if plain_tok_s else None
    measured = spec_tok_s / plain_tok_s if spec_tok_s and plain_tok_s else None
    judged = judged_tok_s / plain_tok_s if judged_tok_s and plain_tok_s else None
    tail_tokens = max(0, noise["rate_tokens"] - judged_tokens) if judged_tokens else 0
    acc, by_content_class = _acceptance_by_unit(per_case, acc, by_content_class, k)
    # The ledger: the division with T_verify and T_draft from the run's own instrumented rounds. Its agreement with the
    # measurement checks the accounting (rounds = draft + verify + rollback + bookkeeping); it is not a forecast.
    ledger = RoundModel(acc["tokens_per_round"], t_decode, t_verify, t_draft) \
        if t_decode and t_verify is not None and t_draft is not None and acc["rounds"] else None
    # The prediction: components timed apart from the rounds (profiler.analysis.prediction.genuine_prediction).
    pred = prediction.genuine_prediction(session, [c for c, _ in per_case], acc, noise["hist"], t_decode, spec_tok_s,
                                         judged)
    # the model whose terms the summary prints: the prediction's, else the ledger's (labelled by division_inputs)
    model: RoundModel | None = pred["model"] if pred.get("available") else ledger
    matches = [s["match"] for _, s in per_case if s["match"] is not None]
    divergences, unchecked = _divergences(session, per_case)
    verdict: Verdict = pred["verdict"] if pred.get("verdict") else {"state": None, "text": pred.get("why", "no prediction")}
    cis = _figure_intervals(per_case, reps if several else None, noise, pred, model, measured,
                            {"plain": plain_tok_s, "spec": spec_tok_s})
    return {
        "k": k,
        "regime": session.regime,
        "what_if": session.what_if,
        "cases_measured": len(per_case),
        "cases_discarded": sum(1 for c in measured_cases(session) if c.get("discarded")),
        "repeats": max((s["repeats"] for _, s in per_case), default=0),
        "plain_tok_s": plain_tok_s,
        "spec_tok_s": spec_tok_s,
        # per-repeat session rates and their spread (lowest–highest repeat), when there are several repeats
        "repeat_rates": reps,
        "plain_tok_s_spread": intervals.span(reps["plain"]) if several else None,
        "spec_tok_s_spread": intervals.span(reps["spec"]) if several else None,
        "measured_speedup_spread": intervals.union(intervals.span(reps["speedup"]), [measured, measured])
        if several and measured else None,
        # instrumented rounds (timed apart) vs end-to-end rounds: what timing the division's inputs costs
        "spec_instrumented_tok_s": instr_tok_s,
        "instrumentation_cost": (spec_tok_s / instr_tok_s - 1.0) if spec_tok_s and instr_tok_s else None,
        "t_decode_ms": t_decode,
        # the division's inputs: the prediction's (timed apart) where the session has them, else the ledger's
        # where T_verify and T_draft came from: "components" (timed apart per case), "verify curve" (run --roofline) or
        # "rounds" (the run's own instrumented rounds: the ledger, not a prediction)
        "division_inputs": pred.get("source") if pred.get("available") else ("rounds" if ledger else None),
        "t_verify_ms": model.t_verify_ms if model else t_verify,
        "t_draft_ms": model.t_draft_ms if model else t_draft,
        "t_rollback_ms": pred.get("t_rollback_ms") if pred.get("available") else t_rollback,
        "t_bookkeeping_ms": pred.get("t_bookkeeping_ms") if pred.get("available") else None,
        "t_draft_parts_ms": draft_parts([c for c, _ in per_case]),
        "p": acc["p"],
        "p_ci95": acc["p_ci95"],
        "p_ci95_unit": acc.get("p_ci95_unit"),
        "tokens_per_round_ci95": acc.get("tokens_per_round_ci95"),
        "drafted": acc["drafted"],
        "accepted": acc["accepted"],
        "per_position": acc["per_position"],
        "tokens_per_round": acc["tokens_per_round"],
        "low_sample": acc["low_sample"],
        "acceptance_by_content_class": by_content_class,
        "predicted_speedup": pred.get("speedup"),
        "predicted_tok_s": pred["speedup"] * 1000.0 / t_decode if pred.get("available") and t_decode else None,
        # the seed's bare division E·T_decode / (T_verify + T_draft), beside the judged round model (what a user computes
        # by hand), and what the judged model has not timed apart yet
        "division_speedup": pred.get("division_speedup"),
        "division_error": pred.get("division_error"),
        "prediction_untimed": pred.get("untimed"),
        # accepted counts the run had whose rollback was never timed apart (T_rollback then untimed, named)
        "rollback_untimed_counts": pred.get("rollback_untimed_counts") or [],
        "prediction_source": pred.get("source") if pred.get("available") else None,
        "prediction_unavailable": None if pred.get("available") else pred.get("why"),
        "predicted_speedup_with_rollback": pred.get("speedup_with_rollback"),
        "prediction_error_with_rollback": pred.get("error_with_rollback"),
        "rollback_share": pred.get("rollback_share"),
        "prediction_components": {k2: pred.get(k2) for k2 in PREDICTION_COMPONENTS} if pred.get("available") else None,
        "measured_speedup": measured,
        # the full rounds the prediction is judged against, and the measured tokens of the shorter last rounds left
        # out of that (rounds.judged_rounds); equal to measured_speedup when every round drafted k
        "judged_measured_speedup": judged,
        "tail_tokens": tail_tokens,
        "tail_share": tail_tokens / noise["rate_tokens"] if noise["rate_tokens"] else None,
        **cis,
        "prediction_error": pred.get("error"),
        "prediction_error_ci": pred.get("error_ci"),
        # --until decided only: the error with the bias of its sequential stop taken out, and how (analysis.sequential)
        "prediction_error_corrected": pred.get("error_corrected"),
        "prediction_error_correction": pred.get("error_correction"),
        "prediction_unit": pred.get("unit"),
        "prediction_verdict": verdict,
        "prediction_agrees": AGREES.get(verdict.get("state")),
        # the same-round accounting (a consistency check, not a forecast)
        "ledger_speedup": ledger.division if ledger else None,
        "ledger_error": stats.relative_error(ledger.division if ledger else None, judged),
        "ledger_t_verify_ms": t_verify,
        "ledger_t_draft_ms": t_draft,
        "ledger_t_rollback_ms": t_rollback,
        "ledger_residual": _ledger_residual(t_verify, t_draft, t_rollback, acc["tokens_per_round"], noise),
        # the whole round's break-even (E·T_decode less every other timed term); None where it is out of reach
        "break_even_verify_ms": model.break_even_verify_ms if model and model.break_even_verify_ms > 0 else None,
        "break_even_out_of_reach": bool(model and model.break_even_verify_ms <= 0),
        "break_even_multiple": model.break_even_multiple if model else None,
        "break_even_formula": model.break_even_formula if model else None,
        "prediction_formula": model.formula if model else None,
        "verify_multiple": model.verify_multiple if model else None,
        # the wrong ruler on purpose: the block sum as T_decode, the same round (what the two rulers' gap does)
        "block_sum_predicted_speedup": model.what_if(t_decode_ms=bd["decode"]["block_sum_ms"]).speedup
        if model and bd and bd["decode"]["block_sum_ms"] else None,
        "match_rate": (sum(m["match_rate"] for m in matches) / len(matches)) if matches else None,
        "all_match": bool(matches) and all(m["equal"] for m in matches),
        "divergences": divergences,
        "engine_faults": [d for d in divergences if d["verdict"] == ENGINE_FAULT],
        "unchecked_divergences": unchecked,
        "breakdown": bd,
        "probe": probe_drift(session.data.get("probe") or []),
        "energy": energy(session, {c["id"] for c, _ in per_case}),
        "tree": tree,  # a tree run's figures (analysis.tree_figures); None for a chain
    }


PREDICTION_COMPONENTS = ("t_verify_ms", "t_draft_ms", "t_rollback_ms", "t_bookkeeping_ms", "samples", "cases_timed")


def _pooled_rates(per_case, spec_emitted) -> tuple[float | None, float | None, float | None, float | None, int]:
    """Pooled rates (tokens over time, every repeat of every case), the one measured estimand: plain, speculative,
    the instrumented rounds', and the full rounds' the prediction is judged against (rounds.judged_rounds), with the
    judged tokens."""
    spec = [(c, s, n) for (c, s), n in zip(per_case, spec_emitted) if c["spec"]["rounds"]]
    plain_tok_s = pooled_tok_s([(len(c["plain"]["step_ms"]), s["plain_tok_s"]) for c, s in per_case])
    spec_tok_s = pooled_tok_s([(n, s["spec_tok_s"]) for c, s, n in spec])
    instr_tok_s = pooled_tok_s([(n, s.get("spec_instrumented_tok_s")) for c, s, n in spec])
    judged_tok_s = pooled_tok_s([(s.get("judged_tokens") or n, s.get("judged_tok_s", s["spec_tok_s"])) for c, s, n in spec])
    judged_tokens = sum((s.get("judged_tokens") or 0) for c, s in per_case if c["spec"]["rounds"])
    return plain_tok_s, spec_tok_s, instr_tok_s, judged_tok_s, judged_tokens


def _divergences(session, per_case) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Greedy cases whose outputs diverged (with the check's verdict), and those from sessions before the divergence
    check: a finished greedy case whose outputs differ, with no margin."""
    greedy = session.regime == "greedy"
    divergences = [{"case": c["id"], **s["divergence"]} for c, s in per_case if greedy and s["divergence"]]
    unchecked = [{"case": c["id"], "position": s["match"]["first_divergence"]} for c, s in per_case
                 if greedy and c.get("complete") and s["match"] and not s["match"]["equal"] and not s["divergence"]]
    return divergences, unchecked


def _ledger_residual(t_verify, t_draft, t_rollback, tokens_per_round, noise) -> float | None:
    """Measured round (per token) = draft + verify + rollback (timed in the ledger's rounds) + bookkeeping: the rest,
    over the judged (full) rounds, the rounds its parts were timed in."""
    parts = (t_verify + t_draft + (t_rollback or 0.0)) if t_verify is not None and t_draft is not None else None
    round_ms_list, round_tokens = noise.get("judged_ms") or noise["rate_ms"], noise.get("judged_tokens") or noise["rate_tokens"]
    round_ms = stats.mean(round_ms_list)
    round_tokens_each = round_tokens / len(round_ms_list) if round_ms_list else None
    if not (parts and round_ms and round_tokens_each and tokens_per_round):
        return None
    return 1.0 - parts * (round_tokens_each / tokens_per_round) / round_ms


def energy(session, case_ids: set) -> EnergySummary:
    """The energy figures of the summarized cases' sensor windows (``analysis.energy``), or why there are none."""
    sensors = (session.data.get("environment") or {}).get("sensors") or {}
    why = None if sensors.get("available") else (sensors.get("reason") or None)
    return energy_figures([w for w in session.data.get("sensors") or [] if w.get("case") in case_ids], why)


def aggregate_breakdown(bds: list[Breakdown]) -> BreakdownAggregate | None:
    """Median over cases of each breakdown figure, and of each end of its spread over reps."""
    if not bds:
        return None
    phases: list[PhaseAggregate] = []
    for side in ("decode", "verify"):
        rows = [b[side] for b in bds if side in b]
        if not rows:
            return None
        # every measured forward has these: the medians of floats are floats
        whole = cast(float, stats.median(r["whole_ms"] for r in rows))
        instrumented = cast(float, stats.median(r["instrumented_ms"] for r in rows))
        block_sum = cast(float, stats.median(r["block_sum_ms"] for r in rows))
        blocks = {c: stats.median(r["blocks"].get(c) for r in rows) for c in rows[0]["blocks"]}
        skips = {c: stats.median(r.get("skip_estimates", {}).get(c) for r in rows) for c in rows[0].get("skip_estimates", {})}
        inter = whole - block_sum
        agg: PhaseAggregate = {
            "positions": rows[0]["positions"],
            "whole_ms": whole,
            "instrumented_ms": instrumented,
            "block_sum_ms": block_sum,
            "blocks": blocks,
            "skip_estimates": skips,
            "inter_block_ms": inter,
            "barrier_distortion": instrumented / whole - 1 if whole else None,
            "spread": _aggregate_spread(rows, {"whole_ms": whole, "instrumented_ms": instrumented,
                                               "block_sum_ms": block_sum, "inter_block_ms": inter, "blocks": blocks,
                                               "skip_estimates": skips}),
        }
        if COMMUNICATION in agg["blocks"]:
            agg["communication_share"] = _communication_share(agg)
            per_rank = _aggregate_per_rank(rows)
            if per_rank:
                agg["per_rank"] = per_rank
        phases.append(agg)
    dec, ver = phases
    ratios = {  # a verify block None (never measured) where its decode block is not fails here, as it always did
        c: (cast(float, ver["blocks"][c]) / d) if (d := dec["blocks"].get(c)) else None for c in dec["blocks"]
    }
    # A ratio of overheads only means something when both are real: positive and above their noise.
    both = all(d["inter_block_ms"] > 0 and not intervals.not_a_time(d["inter_block_ms"], d["spread"]["inter_block_ms"])
               for d in (dec, ver))
    ratios["inter_block"] = ver["inter_block_ms"] / dec["inter_block_ms"] if both else None
    ratios["whole"] = ver["whole_ms"] / dec["whole_ms"] if dec["whole_ms"] else None
    out: BreakdownAggregate = {"decode": dec, "verify": ver, "ratios": ratios, "block_order": list(dec["blocks"]),
                               "labels": bds[-1].get("labels", {})}
    dist = next((b["distributed"] for b in reversed(bds) if b.get("distributed")), None)
    if dist:
        out["distributed"] = dist
    return out


def _communication_share(agg: PhaseAggregate) -> CommunicationShare:
    """Communication's share of a forward on each ruler: barrier-timed communication over the sum of blocks, and
    the barrier-free estimate (whole graph minus the graph with local stand-ins for the collectives) over the
    whole graph. None where the figure is missing or its denominator is not positive."""
    comm, free = agg["blocks"].get(COMMUNICATION), (agg.get("skip_estimates") or {}).get(COMMUNICATION)
    return {
        "barrier": comm / agg["block_sum_ms"] if comm is not None and agg["block_sum_ms"] else None,
        "barrier_free": free / agg["whole_ms"] if free is not None and agg["whole_ms"] else None,
    }


def _aggregate_per_rank(rows: list[PhaseBreakdown]) -> PerRankAggregate | None:
    """Each rank's figures, median over cases (rank by rank): whole graph, barrier-timed blocks (communication
    among them) and barrier-free estimates, communication split into waiting for the slowest rank and transfer,
    and compute = whole graph − communication. None unless every case has figures for the same ranks.

    ``communication_ms`` is the barrier-free estimate where there is one (whole graph minus the graph with local
    stand-ins for the collectives), so ``compute_ms`` is the time of that collective-free forward, a measured
    time on the whole-graph ruler; the barrier-timed figure (``communication_barrier_ms``) includes waiting for the
    slowest rank at every collective, which on a loaded machine can exceed the whole graph."""
    prs: list[dict] = [p for p in (r.get("per_rank") for r in rows) if isinstance(p, dict) and p.get("whole_ms")]
    if not prs or len(prs) != len(rows):  # every case has per-rank figures
        return None
    n = len(prs[0]["whole_ms"])
    if any(len(p["whole_ms"]) != n for p in prs):
        return None

    def med(get) -> list[float | None]:
        return [stats.median(_at(get(p), i) for p in prs) for i in range(n)]

    whole = med(lambda p: p.get("whole_ms"))
    blocks = {c: med(lambda p, c=c: (p.get("blocks") or {}).get(c)) for c in prs[0].get("blocks") or {}}
    skips = {c: med(lambda p, c=c: (p.get("skip_estimates") or {}).get(c)) for c in prs[0].get("skip_estimates") or {}}
    split = {k: med(lambda p, k=k: (p.get("communication_split") or {}).get(k)) for k in ("wait_ms", "transfer_ms")}
    barrier = blocks.get(COMMUNICATION) or [None] * n
    free = skips.get(COMMUNICATION)
    ruler = "barrier_free" if free and all(x is not None for x in free) else "barrier"
    comm = free if free is not None and ruler == "barrier_free" else barrier
    return {
        "ranks": n,
        "whole_ms": whole,
        "blocks": blocks,
        "skip_estimates": skips,
        "communication_split": split,
        "communication_barrier_ms": barrier,
        "communication_ruler": ruler,
        "communication_ms": comm,
        "compute_ms": [w - c if w is not None and c is not None else None for w, c in zip(whole, comm)],
    }


def _at(xs, i: int):
    return xs[i] if isinstance(xs, list) and i < len(xs) else None


def _aggregate_spread(rows: list[PhaseBreakdown], agg: Mapping[str, Any]) -> BreakdownSpread:
    """Each figure's spread over reps, as the median over cases of its lower and of its upper end (widened
    to hold the figure itself). Breakdowns from before spreads were kept have none: every entry is None."""

    def med(get, value):
        ivs = [iv for iv in (get(r.get("spread") or {}) for r in rows) if iv]
        if not ivs or value is None:
            return None
        return intervals.union([stats.median(iv[0] for iv in ivs), stats.median(iv[1] for iv in ivs)], [value, value])

    return {
        "whole_ms": med(lambda s: s.get("whole_ms"), agg["whole_ms"]),
        "instrumented_ms": med(lambda s: s.get("instrumented_ms"), agg["instrumented_ms"]),
        "block_sum_ms": med(lambda s: s.get("block_sum_ms"), agg["block_sum_ms"]),
        "inter_block_ms": med(lambda s: s.get("inter_block_ms"), agg["inter_block_ms"]),
        "blocks": {c: med(lambda s, c=c: (s.get("blocks") or {}).get(c), v) for c, v in agg["blocks"].items()},
        "skip_estimates": {c: med(lambda s, c=c: (s.get("skip_estimates") or {}).get(c), v)
                           for c, v in agg["skip_estimates"].items()},
    }
