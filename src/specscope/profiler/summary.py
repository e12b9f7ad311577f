"""Derived numbers over a Session: per-case statistics, the session summary, the breakdown aggregate.

Everything here is recomputed from the raw measurements a Session holds, never trusted from a file.

- ``case_stats`` and ``summarize`` are the reference: they walk the whole session every time.
- ``LiveSummary`` gives the same numbers for a session that grows while it is watched (the app's
  snapshots): it folds only the steps and rounds that arrived since it last looked into running
  aggregates, and recomputes per-case figures only for a case that changed and the breakdown medians
  only when a breakdown arrives. Its numbers are *equal* to the reference's, not close: sums are exact
  (Shewchuk partials, read back with ``math.fsum``; the reference sums with ``math.fsum`` too), counts
  are integers, and everything after that goes through the same code (tested on the fixture session
  fed event by event, and on a live run).
"""

from __future__ import annotations

import math
from collections import Counter

from . import stats
from .stats import tok_s
from .verdict import ENGINE_FAULT, ROUNDING

CATEGORY_LABELS = {
    "linear_attention": "Linear attention",
    "full_attention": "Full attention",
    "moe": "MoE",  # sessions before dense_mlp existed label a dense "moe" row themselves ("MLP (dense)")
    "dense_mlp": "Dense MLP",
    "output_head": "Output head",
    "other": "Other (embed, norms)",
    "unclassified": "Unclassified",
    "inter_block": "Inter-block overhead",
}


# -- divergence verdicts ------------------------------------------------------------------

def divergence_verdict(d: dict) -> str:
    """Recomputed from the measured leads and tolerance (the rule of engine_adapter.divergence.classify):
    a near-tie only if every measured lead of the plain token over the speculative one is within the
    tolerance; no measured margin, or no tolerance, is never rounding."""
    tol = d.get("tolerance")
    leads = [x for x in (d.get("plain_lead"), d.get("verify_lead")) if isinstance(x, (int, float))]
    if not leads or not isinstance(tol, (int, float)) or not math.isfinite(tol):
        return ENGINE_FAULT
    return ROUNDING if all(math.isfinite(x) and abs(x) <= tol for x in leads) else ENGINE_FAULT


def case_divergence(case: dict) -> dict | None:
    """The case's divergence record with its verdict recomputed, or None (outputs equal, or not checked)."""
    d = case.get("divergence")
    if not isinstance(d, dict):
        return None
    return {**d, "verdict": divergence_verdict(d)}


# -- the reference: whole-session recomputation ---------------------------------------------

def instrumented(r: dict) -> bool:
    """A round whose draft, verify and rollback were timed apart (older sessions have only these)."""
    return r.get("kind", "instrumented") == "instrumented"


def _rate(rounds: list[dict]) -> float | None:
    return tok_s(sum(len(r["emitted"]) for r in rounds), math.fsum(r["ms"] for r in rounds))


def case_stats(case: dict, k: int) -> dict:
    plain, spec = case["plain"], case["spec"]
    plain_tok_s = stats.median(plain.get("repeats_tok_s") or []) or tok_s(len(plain["step_ms"]), math.fsum(plain["step_ms"]))
    e2e = [r for r in spec["rounds"] if not instrumented(r)]
    timed = [r for r in spec["rounds"] if instrumented(r)]
    # the measured speed: end-to-end rounds where the run has them (production-like, one sync per round)
    spec_tok_s = stats.median(spec.get("repeats_tok_s") or []) or _rate(e2e or spec["rounds"])
    instr_tok_s = (stats.median(spec.get("repeats_instrumented_tok_s") or []) or _rate(timed)) if e2e else None
    full = [r for r in spec["rounds"] if len(r["drafted"]) == k]
    full_timed = [r for r in full if instrumented(r)]
    acc = stats.acceptance_from_rounds([r["accepted"] for r in full], k)
    return _case_result(case, plain_tok_s, spec_tok_s, acc,
                        stats.mean(r["verify_ms"] for r in full_timed), stats.mean(r["draft_ms"] for r in full_timed),
                        instr_tok_s)


def _case_result(case: dict, plain_tok_s, spec_tok_s, acc: dict, t_verify, t_draft, instr_tok_s=None) -> dict:
    t_decode = 1000.0 / plain_tok_s if plain_tok_s else None
    pred = None
    if t_decode and t_verify is not None and t_draft is not None and acc["rounds"]:
        pred = stats.divide(t_decode, t_verify, t_draft, acc["tokens_per_round"]).predicted_speedup
    measured = spec_tok_s / plain_tok_s if spec_tok_s and plain_tok_s else None
    plain_tokens, spec_tokens = case["plain"]["tokens"], case["spec"]["tokens"]
    return {
        "plain_tok_s": plain_tok_s,
        "spec_tok_s": spec_tok_s,
        "spec_instrumented_tok_s": instr_tok_s,
        "t_decode_ms": t_decode,
        "t_verify_ms": t_verify,
        "t_draft_ms": t_draft,
        "acceptance": acc,
        "predicted_speedup": pred,
        "measured_speedup": measured,
        "prediction_error": stats.relative_error(pred, measured),
        "match": stats.match_stats(plain_tokens, spec_tokens) if spec_tokens else None,
        "divergence": case_divergence(case),
    }


def _pooled_tok_s(case_rates: list[tuple[int, float]]) -> float | None:
    """Tokens over time across cases, each case at its median rate."""
    toks = sum(n for n, r in case_rates if r)
    ms = sum(1000.0 * n / r for n, r in case_rates if r)
    return tok_s(toks, ms)


def measured_cases(session) -> list[dict]:
    """The cases with at least one plain step or speculative round."""
    return [c for c in session.cases if c["plain"]["step_ms"] or c["spec"]["rounds"]]


def summarize(session) -> dict:
    k = session.k
    cases = measured_cases(session)
    per_case = [(c, case_stats(c, k)) for c in cases]
    spec_emitted = [sum(len(r["emitted"]) for r in c["spec"]["rounds"]) for c in cases]
    full = [r for c in cases for r in c["spec"]["rounds"] if len(r["drafted"]) == k]
    full_timed = [r for r in full if instrumented(r)]
    by_category = {}
    for cat in sorted({c["category"] for c in cases}):
        rs = [r for c in cases if c["category"] == cat for r in c["spec"]["rounds"] if len(r["drafted"]) == k]
        by_category[cat] = stats.acceptance_from_rounds([r["accepted"] for r in rs], k)
    return _assemble(
        session, per_case, spec_emitted,
        acc=stats.acceptance_from_rounds([r["accepted"] for r in full], k),
        # Means, like T_decode (a rate is a mean): medians on one side and a rate on the
        # other would make the prediction drift with the noise of a shared machine.
        t_verify=stats.mean(r["verify_ms"] for r in full_timed),
        t_draft=stats.mean(r["draft_ms"] for r in full_timed),
        t_rollback=stats.mean((r.get("rollback_ms") or 0.0) for r in full_timed),
        by_category=by_category,
        bd=aggregate_breakdown([c["breakdown"] for c in cases if c.get("breakdown")]),
    )


def _assemble(session, per_case, spec_emitted, acc, t_verify, t_draft, t_rollback, by_category, bd) -> dict:
    """The summary from per-case statistics and the session-wide aggregates (shared by both paths)."""
    k = session.k
    plain_tok_s = _pooled_tok_s([(len(c["plain"]["step_ms"]), s["plain_tok_s"]) for c, s in per_case])
    spec_tok_s = _pooled_tok_s([(n, s["spec_tok_s"]) for (c, s), n in zip(per_case, spec_emitted) if c["spec"]["rounds"]])
    instr_tok_s = _pooled_tok_s([(n, s.get("spec_instrumented_tok_s")) for (c, s), n in zip(per_case, spec_emitted)
                                 if c["spec"]["rounds"]])
    t_decode = 1000.0 / plain_tok_s if plain_tok_s else None
    division = None
    if t_decode and t_verify is not None and t_draft is not None and acc["rounds"]:
        division = stats.divide(t_decode, t_verify, t_draft, acc["tokens_per_round"])
    measured = spec_tok_s / plain_tok_s if spec_tok_s and plain_tok_s else None
    matches = [s["match"] for _, s in per_case if s["match"] is not None]
    match_rate = (sum(m["match_rate"] for m in matches) / len(matches)) if matches else None
    greedy = session.regime == "greedy"
    divergences = [{"case": c["id"], **s["divergence"]} for c, s in per_case if greedy and s["divergence"]]
    # Sessions from before the divergence check: a finished greedy case whose outputs differ, with no margin.
    unchecked = [{"case": c["id"], "position": s["match"]["first_divergence"]} for c, s in per_case
                 if greedy and c.get("complete") and s["match"] and not s["match"]["equal"] and not s["divergence"]]
    block_pred = None
    if division and bd and bd["decode"]["block_sum_ms"]:
        block_pred = acc["tokens_per_round"] * bd["decode"]["block_sum_ms"] / (t_verify + t_draft)
    return {
        "k": k,
        "regime": session.regime,
        "what_if": session.what_if,
        "cases_measured": len(per_case),
        "plain_tok_s": plain_tok_s,
        "spec_tok_s": spec_tok_s,
        # instrumented rounds (timed apart) vs end-to-end rounds: what timing the division's inputs costs
        "spec_instrumented_tok_s": instr_tok_s,
        "instrumentation_cost": (spec_tok_s / instr_tok_s - 1.0) if spec_tok_s and instr_tok_s else None,
        "t_decode_ms": t_decode,
        "t_verify_ms": t_verify,
        "t_draft_ms": t_draft,
        "t_rollback_ms": t_rollback,
        "p": acc["p"],
        "p_ci95": acc["p_ci95"],
        "drafted": acc["drafted"],
        "accepted": acc["accepted"],
        "per_position": acc["per_position"],
        "tokens_per_round": acc["tokens_per_round"],
        "low_sample": acc["low_sample"],
        "acceptance_by_category": by_category,
        "predicted_speedup": division.predicted_speedup if division else None,
        "predicted_tok_s": division.predicted_tok_s if division else None,
        "measured_speedup": measured,
        "prediction_error": stats.relative_error(division.predicted_speedup if division else None, measured),
        "break_even_verify_ms": division.break_even_verify_ms if division else None,
        "break_even_multiple": division.break_even_multiple if division else None,
        "verify_multiple": division.verify_multiple if division else None,
        "block_sum_predicted_speedup": block_pred,
        "match_rate": match_rate,
        "all_match": bool(matches) and all(m["equal"] for m in matches),
        "divergences": divergences,
        "engine_faults": [d for d in divergences if d["verdict"] == ENGINE_FAULT],
        "unchecked_divergences": unchecked,
        "breakdown": bd,
    }


def aggregate_breakdown(bds: list[dict]) -> dict | None:
    """Median over cases of each breakdown figure."""
    if not bds:
        return None
    out = {}
    for side in ("decode", "verify"):
        rows = [b[side] for b in bds if side in b]
        if not rows:
            return None
        agg = {
            "positions": rows[0]["positions"],
            "whole_ms": stats.median(r["whole_ms"] for r in rows),
            "instrumented_ms": stats.median(r["instrumented_ms"] for r in rows),
            "block_sum_ms": stats.median(r["block_sum_ms"] for r in rows),
            "blocks": {c: stats.median(r["blocks"].get(c) for r in rows) for c in rows[0]["blocks"]},
            "skip_estimates": {c: stats.median(r.get("skip_estimates", {}).get(c) for r in rows) for c in rows[0].get("skip_estimates", {})},
        }
        agg["inter_block_ms"] = agg["whole_ms"] - agg["block_sum_ms"]
        agg["barrier_distortion"] = agg["instrumented_ms"] / agg["whole_ms"] - 1 if agg["whole_ms"] else None
        out[side] = agg
    dec, ver = out["decode"], out["verify"]
    out["ratios"] = {
        c: (ver["blocks"][c] / dec["blocks"][c]) if dec["blocks"].get(c) else None for c in dec["blocks"]
    }
    # A ratio of overheads only means something when both are positive (barriers can make them negative).
    both = dec["inter_block_ms"] > 0 and ver["inter_block_ms"] > 0
    out["ratios"]["inter_block"] = ver["inter_block_ms"] / dec["inter_block_ms"] if both else None
    out["ratios"]["whole"] = ver["whole_ms"] / dec["whole_ms"] if dec["whole_ms"] else None
    out["categories"] = list(dec["blocks"])
    out["labels"] = bds[-1].get("labels", {})
    return out


# -- incremental: the same numbers for a growing session -------------------------------------------

class ExactSum:
    """A running sum with no rounding error (Shewchuk's partials, as ``math.fsum`` keeps them).

    ``value()`` equals ``math.fsum`` of everything added, in any order; ``mean()`` equals
    ``stats.mean`` of it (None values are skipped and not counted, as there).
    """

    __slots__ = ("partials", "n", "special")

    def __init__(self):
        self.partials: list[float] = []
        self.n = 0
        self.special: list[float] = []  # inf / nan: fsum's own rules apply to them

    def add(self, x) -> None:
        if x is None:
            return
        self.n += 1
        x = float(x)
        if not math.isfinite(x):
            self.special.append(x)
            return
        partials = self.partials
        i = 0
        for y in partials:
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo:
                partials[i] = lo
                i += 1
            x = hi
        partials[i:] = [x]

    def value(self) -> float:
        return math.fsum(self.special) if self.special else math.fsum(self.partials)

    def mean(self) -> float | None:
        return self.value() / self.n if self.n else None

    @staticmethod
    def mean_of(sums: list["ExactSum"]) -> float | None:
        """The mean over several running sums together (what one ``stats.mean`` over all their values gives)."""
        n = sum(s.n for s in sums)
        if not n:
            return None
        special = [x for s in sums for x in s.special]
        total = math.fsum(special) if special else math.fsum(p for s in sums for p in s.partials)
        return total / n


class _CaseFold:
    """Running aggregates of one case's plain steps and speculative rounds, folded as they arrive.

    A side's list is folded from where the last look stopped while it is the same list object and has
    not shrunk; a new list (a phase restarted: ``Session.apply`` replaces it) is folded from the start.
    """

    def __init__(self, case: dict, k: int):
        self.case, self.k = case, k
        self.version = 0
        self._steps = self._rounds = None
        self._reset_plain(None)
        self._reset_spec(None)
        self._stats: dict | None = None
        self._stats_objs: tuple = ()
        self._stats_key: tuple = ()

    def _reset_plain(self, steps) -> None:
        self._steps, self.n_steps, self.step_ms = steps, 0, ExactSum()

    def _reset_spec(self, rounds) -> None:
        self._rounds, self.n_rounds = rounds, 0
        self.spec_ms, self.emitted = ExactSum(), 0
        # by round kind: end-to-end rounds give the measured speed, instrumented ones the timings
        self.kind_ms = {"instrumented": ExactSum(), "end_to_end": ExactSum()}
        self.kind_emitted = {"instrumented": 0, "end_to_end": 0}
        self.kind_rounds = {"instrumented": 0, "end_to_end": 0}
        self.hist: Counter = Counter()  # accepted count -> rounds, over rounds that drafted k
        self.verify, self.draft, self.rollback = ExactSum(), ExactSum(), ExactSum()

    def update(self) -> None:
        plain, spec = self.case["plain"], self.case["spec"]
        steps = plain["step_ms"]
        if steps is not self._steps or len(steps) < self.n_steps:
            self._reset_plain(steps)
            self.version += 1
        if len(steps) > self.n_steps:
            for ms in steps[self.n_steps:]:
                self.step_ms.add(ms)
            self.n_steps = len(steps)
            self.version += 1
        rounds = spec["rounds"]
        if rounds is not self._rounds or len(rounds) < self.n_rounds:
            self._reset_spec(rounds)
            self.version += 1
        if len(rounds) > self.n_rounds:
            k = self.k
            for r in rounds[self.n_rounds:]:
                self.spec_ms.add(r["ms"])
                self.emitted += len(r["emitted"])
                kind = "instrumented" if instrumented(r) else "end_to_end"
                self.kind_ms[kind].add(r["ms"])
                self.kind_emitted[kind] += len(r["emitted"])
                self.kind_rounds[kind] += 1
                if len(r["drafted"]) == k:
                    self.hist[r["accepted"]] += 1
                    if kind == "instrumented":
                        self.verify.add(r["verify_ms"])
                        self.draft.add(r["draft_ms"])
                        self.rollback.add(r.get("rollback_ms") or 0.0)
            self.n_rounds = len(rounds)
            self.version += 1

    def stats(self) -> dict:
        """``case_stats(case, k)``, recomputed only when something it reads has changed."""
        c = self.case
        plain, spec = c["plain"], c["spec"]
        objs = (plain.get("repeats_tok_s"), spec.get("repeats_tok_s"), plain["tokens"], spec["tokens"], c.get("divergence"),
                spec.get("repeats_instrumented_tok_s"))
        key = (self.version,) + tuple(len(o) if isinstance(o, list) else -1 for o in objs)  # lists grow in place
        if self._stats is not None and key == self._stats_key and all(a is b for a, b in zip(objs, self._stats_objs)):
            return self._stats
        plain_tok_s = stats.median(objs[0] or []) or tok_s(self.n_steps, self.step_ms.value())
        has_e2e = self.kind_rounds["end_to_end"] > 0
        if has_e2e:
            fallback = tok_s(self.kind_emitted["end_to_end"], self.kind_ms["end_to_end"].value())
            instr = stats.median(objs[5] or []) or tok_s(self.kind_emitted["instrumented"], self.kind_ms["instrumented"].value())
        else:
            fallback, instr = tok_s(self.emitted, self.spec_ms.value()), None
        spec_tok_s = stats.median(objs[1] or []) or fallback
        acc = stats.acceptance_from_histogram(self.hist, self.k)
        self._stats = _case_result(c, plain_tok_s, spec_tok_s, acc, self.verify.mean(), self.draft.mean(), instr)
        self._stats_objs, self._stats_key = objs, key
        return self._stats


class LiveSummary:
    """``summarize(session)`` and ``case_stats`` for a session that keeps growing, without re-walking it.

    Meant for a session that changes the way ``Session.apply`` changes it (lists appended to, or
    replaced); a caller that edits measurements already folded in place must use ``summarize``.
    Returned dicts are shared with later calls where nothing changed: treat them as read-only.
    """

    def __init__(self, session):
        self.session = session
        self._k: int | None = None
        self._folds: dict[int, _CaseFold] = {}  # by id(case); each fold holds its case, so ids stay unique
        self._bd_src: list = []
        self._bd: dict | None = None

    def _fold(self, case: dict) -> _CaseFold:
        k = self.session.k
        if k != self._k:
            self._folds.clear()
            self._k = k
        f = self._folds.get(id(case))
        if f is None or f.case is not case:
            f = self._folds[id(case)] = _CaseFold(case, k)
        f.update()
        return f

    def case_stats(self, case: dict) -> dict:
        """``Session.case_stats(case)``."""
        return {**self._fold(case).stats(), "regime": self.session.regime}

    def summary(self) -> dict:
        """``summarize(session)``."""
        session = self.session
        k = session.k
        cases = measured_cases(session)
        folds = [self._fold(c) for c in cases]
        per_case = [(c, f.stats()) for c, f in zip(cases, folds)]
        by_category = {}
        for cat in sorted({c["category"] for c in cases}):
            hist = Counter()
            for c, f in zip(cases, folds):
                if c["category"] == cat:
                    hist.update(f.hist)
            by_category[cat] = stats.acceptance_from_histogram(hist, k)
        hist = Counter()
        for f in folds:
            hist.update(f.hist)
        return _assemble(
            session, per_case, [f.emitted for f in folds],
            acc=stats.acceptance_from_histogram(hist, k),
            t_verify=ExactSum.mean_of([f.verify for f in folds]),
            t_draft=ExactSum.mean_of([f.draft for f in folds]),
            t_rollback=ExactSum.mean_of([f.rollback for f in folds]),
            by_category=by_category,
            bd=self._breakdown([c["breakdown"] for c in cases if c.get("breakdown")]),
        )

    def _breakdown(self, bds: list[dict]) -> dict | None:
        """The median aggregate, recomputed only when a breakdown arrives (or the set of cases changes)."""
        if len(bds) != len(self._bd_src) or any(a is not b for a, b in zip(bds, self._bd_src)):
            self._bd_src, self._bd = bds, aggregate_breakdown(bds)
        return self._bd
