"""``specscope tune``'s prediction (step 4 of ``profiler.analysis.tune``): for every k ≤ K,

E(k) = the trace walked at k (the rounds a greedy run at k makes, exactly: no assumption that acceptance at depth i is
the same whatever k), predicted speedup = E(k) · T_decode / (T_verify(k+1) + T_draft(k) + T_rollback(k) +
T_bookkeeping) (see ``predict``; ``division_speedup`` is the bare division without the last two), with a 95% interval
by bootstrap over the walked rounds (acceptance, rollback), verify repeats, draft rounds and plain steps (timing
spread). A seam with no ``trace`` falls back to E(k) from the K_max rounds, and the result says so (the assumptions
below).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specscope.errors import SpecscopeError

from specscope.profiler.analysis import resample, trace_walk
from specscope.profiler.analysis.round_model import RoundModel

class TermsBelowNoise(SpecscopeError):
    """At ``k`` the round's terms timed apart add up to nothing: too few samples against the machine's noise (a
    stall in a verify timed alone makes "the round less its verify" strongly negative). Say which k, so a caller
    can time more rounds there before it refuses."""

    def __init__(self, k: int, message: str):
        super().__init__(message)
        self.k = k


GREEDY_ASSUMPTION = (
    "Drafts are chained: from a given prefix a drafter proposes the same tokens whatever k is. Under greedy decoding "
    "the acceptance trace A(s) (how many of the drafter's next K_max proposals from each position of the target's "
    "own output agree with it) therefore determines the rounds of a run at every k <= K_max: E(k) is the trace "
    "walked at k, exactly, with no assumption that acceptance at depth i is the same in every round.")
UNCHAINED_NOTE = (
    " A DFlash drafter's drafts are not chained (its block attends both ways, so the first k drafts of a block of "
    "K_max + 1 are not a block of k + 1's): its trace records every k's own proposals from every position, and each k "
    "is walked on its own.")
K_MAX_ASSUMPTION = (
    "No acceptance trace: E(k) from the K_max rounds' a_1..a_K assumes acceptance at depth i does not depend on k, "
    "which holds for i.i.d. acceptance only (bursty acceptance makes the K_max rounds a length-biased sample).")
TEMPERATURE_ASSUMPTION = (
    "Under temperature sampling acceptance is random per draft: the trace holds seeded accept/reject draws at every "
    "position along one sampled output, and E(k) walked on them is an estimate (rounds under sampling need not "
    "follow that output).")


# -- prediction ----------------------------------------------------------------------------------------------------

def per_position(accepted: list[int], k_max: int) -> list[float]:
    a = np.asarray(accepted)
    return [float(np.mean(a >= i)) if a.size else 0.0 for i in range(1, k_max + 1)]


def draft_ms_at(k: int, t1: float, tk: float, k_max: int) -> float:
    """T_draft(k) on the line through T_draft(1) and T_draft(K_max)."""
    return t1 if k_max <= 1 else t1 + (tk - t1) * (k - 1) / (k_max - 1)


def _rollback_by_accepted(acc: np.ndarray, rb: np.ndarray, k_max: int) -> tuple[dict[int, float], float]:
    """Rollback time by accepted count, from the K_max run's rounds (a partial round reruns or trims what it
    accepted, so its cost depends on that count, not on k), and a full round's."""
    partial = acc < k_max
    by = {int(a): float(rb[acc == a].mean()) for a in np.unique(acc[partial])}
    full = rb[~partial]
    return by, (float(full.mean()) if full.size else float(rb.min()))


def predict(rounds: list[dict], k_max: int, verify: dict[int, list[float]], draft_1: list[float],
            plain_steps: list[float], traces: list[dict] | None = None, resamples: int = 2000, seed: int = 0,
            draft_by_k: dict[int, list[float]] | None = None,
            rollback_by_k: dict[int, dict[int, list[float]]] | None = None,
            plain_steps_by_k: dict[int, list[float]] | None = None,
            bookkeeping_by_k: dict[int, list[float]] | None = None, only_k: int | None = None) -> list[dict]:
    """Predicted speedup for k = 1..K_max (or ``only_k`` alone) with its bootstrap 95% interval.

    ``rounds``: the full rounds (K_max drafts each) of the instrumented K_max run, with ``accepted``,
    ``draft_ms``, ``verify_ms``, ``rollback_ms`` and ``ms``; ``verify``: n -> whole-graph verify times;
    ``draft_1``: draft times at k = 1; ``plain_steps``: plain step times (T_decode is their mean);
    ``traces``: acceptance traces (``profiler.analysis.trace_walk``) of the same prompts; ``draft_by_k``: k -> what drafting
    adds to a round at k, timed apart (``components``: a round run as an end-to-end round runs it, less the verify
    timed alone); without it, T_draft(k) is the line through the instrumented draft times at 1 and K_max;
    ``rollback_by_k``: k -> accepted count -> rollback times at k timed apart (``components``), used for that k in place
    of the K_max run's; ``plain_steps_by_k``: k -> plain step times for T_decode at that k in place of ``plain_steps``
    (a confirmed k's own pairs' plain runs); ``bookkeeping_by_k``: k -> each timed round's work after the read-back
    (``components``, in the order of ``draft_by_k``), weighted by accepted count as the draft is, in place of the
    K_max run's rest.

        predicted(k) = E(k) · T_decode / (T_verify(k+1) + T_draft(k) + T_rollback(k) + T_bookkeeping)

    E(k): with traces, walked at k (exact under greedy decoding: the rounds a run at k makes, no independence
    assumption); without, 1 + mean(min(accepted, k)) over the K_max rounds (biased when acceptance is bursty:
    those rounds are a length-biased sample of positions). T_rollback(k): per round at k, the K_max run's
    rollback at the same accepted count when it is short of k, a full round's otherwise; T_bookkeeping: the
    rest of a K_max round (drafter update, records). All of it is measured apart from the runs the prediction
    is held against."""
    if not rounds:
        raise SpecscopeError("no full speculative rounds at K_max to measure acceptance from (raise --max-tokens)")
    rng = resample.generator(seed)
    base = _KmaxRun.of(rounds, draft_1, plain_steps, k_max, rng, resamples)
    timed = _TimedApart(draft_by_k or {}, rollback_by_k or {}, plain_steps_by_k or {}, bookkeeping_by_k or {})
    rows = []
    for k in ([only_k] if only_k else range(1, k_max + 1)):
        if traces:  # the rounds a run at k makes, walked on the traces
            at_k = np.asarray(trace_walk.pooled(traces, k)["accepted"] or [0], dtype=float)
        else:
            at_k = np.minimum(base.acc, k)
        at = _predict_at(k, k, at_k, base, verify[k + 1], timed, rng, resamples, seed, line=(k, k_max))
        rows += _prediction_rows(k, at, "trace" if traces else "k_max_rounds",
                                 1.0 + float(np.minimum(base.acc, k).mean()))
    return rows


def predict_tree(rounds: list[dict], depth: int, budgets: list[int], verify: dict[int, list[float]],
                 draft_1: list[float], plain_steps: list[float], traces: list[dict], resamples: int = 2000, seed: int = 0,
                 draft_by_b: dict[int, list[float]] | None = None,
                 rollback_by_b: dict[int, dict[int, list[float]]] | None = None,
                 plain_steps_by_b: dict[int, list[float]] | None = None,
                 bookkeeping_by_b: dict[int, list[float]] | None = None, only_b: int | None = None) -> list[dict]:
    """``predict`` for tree runs at the depth limit ``depth``, one row per budget B (``"k"``: B; ``tune_trees``):

        predicted(B) = E(B) · T_decode / (T_verify(B) + T_draft(B) + T_keep(B) + T_bookkeeping(B))

    E(B): the traces' tree part walked at B (exact under greedy); ``verify``: B -> tree verify times (B + 1 nodes, the
    drafter's own tree); ``draft_by_b``, ``rollback_by_b`` (the keep by accepted path length), ``bookkeeping_by_b``:
    a tree round's parts timed apart at B (``measure.tree_components``); ``rounds``: the full rounds of the
    instrumented run at the largest budget (the rollback of an accepted count not timed at B, the bookkeeping where
    none was timed); ``draft_1``: draft times of a run at budget 1 (the line, where drafting was not timed apart)."""
    from specscope.profiler.analysis import tune_trees

    if not rounds:
        raise SpecscopeError("no full tree rounds at the largest budget to measure from (raise --max-tokens)")
    rng = resample.generator(seed)
    base = _KmaxRun.of(rounds, draft_1, plain_steps, depth, rng, resamples)
    timed = _TimedApart(draft_by_b or {}, rollback_by_b or {}, plain_steps_by_b or {}, bookkeeping_by_b or {})
    top = max(budgets)
    rows = []
    for b in ([only_b] if only_b else budgets):
        at = _predict_at(b, depth, tune_trees.walked(traces, b, depth), base, verify[b], timed, rng, resamples, seed,
                         line=(b, top))
        row = _prediction_rows(b, at, "trace", 1.0 + float(base.acc.mean()) if b == top else None)
        row[0].update(tree_budget=b, depth=depth)
        rows += row
    return rows


def _prediction_rows(k: int, at: "_AtK", source: str, k_max_rounds_e: float | None) -> list[dict]:
    """One setting's prediction as ``predict`` returns it (a list of one: ``predict``'s rows)."""
    model = at.model
    return [{
        "k": k,
        "predicted_speedup": model.speedup,
        "predicted_ci95": [float(np.percentile(at.b_s, 2.5)), float(np.percentile(at.b_s, 97.5))],
        # for a confirmation on the traced prompts under greedy decoding, whose rounds are the walked ones exactly:
        # only the timings are uncertain there (E's interval is about other content, not these prompts)
        "predicted_ci95_timing": [float(np.percentile(at.b_t, 2.5)), float(np.percentile(at.b_t, 97.5))],
        "division_speedup": model.division,
        "tokens_per_round": model.tokens_per_round,
        "tokens_per_round_k_max_rounds": k_max_rounds_e,
        "acceptance_source": source,
        "t_decode_ms": model.t_decode_ms,
        "t_verify_ms": model.t_verify_ms,
        "t_draft_ms": model.t_draft_ms,
        "t_draft_source": at.draft_source,
        "t_draft_below_noise": model.t_draft_ms <= 0.0,  # at or below zero: drafting adds nothing measurable
        "t_rollback_ms": model.t_rollback_ms,
        "rollback_untimed_counts": at.rollback_untimed,  # accepted counts at k whose rollback was never timed
        "untimed": model.untimed,
        "formula": model.formula,
        "t_bookkeeping_ms": model.t_bookkeeping_ms,
        "t_bookkeeping_source": at.bookkeeping_source,
        "verify_multiple": model.verify_multiple,
        "break_even_verify_ms": model.break_even_verify_ms if model.break_even_verify_ms > 0 else None,
        "round_ms": model.round_ms,
    }]


@dataclass
class _AtK:
    """One k's round model and its bootstrap: the speedup's draws (``b_s``), and the same with E held (``b_t``)."""
    model: RoundModel
    b_s: np.ndarray
    b_t: np.ndarray
    draft_source: str           # "in_round" (timed apart) or "line" (through the instrumented draft steps)
    bookkeeping_source: str     # "in_round" or "k_max_run"
    rollback_untimed: list[int]


@dataclass
class _TimedApart:
    """What was timed apart at each k (``predict``'s ``*_by_k`` arguments), in place of the K_max run's figures."""
    draft: dict[int, list[float]]
    rollback: dict[int, dict[int, list[float]]]
    plain_steps: dict[int, list[float]]
    bookkeeping: dict[int, list[float]]


@dataclass
class _KmaxRun:
    """The instrumented K_max run's full rounds as arrays, their means, and their bootstrap resamples (drawn in this
    order from the one generator, so a prediction is reproducible)."""
    k_max: int
    acc: np.ndarray
    dk: np.ndarray
    rb_by: dict[int, float]
    rb_full: float
    book: np.ndarray
    t_dec: float
    t1: float
    tk: float
    t_book: float
    b_steps: np.ndarray
    b_d1: np.ndarray
    b_dk: np.ndarray
    b_book: np.ndarray

    @classmethod
    def of(cls, rounds: list[dict], draft_1: list[float], plain_steps: list[float], k_max: int, rng,
           resamples: int) -> _KmaxRun:
        acc = np.asarray([r["accepted"] for r in rounds], dtype=float)
        dk = np.asarray([r["draft_ms"] or 0.0 for r in rounds], dtype=float)
        rb = np.asarray([r.get("rollback_ms") or 0.0 for r in rounds], dtype=float)
        # signed, as timed (the round model's rule: a floor at zero would bias the round dearer)
        book = np.asarray([r["ms"] - (r["draft_ms"] or 0.0) - (r["verify_ms"] or 0.0) - (r.get("rollback_ms") or 0.0)
                           for r in rounds], dtype=float)
        d1 = np.asarray(draft_1, dtype=float) if draft_1 else dk
        steps = np.asarray(plain_steps, dtype=float)
        rb_by, rb_full = _rollback_by_accepted(acc, rb, k_max)
        b_steps = resample.statistic(steps, np.mean, rng, resamples)
        b_d1 = resample.statistic(d1, np.mean, rng, resamples)
        b_dk, b_book = resample.means([dk, book], rng, resamples)  # K_max rounds resampled whole
        return cls(k_max, acc, dk, rb_by, rb_full, book, float(steps.mean()), float(d1.mean()), float(dk.mean()),
                   float(book.mean()), b_steps, b_d1, b_dk, b_book)

    def rollback_of(self, a: np.ndarray, k: int, timed: dict[int, float]) -> tuple[np.ndarray, list[int]]:
        """Each round's rollback at k: timed apart at k where it was, else the K_max run's at the same accepted count
        (a full round's for a = k); a count timed in neither is named (the round model's rule, as ``run`` names it)
        and counts as nothing, never filled in with another count's time."""
        known = {**self.rb_by, **timed}
        missing = sorted({int(x) for x in a if int(x) < k and int(x) not in known})
        part = np.asarray([known.get(int(x), 0.0) for x in a], dtype=float)
        full = timed.get(k, self.rb_full)
        return np.where(a < k, part, full), missing


def _predict_at(key: int, depth: int, at_k: np.ndarray, base: _KmaxRun, verify: list[float], timed: _TimedApart, rng,
                resamples: int, seed: int, line: tuple[int, int]) -> _AtK:
    """The prediction at one setting: the round model's terms, then their bootstrap (the draws in a fixed order).
    ``key``: the setting's k (a chain's; a tree's budget), what the timings apart are kept by; ``depth``: the most a
    round accepts (k for a chain, the depth limit for a tree), what rollback and draft are kept by within it;
    ``at_k``: the accepted counts of the rounds a run at the setting makes; ``line``: (where, the K_max run's) on the
    line through the draft times at 1 and K_max, used where drafting was not timed apart."""
    def boot(x, stat):
        return resample.statistic(x, stat, rng, resamples)

    k = depth
    v = np.asarray(verify, dtype=float)
    t_v = float(np.mean(v))
    by_prev = _by_prior_accepted(timed.draft.get(key), k)
    in_round = np.concatenate(list(by_prev.values())) if by_prev else np.asarray([], dtype=float)
    # per accepted count of the round before (the drafter's catch-up), the mean of paired differences (round less
    # the verify before it), weighted by how often a run at k accepts that many, as rollback is. Means, not
    # medians, of everything timed apart: the measured speed is a rate (a mean over rounds, stalls included), and
    # costs on a shared machine are right-skewed, so medians read optimistic (8–12% in the stall simulation, tested)
    w_prev = _weights(at_k, by_prev)
    # Not floored at zero: where drafting adds nearly nothing, the difference of two timings comes out below zero
    # about as often as above (the verify timed alone also costs a little more than inside a round), and a floor
    # would bias the round upward; the mean of the differences is unbiased, and verify + draft is the round as timed
    # (shown as "below noise" when at or below zero)
    t_d = (sum(w * float(np.mean(by_prev[a])) for a, w in w_prev.items()) if in_round.size
           else draft_ms_at(line[0], base.t1, base.tk, line[1]))
    timed_rb = {int(a): float(np.mean(xs)) for a, xs in (timed.rollback.get(key) or {}).items() if len(xs)}
    rb_k, rb_missing = base.rollback_of(at_k, k, timed_rb)
    t_rb = None if rb_missing else float(rb_k.mean())
    book_prev = _by_prior_accepted(timed.bookkeeping.get(key), k)
    w_book = _weights(at_k, book_prev)
    # the bookkeeping timed apart at k (components: the round's work after the read-back but its rollback), weighted
    # by the accepted count as the draft is; without it, the rest of the K_max run's instrumented rounds
    t_book_k = sum(w * float(np.mean(book_prev[a])) for a, w in w_book.items()) if book_prev else base.t_book
    E = 1.0 + float(at_k.mean())
    own = timed.plain_steps.get(key)
    if own:  # this k's own plain runs (resampled with a generator of its own, so other rows' draws stay put)
        s_k = np.asarray(own, dtype=float)
        t_dec_k = float(s_k.mean())
        b_steps_k = resample.statistic(s_k, np.mean, resample.generator([seed, key]), resamples)
    else:
        t_dec_k, b_steps_k = base.t_dec, base.b_steps
    model = RoundModel(E, t_dec_k, t_v, t_d, t_rb, t_book_k)
    if model.round_ms <= 0:
        where = f"{'k' if key == k else 'tree budget'} = {key}"
        raise TermsBelowNoise(key, f"tune: at {where} the round's terms timed apart add up to nothing (T_verify {t_v:.2f} ms, "
                                 f"T_draft {t_d:+.2f} ms): the machine was too noisy to time them; run again with more "
                                 "--component-reps on a quieter machine")
    frac = (line[0] - 1) / (line[1] - 1) if line[1] > 1 else 0.0
    b_acc, b_rb = resample.means([at_k, rb_k], rng, resamples)  # rounds at k resampled whole
    b_E = 1.0 + b_acc
    b_d = (sum(w * boot(by_prev[a], np.mean) for a, w in w_prev.items()) if in_round.size
           else base.b_d1 + (base.b_dk - base.b_d1) * frac)
    b_book_k = sum(w * boot(book_prev[a], np.mean) for a, w in w_book.items()) if book_prev else base.b_book
    b_cost = boot(v, np.mean) + b_d + b_rb + b_book_k
    b_s = b_E * b_steps_k / b_cost
    b_t = E * b_steps_k / b_cost  # E held at its value: the timings' share of the uncertainty alone
    return _AtK(model, b_s, b_t, "in_round" if in_round.size else "line", "in_round" if book_prev else "k_max_run",
                rb_missing)


def _by_prior_accepted(samples, k: int) -> dict[int, np.ndarray]:  # dict: accepted count -> its samples
    """A drafter's in-round draft times at k (``components``: pair i follows an earlier round that accepted i mod
    (k+1)) by that accepted count; a plain list, or a dict already keyed by it."""
    if not samples:
        return {}
    if isinstance(samples, dict):
        return {int(a): np.asarray(xs, dtype=float) for a, xs in samples.items() if len(xs)}
    out: dict[int, list[float]] = {}
    for i, x in enumerate(samples):
        out.setdefault(i % (k + 1), []).append(x)
    return {a: np.asarray(xs, dtype=float) for a, xs in out.items()}


def _weights(accepted: np.ndarray, by_prev: dict[int, np.ndarray]) -> dict[int, float]:  # dict: accepted count -> weight
    """How often a run accepts each count (the walked rounds), over the counts that were timed."""
    if not by_prev:
        return {}
    counts = {a: float(np.sum(accepted == a)) for a in by_prev}
    total = sum(counts.values())
    return {a: c / total for a, c in counts.items()} if total else {a: 1.0 / len(by_prev) for a in by_prev}
