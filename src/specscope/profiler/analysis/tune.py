"""``specscope tune``: which k, with which drafter, wins on this machine? Pure Python over an engine seam.

1. Plain decoding of each prompt gives T_decode (and the tokens the oracle drafts from).
2. The verify curve: whole-graph verify forwards over n = 1..K+1 positions at mid-run context,
   timed apart from any speculative run (interleaved repeats), for the first predictions.
3. Per drafter, the acceptance trace A(s) of every prompt (``profiler.analysis.trace_walk``: how many of the
   drafter's next K_max proposals from each position of the target's own output agree with it), one
   speculative run at K_max (instrumented rounds: T_draft(K), rollback by accepted count, bookkeeping)
   and, for a real drafter, rounds timed apart at every k (``components``: what drafting adds to a round run end
   to end, less the verify timed just before it); the oracle (a fixed charge) and a seam without ``components``
   take T_draft(k) on the line through a short run at k = 1 and the K_max run.
4. For every k ≤ K: E(k), the predicted speedup and its 95% interval (``profiler.analysis.tune_predict``, which
   explains how), from what steps 1–3 measured.
5. Confirmation: end-to-end speculative runs at each drafter's best predicted k and its neighbours
   (or every k), each right after a plain run of its own (A/B pairs), repeated. Right before and after
   every pair (never inside it) the prediction's timings at that k are re-taken apart from both runs
   (a real drafter's rounds as ``components`` times them: verify with its tap and read-back, what drafting
   adds, rollback by accepted count; else the verify forward), so drift on a shared machine hits the
   prediction and the measurement alike; a confirmed row's final prediction uses them, with T_decode from
   its own pairs' plain runs (the error is then E(k) and the round's cost). Measured speedup =
   the pooled speculative tok/s ÷ the pooled plain tok/s over the repeats (a ratio of means, as the
   prediction is; ``profiler.analysis.tune_confirm`` gives its interval), over full rounds (a run's last,
   shorter round — fewer drafts because max-tokens is near — is left out, as it is from the K_max run's
   acceptance); prediction error = predicted ÷ measured − 1, its interval paired repeat by repeat where E(k) is
   exact (``tune_confirm.paired_error``); the repeats stop on that interval's width (``PRECISE_HALF``). "Exact" is
   checked, not assumed (``trace_check``): every confirmation run's tokens and rounds are compared with the trace's
   walk at its k, and a mismatch, or a trace whose recorded agreement with the target is below 1, voids it (the
   unpaired interval then, and the output says why).
6. One recommendation: the best measured real drafter (the oracle only when nothing else ran).

The seam (``engine_adapter.tune_runs.TuneEngine``) offers ``available_drafters()``, ``describe()``,
``plain(prompt, n)``, ``speculative(drafter, prompt, plain_tokens, k, n, round_kinds, seed=0)``,
``verify_samples(context, tokens, positions, reps, ns=None)`` and ``trace(drafter, prompt, plain_tokens,
k_max, seed=0)``; tests may pass any object that does.
"""

from __future__ import annotations

import statistics
from typing import Any

from specscope.drafter_kinds import DRAFTER_LABELS, WHAT_IF_DRAFTERS
from specscope.errors import SpecscopeError

from specscope.profiler.analysis import stats, trace_check, trace_walk
from specscope.profiler.analysis.records import TraceFacts, TuneDrafter, TuneResult, TuneRow
from specscope.profiler.analysis.tune_confirm import (AGREE, MAX_REPS, MIN_REPS, PRECISE_HALF, agreement, paired_error,
                                                      precise, rate_ratio)
from specscope.profiler.analysis.tune_predict import (GREEDY_ASSUMPTION, K_MAX_ASSUMPTION, TEMPERATURE_ASSUMPTION,
                                                       UNCHAINED_NOTE, TermsBelowNoise,
                                                      per_position, predict)
from specscope.profiler.analysis.tune_recommend import confirm_set, recommendation
from specscope.profiler.session.trace_record import check as check_trace

LABELS = DRAFTER_LABELS
RETIME_ATTEMPTS = 2  # times a k whose terms add up to nothing is timed again (2×, then 4× the rounds) before refusing
WHAT_IF = set(WHAT_IF_DRAFTERS)


# -- the run ----------------------------------------------------------------------------------------------------------

def _rate(tokens: int, ms: float) -> float | None:
    return 1000.0 * tokens / ms if ms > 0 and tokens > 0 else None


def run_tune(seam, prompts: list[list[int]], k_max: int = 4, max_tokens: int = 64, drafters: list[str] | None = None,
             reps: int | None = None, verify_reps: int = 5, confirm: str = "best", progress=lambda message: None,
             on_update=None, component_reps: int = 8, beside_reps: int = 4) -> TuneResult:
    """The whole tuning run as a JSON-able record (``specscope tune --json``; ``session["tune"]``).

    ``on_update(result)``, if given, gets the result so far (``"partial": True``): the predictions once every
    drafter's K_max run is in, then again after every confirmation repeat, so a page fills in as it goes.
    ``component_reps``: rounds per earlier accepted count timed apart before the confirmations; ``beside_reps``: the
    same, re-timed right before and after each confirmation pair."""
    if not 1 <= k_max <= 16:
        raise SpecscopeError("--k-max must be between 1 and 16")
    if max_tokens < 4:
        raise SpecscopeError("--max-tokens must be at least 4")
    if reps is not None and reps < 1:
        raise SpecscopeError("--reps must be at least 1")
    if not prompts:
        raise SpecscopeError("no prompts to tune on")
    info = seam.describe()
    names = list(drafters or info["drafters"])
    unknown = [d for d in names if d not in info["drafters"] and d not in WHAT_IF]
    if unknown:
        have = ", ".join(info["drafters"] + sorted(WHAT_IF))
        raise SpecscopeError(f"drafter {unknown[0]!r} is not available for this model (available: {have})")

    progress("plain decoding")
    plain = [seam.plain(p, max_tokens) for p in prompts]
    plain_steps = [ms for r in plain for ms in r["step_ms"]]
    mid = max_tokens // 2
    context = list(prompts[0]) + plain[0]["tokens"][:mid]
    progress(f"verify curve over n = 1..{k_max + 1} at context {len(context)}")
    verify = seam.verify_samples(context, plain[0]["tokens"][mid:], k_max + 1, verify_reps)

    per_drafter: dict[str, TuneDrafter] = {}
    traces: dict[str, list[dict[str, Any]]] = {}  # drafter -> its acceptance traces
    checked = trace_check.Exactness(info.get("greedy", True))  # whether E(k) is exact after all, and why not
    pred, inputs = {}, {}
    for name in names:
        progress(f"{name}: a speculative run at k = {k_max}")
        # The oracle's draws depend on a seed: its K_max run covers every seed the confirmations use (one per repeat),
        # so acceptance is measured on the same draws it is held against. Real greedy drafters need one run.
        # With repeats chosen adaptively (reps None) that is up to MAX_REPS seeds.
        seeds = range(reps if reps is not None else MAX_REPS) if name in WHAT_IF else [0]
        runs = [seam.speculative(name, p, pl["tokens"], k_max, max_tokens, "instrumented", seed=s)
                for s in seeds for p, pl in zip(prompts, plain)]
        full = [r for run in runs for r in run["rounds"] if r["drafted"] == k_max]
        draft_k = [r["draft_ms"] for r in full]
        draft_1 = []
        if k_max > 1:
            progress(f"{name}: draft steps at k = 1")
            short = [seam.speculative(name, p, pl["tokens"], 1, max(4, max_tokens // 2), "instrumented")
                     for p, pl in zip(prompts, plain)]
            draft_1 = [r["draft_ms"] for run in short for r in run["rounds"] if r["drafted"] == 1]
        accepted = [r["accepted"] for r in full]
        tr = None
        if hasattr(seam, "trace"):  # the acceptance trace of every prompt (every oracle seed): E(k) walked on it
            progress(f"{name}: acceptance trace over {max_tokens} tokens × {len(prompts)} prompts")
            tr = [seam.trace(name, p, pl["tokens"], k_max, seed=s) for s in seeds for p, pl in zip(prompts, plain)]
            for t in tr:
                check_trace(t)
            traces[name] = tr
            checked.traced(name, tr, seeds)
        in_round: dict[int, list[float]] = {}
        book: dict[int, list[float]] = {}
        timeable = hasattr(seam, "components") and name not in WHAT_IF

        def time_apart(k: int, n_reps: int) -> None:
            """What drafting adds to a round at k, and the round's bookkeeping, timed apart as run's prediction does
            (added to what was timed there before: nothing measured is dropped)."""
            comps = [seam.components(name, p, pl["tokens"], k, n_reps) for p, pl in zip(prompts, plain)]
            in_round.setdefault(k, []).extend(x for c in comps for x in c["draft_ms"])
            if all(len(c.get("bookkeeping_ms") or []) == len(c["draft_ms"]) for c in comps):
                book.setdefault(k, []).extend(x for c in comps for x in c["bookkeeping_ms"])
            else:  # bookkeeping timed for only some rounds cannot be weighted with them
                book.pop(k, None)

        if timeable:
            progress(f"{name}: rounds timed apart at k = 1..{k_max}")
            for k in range(1, k_max + 1):
                time_apart(k, component_reps)
        inputs[name] = (full, draft_1, tr, in_round, book)
        for attempt in range(RETIME_ATTEMPTS + 1):
            try:
                pred[name] = predict(full, k_max, verify, draft_1, plain_steps, traces=tr, draft_by_k=in_round,
                                     bookkeeping_by_k=book)
                break
            except TermsBelowNoise as below:
                # One stall in a verify timed alone can sink a k's few paired differences below zero; a refusal
                # then would lose every run so far. Time that k again, with more rounds, before refusing.
                if not timeable or attempt == RETIME_ATTEMPTS or below.k not in in_round:
                    raise
                more = component_reps * 2 ** (attempt + 1)
                progress(f"{name}: at k = {below.k} the terms timed apart add up to nothing (noise): timing "
                         f"{more} more rounds per accepted count there")
                time_apart(below.k, more)
        lo_hi = [stats.wilson_interval(sum(1 for a in accepted if a >= i), len(accepted)) for i in range(1, k_max + 1)]
        per_drafter[name] = {"label": LABELS.get(name, name), "what_if": name in WHAT_IF, "rounds": len(full),
                             "acceptance": per_position(accepted, k_max), "acceptance_ci95": [list(x) for x in lo_hi],
                             "t_draft_ms_k1": statistics.fmean(draft_1 or draft_k) if (draft_1 or draft_k) else None,
                             "t_draft_ms_kmax": statistics.fmean(draft_k) if draft_k else None,
                             # the instrumented run's own verify at K_max+1 positions, beside the curve's (a check)
                             "t_verify_ms_in_run": statistics.median([r["verify_ms"] for r in full]) if full else None}
        if tr:
            per_drafter[name]["trace"] = _trace_facts(tr, full, k_max)

    plan = confirm_set(pred, k_max, confirm)
    # per repeat: (tokens, ms) over every round, then (rounds, tokens, ms) of its full rounds
    spec_reps: dict[tuple[str, int], list[tuple]] = {c: [] for c in plan}
    plain_reps: dict[tuple[str, int], list[tuple]] = {c: [] for c in plan}  # (tokens, ms) of the plain run beside it
    beside: dict[tuple[str, int], dict] = {c: {"verify": [], "draft": [], "rollback": {}, "bookkeeping": []} for c in plan}
    # the same, repeat by repeat (what was timed before and after that repeat's pair): each repeat's own predicted round
    beside_by_rep: dict[tuple[str, int], list[dict]] = {c: [] for c in plan}
    rep_cost: dict[tuple[str, int, int], float] = {}  # (drafter, k, repeat) -> its predicted round (ms), once known
    confirm_steps: list[float] = []
    steps_beside: dict[tuple[str, int], list[float]] = {c: [] for c in plan}  # each setting's own plain steps

    def time_beside(name: str, k: int, rep: int) -> None:
        """The prediction's timings re-taken right before and after a confirmation pair (never inside it), so drift
        on a shared machine hits the prediction and the measurement alike: for a real drafter, one round per earlier
        accepted count run as an end-to-end round runs it (``components``: verify with the drafter's hidden-state tap
        and accept read-back, what drafting adds, rollback by accepted count); else the whole-graph verify forward."""
        got: dict[str, Any] = {"verify": [], "draft": [], "rollback": {}, "bookkeeping": []}
        if hasattr(seam, "components") and name not in WHAT_IF:
            i = rep % len(prompts)
            c = seam.components(name, prompts[i], plain[i]["tokens"], k, beside_reps)
            got["draft"] = list(c["draft_ms"])
            if len(c.get("bookkeeping_ms") or []) == len(c["draft_ms"]):
                got["bookkeeping"] = list(c["bookkeeping_ms"])
            for a, xs in (c.get("rollback_ms") or {}).items():
                got["rollback"].setdefault(int(a), []).extend(xs)
            got["verify"] = list(c.get("verify_ms") or [])
        if not got["verify"]:
            got["verify"] = list(seam.verify_samples(context, plain[0]["tokens"][mid:], k + 1, 2, ns=[k + 1])[k + 1])
        per = beside_by_rep[(name, k)]
        if len(per) <= rep:
            per.append({"verify": [], "draft": [], "rollback": {}, "bookkeeping": []})
        for into in (beside[(name, k)], per[rep]):
            for key in ("verify", "draft", "bookkeeping"):
                into[key] += got[key]
            for a, xs in got["rollback"].items():
                into["rollback"].setdefault(a, []).extend(xs)

    def rep_costs(name: str, k: int, steps: list[float]) -> list[float] | None:
        """Each finished repeat's predicted round (ms) at k, priced by the one prediction (``predict``) from the
        timings taken beside that repeat's own pair alone (the rest as the pooled prediction has it)."""
        if name in WHAT_IF:
            return None
        full, draft_1, tr, in_round, book = inputs[name]
        out = []
        for r, b in enumerate(beside_by_rep[(name, k)][:len(spec_reps[(name, k)])]):
            if (name, k, r) not in rep_cost:
                if not b["verify"]:
                    return None
                own_book = b["bookkeeping"] and len(b["bookkeeping"]) == len(b["draft"])
                row = predict(full, k_max, {**verify, k + 1: b["verify"]}, draft_1, steps, traces=tr,
                              draft_by_k={**in_round, **({k: b["draft"]} if b["draft"] else {})},
                              rollback_by_k={k: b["rollback"]} if b["rollback"] else None,
                              bookkeeping_by_k={**book, **({k: b["bookkeeping"]} if own_book else {})},
                              resamples=20, only_k=k)[0]
                rep_cost[(name, k, r)] = row["round_ms"]
            out.append(rep_cost[(name, k, r)])
        return out

    def exact(name: str, k: int) -> bool:
        return checked.exact(name, k, bool(inputs[name][2]))

    def known(c: tuple[str, int]) -> bool:
        """A confirmed setting known well enough to stop: its error's paired interval (greedy, a trace: as ``_row``
        judges it) no wider than ±PRECISE_HALF; else its measured speedup known to ±AGREE (``tune_confirm.precise``).
        Width only: stopping on where the interval lies would bias the verdict. Without the final prediction's
        bootstrap, which grows with every repeat's plain steps."""
        name, k = c
        spec = spec_reps[c]
        if exact(name, k) and name not in WHAT_IF:
            half = _paired_half(spec, rep_costs(name, k, confirm_steps or plain_steps))
            if half is not None:
                return half <= PRECISE_HALF
        ratio, ci = _measured(spec, plain_reps[c])
        return precise(ci, ratio)

    def result(partial: bool) -> TuneResult:
        """The tune JSON (``session["tune"]``, ``tune --json``), so far (``partial``) or whole."""
        all_plain = [x for xs in plain_reps.values() for x in xs]
        plain_rate = _rate(sum(n for n, _ in all_plain), sum(ms for _, ms in all_plain))
        steps = confirm_steps or plain_steps  # before any confirmation: the first plain runs' steps
        # Final predictions. A confirmed (drafter, k) takes everything timed beside its own pairs: T_decode from the
        # plain runs its measured side divides by (so the error is E(k) and the round's cost, not which minutes the
        # plain runs fell in), T_verify, T_draft and T_rollback from the timings re-taken around them. The rest: the
        # curve, the components timed before the confirmations, and every plain run so far.
        rows: list[TuneRow] = []
        for name in names:
            full, draft_1, tr, in_round, book = inputs[name]
            mine = {k: beside[(n, k)] for n, k in plan if n == name and beside[(n, k)]["verify"]}
            verify_n = {**verify, **{k + 1: b["verify"] for k, b in mine.items()}}
            draft_n = {**in_round, **{k: b["draft"] for k, b in mine.items() if b["draft"]}}
            rollback_n = {k: b["rollback"] for k, b in mine.items() if b["rollback"]}
            book_n = {**book, **{k: b["bookkeeping"] for k, b in mine.items()
                                 if b["bookkeeping"] and len(b["bookkeeping"]) == len(b["draft"])}}
            steps_n = {k: own for (n, k), own in steps_beside.items() if n == name and own}
            for p in predict(full, k_max, verify_n, draft_1, steps, traces=tr, draft_by_k=draft_n,
                             rollback_by_k=rollback_n, plain_steps_by_k=steps_n, bookkeeping_by_k=book_n):
                c = (name, p["k"])
                e_exact = p.get("acceptance_source") == "trace" and exact(name, p["k"])
                rows.append(_row(name, p, spec_reps.get(c), plain_reps.get(c), p["k"] in mine, e_exact=e_exact,
                                 costs=rep_costs(name, p["k"], steps) if e_exact and p["k"] in mine else None))
                if info.get("greedy", True) and p.get("acceptance_source") == "trace":
                    rows[-1]["e_exact"] = e_exact
                    why = checked.void_reason(name, p["k"])
                    if why:  # said beside the row: its error's interval is the sampled one, not the paired one
                        rows[-1]["e_exact_void"] = why
        voided = [f"{r['drafter']} k={r['k']}: {r['e_exact_void']}" for r in rows if r.get("e_exact_void")]
        out: TuneResult = {
            "recommendation": recommendation(rows) if not partial else {},  # none before the confirmations are in
            "rows": rows,
            "assumption": (TEMPERATURE_ASSUMPTION if not info.get("greedy", True) else
                           GREEDY_ASSUMPTION if traces else K_MAX_ASSUMPTION)
            + (UNCHAINED_NOTE if any(t.get("A_by_k") for tr in traces.values() for t in tr) else "")
            + (" E(k) not exact where the check found otherwise (there the error's interval is the unpaired one, the "
               "prediction's with E(k) resampled over the measured one): " + "; ".join(voided) if voided else ""),
            "acceptance_source": "trace" if traces else "k_max_rounds",
            "traces": traces,
            "regime": info.get("regime", "greedy"),
            "model": info.get("model"),
            "k_max": k_max,
            "max_tokens": max_tokens,
            "prompts": len(prompts),
            "confirm_reps": max((len(v) for v in spec_reps.values()), default=0),
            # what "measured" is (a tune saved before this key took the median of per-repeat ratios)
            "measured_method": "pooled",
            "confirm_reps_rule": (f"fixed ({reps})" if reps is not None else
                                  f"until each error's paired interval is ±{PRECISE_HALF:.1%} or narrower, a what-if's "
                                  f"measured speedup known to ±{AGREE:.0%}; {MIN_REPS}–{MAX_REPS} repeats"),
            "t_decode_ms": statistics.fmean(steps),
            "plain_tok_s": plain_rate,
            # means, as the prediction takes them (tune_predict): the figures shown are the ones it used
            "verify_ms": {str(n): statistics.fmean(v) for n, v in verify.items()},
            "verify_ms_beside": {f"{n}:{k}": statistics.fmean(b["verify"]) for (n, k), b in beside.items() if b["verify"]},
            "verify_context": len(context),
            "drafters": per_drafter,
            "method": METHOD,
        }
        if partial:
            out["partial"] = True
        return out

    if on_update is not None:
        on_update(result(partial=True))
    # ``reps`` None: repeat until every confirmed setting's error is known precisely enough (``known``: by
    # the interval's width, never by where it lies), or MAX_REPS
    fixed = reps is not None
    n_reps = reps if reps is not None else MAX_REPS
    for rep in range(n_reps):
        if not fixed and rep >= MIN_REPS and all(known(c) for c in plan):
            break
        progress(f"confirmation {rep + 1}{'' if fixed else ' (up to ' + str(MAX_REPS) + ')'}: "
                 f"{len(plan)} speculative settings, each beside its own plain run")
        order = plan[rep % len(plan):] + plan[: rep % len(plan)]  # rotate, so no setting always runs first
        for name, k in order:
            # Each speculative run is held against a plain run made right before it (A/B pairs, as bench does), and the
            # prediction's timings are re-taken right before and after the pair (apart from both).
            time_beside(name, k, rep)
            steps = [ms for p in prompts for ms in seam.plain(p, max_tokens)["step_ms"]]
            confirm_steps += steps
            steps_beside[(name, k)] += steps
            plain_reps[(name, k)].append((len(steps), sum(steps)))
            runs = [seam.speculative(name, p, pl["tokens"], k, max_tokens, "end_to_end", seed=rep) for p, pl in zip(prompts, plain)]
            rr = [r for run in runs for r in run["rounds"]]
            checked.confirm(name, k, rep, inputs[name][2], [pl["tokens"] for pl in plain], runs)
            time_beside(name, k, rep)
            # every round, and the full rounds (k drafts) apart: the rounds the prediction prices and is judged against,
            # as run's (rounds.judged_rounds); the shorter last rounds of each prompt are in the end-to-end figure only
            full_k = [r for r in rr if r["drafted"] == k]
            spec_reps[(name, k)].append((sum(r["emitted"] for r in rr), sum(r["ms"] for r in rr), len(full_k),
                                         sum(r["emitted"] for r in full_k), sum(r["ms"] for r in full_k)))
        if on_update is not None and rep + 1 < n_reps:
            on_update(result(partial=True))
    return result(partial=False)


def _measured(spec: list[tuple], plain: list[tuple]) -> tuple[float | None, list[float] | None]:
    """The pooled speedup of a setting's repeats over their full rounds (all rounds where a repeat has no full one) and
    its 95% interval (``tune_confirm.rate_ratio``)."""
    judged = [(s[3], s[4]) if len(s) > 4 and s[2] and s[4] > 0 else s[:2] for s in spec]
    pairs = [(s, p) for s, p in zip(judged, plain) if s[1] > 0 and p[1] > 0 and s[0] > 0 and p[0] > 0]
    return rate_ratio([s for s, _ in pairs], [p for _, p in pairs])


def _paired_half(spec: list[tuple], costs: list[float] | None) -> float | None:
    """The paired error interval's relative half-width (``tune_confirm.paired_error``) over a setting's repeats, each
    with full rounds and a priced round; None when some repeat lacks either, or too few repeats for an interval."""
    if not costs or len(costs) != len(spec) or not all(len(s) > 4 and s[2] and s[4] > 0 for s in spec):
        return None
    return paired_error([(s[3], s[4]) for s in spec], costs)[1]


def _trace_facts(traces: list[dict], full: list[dict], k_max: int) -> TraceFacts:
    """What a drafter's traces say, beside what its K_max rounds would have said: E(k) both ways, the cost."""
    curve = trace_walk.curve(traces, k_max)
    acc = [r["accepted"] for r in full]
    cost = [t.get("cost_ms", {}).get("total_ms") for t in traces]
    return {"positions": sum(len(t["A"]) for t in traces), "estimate": any(t.get("estimate") for t in traces),
            "tokens_per_round": [c["tokens_per_round"] for c in curve],
            "acceptance_by_depth": curve[-1]["acceptance_by_depth"] if curve else [],
            "tokens_per_round_k_max_rounds": [1.0 + statistics.fmean(min(a, k) for a in acc) if acc else None
                                              for k in range(1, k_max + 1)],
            "cost_ms": sum(c for c in cost if c is not None) if any(c is not None for c in cost) else None}


METHOD = ("E(k): the acceptance trace walked at k (else the K_max rounds); T_verify: the mean of whole-graph verify forwards "
          "at mid-run context, apart from any speculative run; T_draft: at every k, what drafting adds to a round timed apart "
          "(a round run end to end less the verify timed just before it, the mean of the pairs, not floored at zero; else "
          "instrumented draft steps at 1 and K_max, a line between); T_rollback (by accepted count) and T_bookkeeping: the "
          "K_max run; T_decode: every plain run. For a confirmed k, T_verify (with the drafter's hidden-state tap and accept "
          "read-back), T_draft and T_rollback are re-timed apart right before and after each confirmation pair, T_decode "
          "is its own pairs' plain runs, and its prediction uses those. "
          "Measured: end-to-end speculative runs, each after a plain run of its own (whose T_decode both sides use), "
          "the speculative side's full rounds (k drafts: the rounds the prediction prices; each prompt's last, shorter "
          "rounds are left out, as run judges), the plain side's every step; the pooled rates' ratio, a 95% "
          "interval by the delta method over the paired repeats (Student t). The error's interval: under greedy decoding "
          "with a trace whose walk the confirmation runs reproduce, token by token and round by round (E(k) exact, "
          "checked), paired repeat by repeat, each repeat's round priced from the timings beside its own "
          "pair (T_decode cancels; delta method, Student t); else the prediction's interval over the measured one")


def _row(name: str, p: dict, spec: list[tuple] | None, plain: list[tuple] | None, timed_beside: bool,
         e_exact: bool = False, costs: list[float] | None = None) -> TuneRow:
    """One row: the prediction at k, and the confirmation runs' measurement when there are some. ``e_exact``: the
    confirmation's rounds are the walked ones (greedy, a trace of the same prompts), so only the timings are uncertain:
    with ``costs`` (each repeat's predicted round from the timings beside its pair) the error's interval is the paired
    one (``tune_confirm.paired_error``), else the prediction's timing interval over the measured one."""
    row: TuneRow = {
        "drafter": name, "k": p["k"], "predicted_speedup": p["predicted_speedup"],
        "predicted_ci95": p["predicted_ci95"], "measured_speedup": None, "measured_range": None,
        "prediction_error": None, "what_if": name in WHAT_IF, "tokens_per_round": p["tokens_per_round"],
        "timed_beside": timed_beside,  # T_verify, T_draft and T_rollback re-taken beside the confirmation runs
        # the prediction's own figures at k (tune_predict.predict), as it has them
        "tokens_per_round_k_max_rounds": p["tokens_per_round_k_max_rounds"],
        "acceptance_source": p["acceptance_source"],
        "division_speedup": p["division_speedup"],
        "t_decode_ms": p["t_decode_ms"],
        "t_verify_ms": p["t_verify_ms"],
        "t_draft_ms": p["t_draft_ms"],
        "t_rollback_ms": p["t_rollback_ms"],
        "t_bookkeeping_ms": p["t_bookkeeping_ms"],
        "t_bookkeeping_source": p["t_bookkeeping_source"],
        "break_even_verify_ms": p["break_even_verify_ms"],
        "t_draft_source": p["t_draft_source"],
        "t_draft_below_noise": p["t_draft_below_noise"],
    }
    measured, ci = _measured(spec or [], plain or [])
    if spec and plain and measured:
        n_rounds = sum(x[2] for x in spec)
        # what the confirmation runs' full rounds had: tokens per round and round time (the error's two halves)
        row["measured_tokens_per_round"] = sum(x[3] if len(x) > 3 else x[0] for x in spec) / n_rounds
        row["measured_round_ms"] = sum(x[4] if len(x) > 4 else x[1] for x in spec) / n_rounds
        row["predicted_round_ms"] = p["round_ms"]  # the round model's (an untimed term named in p["untimed"])
        # the pooled rates (a ratio of means, as the prediction is), its interval over the paired repeats; beside it the
        # per-repeat ratios' range and median, for a look at the spread
        rates = [(_rate(s[0], s[1]), _rate(q[0], q[1])) for s, q in zip(spec, plain)]
        per_rep = [a / b for a, b in rates if a and b]
        row["measured_speedup"] = measured
        row["measured_speedup_median"] = statistics.median(per_rep) if per_rep else None
        row["measured_range"] = [min(per_rep), max(per_rep)] if per_rep else None
        row["measured_ci95"] = ci
        row["prediction_error"] = stats.relative_error(row["predicted_speedup"], measured)
        half = _paired_half(spec, costs) if e_exact else None
        if half is not None and costs:
            # each repeat's full rounds (tokens, ms) and its round priced from the timings beside it, to look at
            row["paired_repeats"] = [[s[3], s[4], c] for s, c in zip(spec, costs)]
        row["agreement"] = agreement(row["prediction_error"], row["predicted_speedup"], ci, len(spec),
                                     p.get("predicted_ci95_timing") if e_exact else row.get("predicted_ci95"),
                                     paired_half=half)
    return row
