"""The incremental summary: ``summarize`` and ``case_stats`` for a session that grows while it is watched.

The app's snapshots fold only the steps and rounds that arrived since the last look into running
aggregates (exact sums, integer counts, lists of the samples an interval needs) and recompute a
case's figures only when it changed; everything after the folding goes through the reference's own code
(``summary_core``), so the numbers are *equal* to the reference's (tested event by event on the fixture session).
"""

from __future__ import annotations

import math
from collections import Counter

from specscope.profiler.session.records import Breakdown, Case, CaseStats, Summary
from specscope.profiler.analysis import stats
from specscope.profiler.analysis.records import BreakdownAggregate
from specscope.profiler.analysis.stats import tok_s
from specscope.profiler.analysis.rounds import counts_for_acceptance, full_round, instrumented
from specscope.profiler.analysis.tree_figures import TreeTally, tree_budget, tree_figures
from specscope.profiler.analysis.summary_core import (
    aggregate_breakdown,
    assemble,
    case_result,
    round_time,
    summary_cases,
)


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

    def __init__(self, case: Case, k: int):
        self.case, self.k = case, k
        self.version = 0
        self._steps: list | None = None
        self._rounds: list | None = None
        self._reset_plain(None)
        self._reset_spec(None)
        self._stats: CaseStats | None = None
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
        # the full rounds (k drafts) by kind: the judged measurement (prediction.judged_rounds)
        self.full_ms = {"instrumented": ExactSum(), "end_to_end": ExactSum()}
        self.full_emitted = {"instrumented": 0, "end_to_end": 0}
        self.full_rounds = {"instrumented": 0, "end_to_end": 0}
        self.full_ms_list: dict[str, list] = {"instrumented": [], "end_to_end": []}
        self.hist: Counter = Counter()  # accepted count -> rounds, over first-repeat rounds that drafted k
        self.tree = TreeTally()  # a tree run's nodes and depths over the same rounds
        self.verify, self.draft, self.rollback = ExactSum(), ExactSum(), ExactSum()
        self.round_ms: list = []  # T_verify + T_draft of each instrumented full round (its interval)
        self.kind_ms_list: dict[str, list] = {"instrumented": [], "end_to_end": []}  # round times by kind (the rate's interval)

    def update(self) -> None:
        plain, spec = self.case["plain"], self.case["spec"]
        steps = plain["step_ms"]
        if len(steps) < self.n_steps or steps is not self._steps:  # shorter, or another list: start again
            self._reset_plain(steps)
            self.version += 1
        if len(steps) > self.n_steps:
            for ms in steps[self.n_steps:]:
                self.step_ms.add(ms)
            self.n_steps = len(steps)
            self.version += 1
        rounds = spec["rounds"]
        if len(rounds) < self.n_rounds or rounds is not self._rounds:
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
                self.kind_ms_list[kind].append(r["ms"])
                if full_round(r, k):
                    self.full_ms[kind].add(r["ms"])
                    self.full_emitted[kind] += len(r["emitted"])
                    self.full_rounds[kind] += 1
                    self.full_ms_list[kind].append(r["ms"])
                    if counts_for_acceptance(r):
                        self.hist[r["accepted"]] += 1
                        self.tree.add(r)
                    if kind == "instrumented":
                        self.verify.add(r["verify_ms"])
                        self.draft.add(r["draft_ms"])
                        self.rollback.add(r.get("rollback_ms") or 0.0)
                        self.round_ms.append(round_time(r))
            self.n_rounds = len(rounds)
            self.version += 1

    def measured_rounds(self) -> tuple[int, list]:
        """Tokens and round times of the rounds the case's measured speed comes from (end-to-end ones where
        it has them, else all)."""
        if self.kind_rounds["end_to_end"]:
            return self.kind_emitted["end_to_end"], self.kind_ms_list["end_to_end"]
        return self.emitted, self.kind_ms_list["instrumented"]

    def judged_rounds(self) -> tuple[int, list]:
        """Tokens and round times of the rounds the prediction is judged against (``rounds.judged_rounds``)."""
        kind = "end_to_end" if self.kind_rounds["end_to_end"] else "instrumented"
        if self.full_rounds[kind]:
            return self.full_emitted[kind], self.full_ms_list[kind]
        return self.measured_rounds()

    def stats(self) -> CaseStats:
        """``case_stats(case, k)``, recomputed only when something it reads has changed."""
        c = self.case
        plain, spec = c["plain"], c["spec"]
        objs = (plain.get("repeats_tok_s"), spec.get("repeats_tok_s"), plain["tokens"], spec["tokens"], c.get("divergence"),
                spec.get("repeats_instrumented_tok_s"), c.get("components"))
        key = (self.version, bool(c.get("discarded"))) + tuple(len(o) if isinstance(o, list) else -1 for o in objs)  # lists grow in place
        if self._stats is not None and key == self._stats_key and all(a is b for a, b in zip(objs, self._stats_objs)):
            return self._stats
        # pooled rates, as case_stats: every repeat's tokens over every repeat's time
        plain_tok_s = tok_s(self.n_steps, self.step_ms.value()) or stats.median(objs[0] or [])
        has_e2e = self.kind_rounds["end_to_end"] > 0
        if has_e2e:
            pooled = tok_s(self.kind_emitted["end_to_end"], self.kind_ms["end_to_end"].value())
            instr = tok_s(self.kind_emitted["instrumented"], self.kind_ms["instrumented"].value()) or stats.median(objs[5] or [])
        else:
            pooled, instr = tok_s(self.emitted, self.spec_ms.value()), None
        spec_tok_s = pooled or stats.median(objs[1] or [])
        acc = stats.acceptance_from_histogram(self.hist, self.k)
        kind = "end_to_end" if has_e2e else "instrumented"
        n_measured = self.kind_rounds[kind] if has_e2e else self.n_rounds
        if self.full_emitted[kind] and self.full_rounds[kind] != n_measured:  # as rounds.judged_rounds
            judged = (tok_s(self.full_emitted[kind], self.full_ms[kind].value()), self.full_emitted[kind])
        else:
            judged = (spec_tok_s, self.measured_rounds()[0])
        stats_now = self._stats = case_result(c, plain_tok_s, spec_tok_s, acc, self.verify.mean(), self.draft.mean(), instr,
                                              judged=judged, hist=self.hist)
        self._stats_objs, self._stats_key = objs, key
        return stats_now


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
        self._bd: BreakdownAggregate | None = None

    def _fold(self, case: Case) -> _CaseFold:
        k = self.session.k
        if k != self._k:
            self._folds.clear()
            self._k = k
        f = self._folds.get(id(case))
        if f is None or f.case is not case:
            f = self._folds[id(case)] = _CaseFold(case, k)
        f.update()
        return f

    def case_stats(self, case: Case) -> CaseStats:
        """``summary.session_case_stats(session, case)``."""
        return {**self._fold(case).stats(), "regime": self.session.regime}

    def summary(self) -> Summary:
        """``summarize(session)``."""
        session = self.session
        k = session.k
        cases = summary_cases(session)
        folds = [self._fold(c) for c in cases]
        per_case = [(c, f.stats()) for c, f in zip(cases, folds)]
        by_content_class = {}
        for cat in sorted({c["content_class"] for c in cases}):
            hist: Counter = Counter()
            for c, f in zip(cases, folds):
                if c["content_class"] == cat:
                    hist.update(f.hist)
            by_content_class[cat] = stats.acceptance_from_histogram(hist, k)
        hist = Counter()
        tree = TreeTally()
        for f in folds:
            hist.update(f.hist)
            tree.merge(f.tree)
        return assemble(
            session, per_case=per_case, spec_emitted=[f.emitted for f in folds],
            acc=stats.acceptance_from_histogram(hist, k),
            t_verify=ExactSum.mean_of([f.verify for f in folds]),
            t_draft=ExactSum.mean_of([f.draft for f in folds]),
            t_rollback=ExactSum.mean_of([f.rollback for f in folds]),
            by_content_class=by_content_class,
            bd=self._breakdown([b for c in cases if (b := c["breakdown"])]),
            tree=tree_figures(tree_budget(session), tree, hist, k),
            noise={"hist": hist, "round_ms": [x for f in folds for x in f.round_ms],
                   "rate_tokens": sum(f.measured_rounds()[0] for f in folds),
                   "rate_ms": [x for f in folds for x in f.measured_rounds()[1]],
                   "judged_tokens": sum(f.judged_rounds()[0] for f in folds),
                   "judged_ms": [x for f in folds for x in f.judged_rounds()[1]]},
        )

    def _breakdown(self, bds: list[Breakdown]) -> BreakdownAggregate | None:
        """The median aggregate, recomputed only when a breakdown arrives (or the set of cases changes)."""
        if len(bds) != len(self._bd_src) or any(a is not b for a, b in zip(bds, self._bd_src)):
            self._bd_src, self._bd = bds, aggregate_breakdown(bds)
        return self._bd
