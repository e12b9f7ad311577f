"""``specscope tune``: which k, with which drafter, wins on this machine? The figures, as functions of what was
measured (``TuneMeasured``); ``profiler.run.tune_run.run_tune`` runs the engine seam in this order and fills it in.

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
5. Confirmation: end-to-end speculative runs of the best predicted setting and its nearest rival (``confirm_set``
   "decide", the default; each drafter's best k and its neighbours, or every k, on request), each right after a
   plain run of its own (A/B pairs), repeated; every other setting is ranked from the trace and the timings alone.
   Right before and after every pair (never inside it) the prediction's timings at that k are re-taken apart from
   both runs (a real drafter's rounds as ``components`` times them: verify with its tap and read-back, what drafting
   adds, rollback by accepted count; else the verify forward), so drift on a shared machine hits the prediction and
   the measurement alike; a confirmed row's final prediction uses them, with T_decode from its own pairs' plain runs
   (the error is then E(k) and the round's cost). Measured speedup = the pooled speculative tok/s ÷ the pooled plain
   tok/s over the repeats (a ratio of means, as the prediction is; ``profiler.analysis.tune_confirm`` gives its
   interval), over full rounds (a run's last, shorter round — fewer drafts because max-tokens is near — is left out,
   as it is from the K_max run's acceptance); prediction error = predicted ÷ measured − 1, its interval paired repeat
   by repeat where E(k) is exact (``tune_confirm.paired_error``). The repeats stop once the recommendation is decided
   (``decision``, ``tune_decide``): the pick measured faster than its rival or equal to it within ±5%, and the pick's
   verdict agrees or off, each at a level corrected for the looks. "Exact" is checked, not assumed (``trace_check``):
   every confirmation run's tokens and rounds are compared with the trace's walk at its k, and a mismatch, or a trace
   whose recorded agreement with the target is below 1, voids it (the unpaired interval then, and the output says
   why).
6. One recommendation: the best measured real drafter (the oracle only when nothing else ran).

The seam ``run_tune`` drives (``engine_adapter.tune_runs.TuneEngine``) offers ``available_drafters()``, ``describe()``,
``plain(prompt, n)``, ``speculative(drafter, prompt, plain_tokens, k, n, round_kinds, seed=0)``,
``verify_samples(context, tokens, positions, reps, ns=None)`` and ``trace(drafter, prompt, plain_tokens,
k_max, seed=0)``; tests may pass any object that does.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import Any, NamedTuple, TypedDict

from specscope.drafter_kinds import DRAFTER_LABELS, WHAT_IF_DRAFTERS
from specscope.profiler.analysis import stats, trace_check, trace_walk
from specscope.profiler.analysis.records import TraceFacts, TuneDrafter, TuneResult, TuneRow
from specscope.profiler.session.measured import TuneDecision
from specscope.profiler.analysis.tune_confirm import (MAX_REPS, MIN_REPS, agreement, paired_error,
                                                      rate_ratio)
from specscope.profiler.analysis.tune_predict import (GREEDY_ASSUMPTION, K_MAX_ASSUMPTION, TEMPERATURE_ASSUMPTION,
                                                      UNCHAINED_NOTE, per_position, predict, predict_tree)
from specscope.profiler.analysis.tune_trees import TREE_NOTE, is_tree, label_of, short_setting, tree_facts
from specscope.profiler.analysis.tune_recommend import confirm_set, recommendation  # noqa: F401 (confirm_set: tune's API, the tests take it from here)
from specscope.profiler.analysis.tune_decide import LEVEL, LOOKS, order_interval, order_state, widen_relative
from specscope.profiler.analysis.sequential import t_quantile
from specscope.profiler.analysis.verdict_rule import AGREES, OFF

LABELS = DRAFTER_LABELS
WHAT_IF = set(WHAT_IF_DRAFTERS)


# -- what a tune measured, and the figures over it ----------------------------------------------------------------------

def _rate(tokens: int, ms: float) -> float | None:
    return 1000.0 * tokens / ms if ms > 0 and tokens > 0 else None


class BesideTimings(TypedDict):
    """The prediction's timings re-taken beside a confirmation pair (``run.tune_run``)."""
    verify: list[float]
    draft: list[float]
    rollback: dict[int, list[float]]   # accepted count -> rollback times
    bookkeeping: list[float]


def no_timings() -> BesideTimings:
    return {"verify": [], "draft": [], "rollback": {}, "bookkeeping": []}


class DrafterInputs(NamedTuple):
    """What a drafter's runs before the confirmations measured, as its predictions take it."""
    full: list[dict]                     # the K_max run's full rounds (K_max drafts)
    draft_1: list[float]                 # draft steps of a short run at k = 1
    traces: list | None                  # its acceptance traces (every prompt, every oracle seed)
    in_round: dict[int, list[float]]     # k -> what drafting adds to a round, timed apart
    book: dict[int, list[float]]         # k -> the round's bookkeeping, timed apart
    # a tree setting's (``tune_trees``), timed apart at each budget B: its tree verify, and its keep by accepted count
    verify: dict[int, list[float]] | None = None
    rollback: dict[int, dict[int, list[float]]] | None = None


@dataclass
class TuneMeasured:
    """Everything a tune has measured so far (``run.tune_run.run_tune`` fills it in as it runs); the figures
    (``rep_costs``, ``known``, ``tune_result``) are functions of it alone."""
    info: dict[str, Any]                 # the seam's ``describe()``
    names: list[str]                     # the drafters tuned, in order
    k_max: int
    max_tokens: int
    prompts: int
    reps: int | None                     # fixed confirmation repeats, or None: until known
    plain_steps: list[float]             # the first plain runs' steps
    context: int                         # the verify curve's context length
    verify: dict[int, list[float]]       # the curve: n positions -> whole-graph verify forwards (ms)
    checked: trace_check.Exactness       # whether E(k) is exact after all, and why not
    tree_budgets: list[int] = field(default_factory=list)  # the budgets tree settings are tuned at (``tune_trees``)
    inputs: dict[str, DrafterInputs] = field(default_factory=dict)
    per_drafter: dict[str, TuneDrafter] = field(default_factory=dict)
    traces: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # drafter -> its acceptance traces
    plan: list[tuple[str, int]] = field(default_factory=list)  # the confirmed (drafter, k)
    # per repeat: (tokens, ms) over every round, then (rounds, tokens, ms) of its full rounds
    spec_reps: dict[tuple[str, int], list[tuple]] = field(default_factory=dict)
    plain_reps: dict[tuple[str, int], list[tuple]] = field(default_factory=dict)  # (tokens, ms) of the plain run beside
    beside: dict[tuple[str, int], BesideTimings] = field(default_factory=dict)  # timings re-taken beside its pairs
    # the same, repeat by repeat (what was timed before and after that repeat's pair): each repeat's own predicted round
    beside_by_rep: dict[tuple[str, int], list[BesideTimings]] = field(default_factory=dict)
    rep_cost: dict[tuple[str, int, int], float] = field(default_factory=dict)  # (drafter, k, repeat) -> round (ms)
    confirm_steps: list[float] = field(default_factory=list)
    steps_beside: dict[tuple[str, int], list[float]] = field(default_factory=dict)  # each setting's own plain steps

    def confirming(self, plan: list[tuple[str, int]]) -> None:
        """The settings to confirm (``confirm_set``), each with nothing measured yet."""
        self.plan = plan
        for c in plan:
            self.spec_reps[c], self.plain_reps[c], self.beside_by_rep[c], self.steps_beside[c] = [], [], [], []
            self.beside[c] = no_timings()

    def add_beside(self, name: str, k: int, rep: int, got: BesideTimings) -> None:
        """Timings re-taken beside repeat ``rep``'s pair at (name, k): pooled, and kept for that repeat."""
        per = self.beside_by_rep[(name, k)]
        if len(per) <= rep:
            per.append(no_timings())
        for into in (self.beside[(name, k)], per[rep]):
            into["verify"] += got["verify"]
            into["draft"] += got["draft"]
            into["bookkeeping"] += got["bookkeeping"]
            for a, xs in got["rollback"].items():
                into["rollback"].setdefault(a, []).extend(xs)

    def add_pair(self, name: str, k: int, steps: list[float], rounds: list[dict]) -> None:
        """One confirmation pair at (name, k): the plain run's steps and the speculative runs' rounds."""
        self.confirm_steps += steps
        self.steps_beside[(name, k)] += steps
        self.plain_reps[(name, k)].append((len(steps), sum(steps)))
        # every round, and the full rounds (k drafts) apart: the rounds the prediction prices and is judged against,
        # as run's (rounds.judged_rounds); the shorter last rounds of each prompt are in the end-to-end figure only
        full_k = [r for r in rounds if r.get("full", r["drafted"] == k)]
        self.spec_reps[(name, k)].append((sum(r["emitted"] for r in rounds), sum(r["ms"] for r in rounds), len(full_k),
                                          sum(r["emitted"] for r in full_k), sum(r["ms"] for r in full_k)))

    def exact(self, name: str, k: int) -> bool:
        return self.checked.exact(name, k, bool(self.inputs[name].traces))

    def predictions(self, name: str, steps: list[float], beside: Mapping[int, BesideTimings] | None = None,
                    steps_by_k: dict[int, list[float]] | None = None, resamples: int = 2000,
                    only_k: int | None = None) -> list[dict]:
        """A drafter's predictions (``predict``; a tree setting's ``predict_tree``, one per budget) from what was
        timed before the confirmations, with ``beside``: k -> the timings re-taken beside its pairs, in their place."""
        inp = self.inputs[name]
        mine = {k: b for k, b in (beside or {}).items() if b["verify"]}
        draft_n = {**inp.in_round, **{k: b["draft"] for k, b in mine.items() if b["draft"]}}
        rollback_n = {**(inp.rollback or {}), **{k: b["rollback"] for k, b in mine.items() if b["rollback"]}}
        book_n = {**inp.book, **{k: b["bookkeeping"] for k, b in mine.items()
                                 if b["bookkeeping"] and len(b["bookkeeping"]) == len(b["draft"])}}
        if is_tree(name):
            return predict_tree(inp.full, self.k_max, self.tree_budgets, {**(inp.verify or {}),
                                **{k: b["verify"] for k, b in mine.items()}}, inp.draft_1, steps, inp.traces or [],
                                resamples=resamples, draft_by_b=draft_n, rollback_by_b=rollback_n,
                                plain_steps_by_b=steps_by_k, bookkeeping_by_b=book_n, only_b=only_k)
        return predict(inp.full, self.k_max, {**self.verify, **{k + 1: b["verify"] for k, b in mine.items()}},
                       inp.draft_1, steps, traces=inp.traces, draft_by_k=draft_n, rollback_by_k=rollback_n or None,
                       plain_steps_by_k=steps_by_k, bookkeeping_by_k=book_n, resamples=resamples, only_k=only_k)


def drafter_facts(name: str, full: list[dict], draft_1: list[float], traces: list[dict] | None,
                  k_max: int, budgets: list[int] | None = None) -> TuneDrafter:
    """A drafter's K_max run (and its traces) in figures: acceptance by position, draft and verify times (a tree
    setting's: its run at the largest budget, acceptance by depth, and E(B) at each of ``budgets``)."""
    draft_k = [r["draft_ms"] for r in full]
    accepted = [r["accepted"] for r in full]
    lo_hi = [stats.wilson_interval(sum(1 for a in accepted if a >= i), len(accepted)) for i in range(1, k_max + 1)]
    facts: TuneDrafter = {
        "label": label_of(name), "what_if": name in WHAT_IF, "rounds": len(full),
        "acceptance": per_position(accepted, k_max), "acceptance_ci95": [list(x) for x in lo_hi],
        "t_draft_ms_k1": statistics.fmean(draft_1 or draft_k) if (draft_1 or draft_k) else None,
        "t_draft_ms_kmax": statistics.fmean(draft_k) if draft_k else None,
        # the instrumented run's own verify at K_max+1 positions, beside the curve's (a check)
        "t_verify_ms_in_run": statistics.median([r["verify_ms"] for r in full]) if full else None}
    if traces:
        facts["trace"] = tree_facts(traces, full, k_max, budgets or []) if is_tree(name) else _trace_facts(traces, full, k_max)
    return facts


def rep_costs(m: TuneMeasured, name: str, k: int, steps: list[float]) -> list[float] | None:
    """Each finished repeat's predicted round (ms) at k, priced by the one prediction (``predict``) from the
    timings taken beside that repeat's own pair alone (the rest as the pooled prediction has it)."""
    if name in WHAT_IF:
        return None
    out = []
    for r, b in enumerate(m.beside_by_rep[(name, k)][:len(m.spec_reps[(name, k)])]):
        if (name, k, r) not in m.rep_cost:
            if not b["verify"]:
                return None
            m.rep_cost[(name, k, r)] = m.predictions(name, steps, {k: b}, resamples=20, only_k=k)[0]["round_ms"]
        out.append(m.rep_cost[(name, k, r)])
    return out


def _final_rows(m: TuneMeasured, steps: list[float], level: float = 0.95) -> list[TuneRow]:
    """Final predictions. A confirmed (drafter, k) takes everything timed beside its own pairs: T_decode from the
    plain runs its measured side divides by (so the error is E(k) and the round's cost, not which minutes the
    plain runs fell in), T_verify, T_draft and T_rollback from the timings re-taken around them. The rest: the
    curve, the components timed before the confirmations, and every plain run so far."""
    rows: list[TuneRow] = []
    for name in m.names:
        mine = {k: m.beside[(n, k)] for n, k in m.plan if n == name and m.beside[(n, k)]["verify"]}
        steps_n = {k: own for (n, k), own in m.steps_beside.items() if n == name and own}
        for p in m.predictions(name, steps, mine, steps_n):
            c = (name, p["k"])
            e_exact = p.get("acceptance_source") == "trace" and m.exact(name, p["k"])
            rows.append(_row(name, p, m.spec_reps.get(c), m.plain_reps.get(c), p["k"] in mine, e_exact=e_exact,
                             costs=rep_costs(m, name, p["k"], steps) if e_exact and p["k"] in mine else None,
                             level=level))
            if m.info.get("greedy", True) and p.get("acceptance_source") == "trace":
                rows[-1]["e_exact"] = e_exact
                why = m.checked.void_reason(name, p["k"])
                if why:  # said beside the row: its error's interval is the sampled one, not the paired one
                    rows[-1]["e_exact_void"] = why
    return rows


def _assumption(m: TuneMeasured, rows: list[TuneRow]) -> str:
    """What the predictions assume of E(k), and where the exactness check found otherwise."""
    voided = [f"{r['drafter']} k={r['k']}: {r['e_exact_void']}" for r in rows if r.get("e_exact_void")]
    return ((TEMPERATURE_ASSUMPTION if not m.info.get("greedy", True) else
             GREEDY_ASSUMPTION if m.traces else K_MAX_ASSUMPTION)
            + (UNCHAINED_NOTE if any(t.get("A_by_k") for tr in m.traces.values() for t in tr) else "")
            + (TREE_NOTE if m.tree_budgets else "")
            + (" E(k) not exact where the check found otherwise (there the error's interval is the unpaired one, the "
               "prediction's with E(k) resampled over the measured one): " + "; ".join(voided) if voided else ""))


def decision(m: TuneMeasured, rows: list[TuneRow], level: float = LEVEL) -> TuneDecision:
    """Whether the recommendation is decided (``tune_decide``): of the confirmed settings, the one measured fastest
    (the pick) against the other (the rival), and the pick's verdict, each at ``level``."""
    measured = {(r["drafter"], r["k"]): r for r in rows if r.get("measured_speedup") is not None}
    plan = [c for c in m.plan if c in measured]
    out: TuneDecision = {"pick": None, "rival": None, "ratio": None, "ratio_interval": None, "order": None,
                         "verdict": None, "level": level, "looks": LOOKS, "decided": False,
                         "text": "nothing confirmed yet"}
    if not plan:
        return out
    plan.sort(key=lambda c: -(measured[c]["measured_speedup"] or 0.0))
    pick = plan[0]
    out["pick"] = list(pick)
    ag: Mapping[str, Any] = measured[pick].get("agreement") or {}
    verdict = ag.get("state") if ag.get("state") in (AGREES, OFF) else None
    out["verdict"] = verdict
    if len(plan) > 1:
        rival = plan[1]
        out["rival"] = list(rival)
        n = min(len(m.spec_reps[pick]), len(m.spec_reps[rival]))
        ratio, iv = order_interval(_judged(m.spec_reps[pick])[:n], m.plain_reps[pick][:n],
                                   _judged(m.spec_reps[rival])[:n], m.plain_reps[rival][:n], level)
        out["ratio"], out["ratio_interval"], out["order"] = ratio, iv, order_state(iv)
        if out["order"] == "slower":  # cannot be: the pick measures fastest; said as undecided if rounding has it so
            out["order"] = None
    order_done = out["rival"] is None or out["order"] is not None
    out["decided"] = bool(order_done and verdict)
    who = short_setting(pick[0], pick[1])
    order_text = ("the only setting confirmed" if out["rival"] is None else
                  f"{'faster than' if out['order'] == 'faster' else 'within ±5% of' if out['order'] == 'equal' else 'not yet told apart from'} "
                  f"{short_setting(out['rival'][0], out['rival'][1])}"
                  + (f" ({out['ratio']:.3f}×, {level:.1%} interval {out['ratio_interval'][0]:.3f}–"
                     f"{out['ratio_interval'][1]:.3f})" if out["ratio_interval"] else ""))
    said = {AGREES: "agrees", OFF: "is off"}.get(verdict or "", "is not yet judged")
    out["text"] = (f"{who}: {order_text}; its prediction {said} at a {level:.1%} level"
                   + (f" (each of up to {LOOKS} looks, corrected for them)" if level != 0.95 else ""))
    return out


def tune_result(m: TuneMeasured, partial: bool) -> TuneResult:
    """The tune JSON (``session["tune"]``, ``tune --json``), so far (``partial``) or whole."""
    all_plain = [x for xs in m.plain_reps.values() for x in xs]
    plain_rate = _rate(sum(n for n, _ in all_plain), sum(ms for _, ms in all_plain))
    steps = m.confirm_steps or m.plain_steps  # before any confirmation: the first plain runs' steps
    adaptive = m.reps is None
    rows = _final_rows(m, steps, LEVEL if adaptive else 0.95)
    decided = decision(m, rows, LEVEL if adaptive else 0.95)
    out: TuneResult = {
        "recommendation": recommendation(rows, decided) if not partial else {},  # none before the confirmations are in
        "rows": rows,
        "assumption": _assumption(m, rows),
        "acceptance_source": "trace" if m.traces else "k_max_rounds",
        "traces": m.traces,
        "regime": m.info.get("regime", "greedy"),
        "model": m.info.get("model"),
        "k_max": m.k_max,
        "max_tokens": m.max_tokens,
        "prompts": m.prompts,
        "confirm_reps": max((len(v) for v in m.spec_reps.values()), default=0),
        # what "measured" is (a tune saved before this key took the median of per-repeat ratios)
        "measured_method": "pooled",
        "confirm_reps_rule": (f"fixed ({m.reps})" if m.reps is not None else
                              f"until the recommendation is decided: the pick against its nearest rival and the "
                              f"pick's verdict, each at a {LEVEL:.1%} level, corrected for up to {LOOKS} looks; "
                              f"{MIN_REPS}–{MAX_REPS} repeats"),
        "decision": decided,
        "t_decode_ms": statistics.fmean(steps),
        "plain_tok_s": plain_rate,
        # means, as the prediction takes them (tune_predict): the figures shown are the ones it used
        "verify_ms": {str(n): statistics.fmean(v) for n, v in m.verify.items()},
        "verify_ms_beside": {f"{n}:{k}": statistics.fmean(b["verify"]) for (n, k), b in m.beside.items()
                             if b["verify"]},
        "verify_context": m.context,
        "drafters": m.per_drafter,
        "method": METHOD,
    }
    if partial:
        out["partial"] = True
    return out


def _judged(spec: list[tuple]) -> list[tuple]:
    """Each repeat's (tokens, ms) over its full rounds (all its rounds where it has no full one)."""
    return [(s[3], s[4]) if len(s) > 4 and s[2] and s[4] > 0 else s[:2] for s in spec]


def _measured(spec: list[tuple], plain: list[tuple], level: float = 0.95) -> tuple[float | None, list[float] | None]:
    """The pooled speedup of a setting's repeats over their full rounds (all rounds where a repeat has no full one) and
    its interval at ``level`` (``tune_confirm.rate_ratio``; 95% unless a look's level)."""
    pairs = [(s, p) for s, p in zip(_judged(spec), plain) if s[1] > 0 and p[1] > 0 and s[0] > 0 and p[0] > 0]
    tq = None if level == 0.95 else (lambda df: t_quantile(level, df))
    return rate_ratio([s for s, _ in pairs], [p for _, p in pairs], **({"t_quantile": tq} if tq else {}))


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
         e_exact: bool = False, costs: list[float] | None = None, level: float = 0.95) -> TuneRow:
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
    if "tree_budget" in p:  # a tree setting (tune_trees): its budget (k holds it too) and depth limit
        row["tree_budget"], row["depth"] = p["tree_budget"], p["depth"]
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
        # the verdict at ``level``: a look's corrected level when the repeats stop on it (``tune_decide``)
        looked_ci = ci if level == 0.95 else _measured(spec, plain, level)[1]
        row["agreement"] = agreement(row["prediction_error"], row["predicted_speedup"], looked_ci, len(spec),
                                     p.get("predicted_ci95_timing") if e_exact else row.get("predicted_ci95"),
                                     paired_half=half if level == 0.95 else widen_relative(half, len(spec), level),
                                     level=level)
    return row
