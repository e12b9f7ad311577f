"""The prediction's inputs, timed apart from the speculative rounds they predict.

The division (DESIGN §1) is a prediction only when its inputs are measured separately from the rounds it is
held against. A run calls this beside each speculative pass (before and after it, never inside), each call at
another point ``at`` of the case, so the calls together spread over the case as its rounds do. A call prefills the
case's prompt and its greedy continuation up to that point and then, ``reps`` times, on a cache restored before each:

- **verify**: one forward over ``k+1`` positions exactly as a round verifies (the same inputs shape, hybrid state
  capture, the hidden-state tap when the drafter needs it, the same accept/reject read-back), timed to the sync;
- **rollback**: right after it, the rollback to ``a`` accepted drafts, evaluated and timed (``a`` cycles over
  0..k, so the run's acceptance histogram can weight it);
- **draft**: what drafting adds to a round. A fresh drafter is brought to this point through one simulated earlier
  round that accepted ``a`` drafts (untimed: started ``a+1`` positions back, asked for ``k`` drafts, told which were
  accepted, so its next draft catches up ``a+1`` positions as a real one does); then one round is timed as an
  end-to-end round runs it — ``k`` drafts left lazy where the drafter allows, the verify forward built on them,
  one sync for all of it — and the verify forward timed alone just before is subtracted. On a small model a draft
  timed alone behind barriers costs up to twice what it adds inside a round (the lazy chain's graph building
  overlaps its own compute); the round is what the run pays. The drafter is made ready before the verify and the
  rollback of the same sample run, so what runs just before the timed round is what runs before a real one (the
  earlier round's verify and rollback), not the drafter's own preparation. ``draft_alone_ms`` keeps the draft timed alone;
- **bookkeeping**: the same round's work after the read-back other than its rollback (the verify's record for the
  rollback, the drafter's update, the emitted tokens), as ``speculative_generate`` does it.

None of these are the rounds' own forwards: the speculative runs never see this cache.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import mlx.core as mx
from mlx_lm.models.cache import make_prompt_cache

from specscope.engine_adapter.clock import ms_since
from specscope.engine_adapter.decode.decoding import prefill
from specscope.engine_adapter.drafters.drafter import Draft
from specscope.engine_adapter.cache.hidden import install_tap, tapping
from specscope.engine_adapter.cache.capture import capturing, install_capture, is_hybrid
from specscope.engine_adapter.cache.rollback import CacheSnapshot, VerifyRollback

from .records import ComponentTimes

DEFAULT_REPS = 3



def _share_equal(rounds: list[list[int]], alone: list[int] | None) -> float | None:
    return sum(r == alone for r in rounds) / len(rounds) if rounds and alone is not None else None


def measure_components(model, make_drafter, sampling, prompt: list[int], continuation: list[int], k: int,
                       reps: int = DEFAULT_REPS, at: float = 0.5, start=None) -> ComponentTimes:
    """T_verify(k+1), T_draft(k), T_bookkeeping and rollback per accepted count, timed apart at a point of the case.

    ``continuation``: the target's own (plain) output for ``prompt``; ``make_drafter()`` a fresh drafter of the run's
    kind; ``at``: where in the continuation the timed rounds stand (0.5: its middle; a run spreads its calls over the
    case). Returns plain numbers: ``{"context", "k", "verify_ms": [...], "draft_ms": [...], "rollback_ms": {a: [...]}}``
    (``draft_ms``: what drafting adds to a round, paired with the verify before it; ``prior_accepted``: the accepted
    count of the earlier round each draft caught up from; ``bookkeeping_ms``: the round's work after the read-back
    other than the rollback — the rollback's record of the verify, the drafter's update, the emitted tokens;
    ``round_ms``, ``draft_alone_ms``: one draft timed alone). ``start``: the case's prompt prefilled once
    (``context.prefill_entry``), so the calls of one case prefill only their part of the continuation (untimed work,
    a fifth of a call without it).
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    if not 0.0 <= at <= 1.0:
        raise ValueError("at must lie in [0, 1]")
    t_start = time.perf_counter()
    context, last, tokens = round_point(prompt, continuation, k, at)
    bench = _RoundBench(model, make_drafter(), sampling, context, last, tokens, start)
    # Every begin below starts within k + 2 positions of the context's end: the drafter keeps its state over the
    # context before that once for the call (a draft model's cache, an MTP head's: ``Drafter.hold_prefix``), so each begin fills in
    # only those positions, not the whole context again (untimed work, but 28% of a call's wall time without it).
    with bench.drafter.hold_prefix(bench.seq[:max(0, len(context) - k - 2)], hidden=bench.hidden):
        bench.warm_up()
        timed = bench.timed(max(reps, 1))
    bench.snapshot.restore()
    seen = bench.drafts_seen
    return {
        "context": len(context),
        "k": k,
        "reps": max(reps, 1),
        "verify_ms": timed.verify,
        "draft_ms": timed.draft,
        "draft_method": "in_round",
        "prior_accepted": timed.prior,
        "bookkeeping_ms": timed.book,
        "at": at,
        "round_ms": timed.round,
        "draft_alone_ms": timed.alone,
        # the parts of each draft timed alone, where the drafter times them apart (DFlash2: its forward + top-K, then
        # the selector's walk, sequential position by position)
        **({"draft_forward_ms": bench.draft_parts["forward"]} if "forward" in bench.draft_parts else {}),
        **({"draft_walk_ms": bench.draft_parts["walk"]} if "walk" in bench.draft_parts else {}),
        # the drafts of the timed rounds are the drafter's proposal from this prefix, as drafting alone gives (a check
        # that the simulated earlier round left the drafter where a real one would; a draft model's cache then holds
        # its own drafts where they were wrong, which costs the same but may propose otherwise)
        "round_drafts_agree": _share_equal(seen["round"], seen["alone"][0] if seen["alone"] else None),
        "rollback_ms": {str(a): xs for a, xs in bench.rollback_ms.items()},
        "rollback_mode": bench.rollback.mode,
        "wall_ms": ms_since(t_start),  # what timing the components apart cost this case, prefill included
    }


DRAFT_PARTS = ("forward", "walk")


def round_point(prompt: list[int], continuation: list[int], k: int, at: float) -> tuple[list[int], int, list[int]]:
    """Where the timed rounds stand: (the context before the round, its first verify input, the k tokens after)."""
    cont = list(continuation)
    m = min(max(1, round(len(cont) * at)), max(1, len(cont)))
    if len(cont) < m + k + 1:  # a short continuation: verify its own last tokens, repeated where it runs out
        cont = cont + [cont[-1] if cont else prompt[-1]] * (m + k + 1 - len(cont))
    context = list(prompt) + cont[:m - 1]  # the token at m-1 is "last": the round's first verify input
    return context, cont[m - 1], cont[m:m + k]


class _RoundBench:
    """The target prefilled to a point of the case, its cache snapshot and rollback, and one drafter: each part of a
    round run (and timed) on its own, the cache restored between them."""

    def __init__(self, model, drafter, sampling, context: list[int], last: int, tokens: list[int], start):
        self.model, self.drafter, self.sampling = model, drafter, sampling
        self.context, self.last, self.k = context, last, len(tokens)
        if is_hybrid(model):
            install_capture(model)
        if drafter.needs_hidden:
            install_tap(model)
        self.mode = getattr(drafter, "hidden_mode", "post-norm")
        self.cache = cache = make_prompt_cache(model)
        with tapping(drafter.needs_hidden) as tap:
            mx.eval(prefill(model, cache, context, start=start))
            self.hidden = tap.hidden(self.mode) if tap else None
            if self.hidden is not None:
                mx.eval(self.hidden)
        mx.eval([c.state for c in cache])
        self.snapshot = CacheSnapshot(cache)
        self.rollback = VerifyRollback(model, cache)
        self.inputs = mx.array([last] + tokens, dtype=mx.uint32)
        self.draft = Draft(list(tokens))
        self.seq = context + [last]  # seq[p] for p < len(context) has its hidden state in hidden[p]
        self.drafts_seen: dict[str, list] = {"alone": [], "round": []}
        self.draft_parts: dict[str, list[float]] = {}
        self.rollback_ms: dict[int, list[float]] = {a: [] for a in range(self.k + 1)}

    def verify(self, verify_inputs, verify_draft, t0: float):
        """The verify forward as a round runs it (capture, tap, accept read-back), timed from ``t0`` to the sync;
        returns the time, what the read-back gave (accepted, bonus) and what the round's work after it needs."""
        self.rollback.before_verify()
        with capturing() as cap, tapping(self.drafter.needs_hidden) as tap:
            logits = self.model(verify_inputs[None], cache=self.cache)[0]
        _, bonus, _ = self.sampling.verify(logits, verify_draft, len(self.context))
        return ms_since(t0), bonus, cap, tap

    def verify_once(self) -> float:
        self.snapshot.restore()
        t, _, cap, _ = self.verify(self.inputs, self.draft, time.perf_counter())
        self.rollback.record(cap, self.k + 1, self.inputs)
        return t

    def draft_once(self) -> float:
        d = self.drafter  # begin() resets every drafter: one instance (one load of an MTP head) serves every rep
        d.begin(list(self.context), self.last, hidden=self.hidden)
        t0 = time.perf_counter()
        out = d.draft(self.last, self.k)
        if out.tokens is None:  # a lazy draft: evaluate it, as an instrumented round does
            mx.eval(out.array)
            out.materialize()
        t = ms_since(t0)
        self.drafts_seen["alone"].append(list(out.tokens))
        for part in DRAFT_PARTS:  # a drafter whose draft has parts timed apart (DFlash2: its forward, the walk)
            if f"{part}_ms" in out.extra:
                self.draft_parts.setdefault(part, []).append(float(out.extra[f"{part}_ms"]))
        return t

    def drafter_after_round(self, a_prev: int):
        """A fresh drafter as a real round leaves it: an earlier round from ``a_prev + 1`` positions back drafted
        ``k`` and had ``a_prev`` accepted (untimed)."""
        # begin() resets every drafter: one instance serves every rep
        return ready_drafter(self.drafter, self.seq, self.hidden, len(self.context), a_prev, self.k)

    def round_once(self, a_prev: int, d) -> tuple[float, float]:
        """One round as an end-to-end round runs it, by a drafter ``drafter_after_round(a_prev)`` made ready: lazy
        drafts, the verify built on them, one sync; then the round's work after the read-back but its rollback (timed
        apart), as ``accepted = a_prev`` (the bookkeeping). Returns (the round to the read-back, the bookkeeping), ms."""
        last, k = self.last, self.k
        self.snapshot.restore()
        t0 = time.perf_counter()
        out = d.draft(last, k, lazy=True) if d.lazy_drafts else d.draft(last, k)
        round_inputs = mx.concatenate([mx.array([last], dtype=mx.uint32), out.as_array().astype(mx.uint32)])
        t_round, bonus, cap, tap = self.verify(round_inputs, out, t0)
        t1 = time.perf_counter()  # as speculative_generate after the read-back (its rollback is timed apart)
        self.rollback.record(cap, k + 1, round_inputs)
        out.materialize()
        assert out.tokens is not None
        emitted = out.tokens[:a_prev] + [bonus]
        d.update(a_prev, out, emitted, hidden=tap.hidden(self.mode) if tap else None)
        t_book = ms_since(t1)
        self.drafts_seen["round"].append(list(out.tokens))
        return t_round, t_book

    def rollback_once(self, a: int) -> float:
        t0 = time.perf_counter()
        touched = self.rollback.rollback(a)
        if touched:
            mx.eval(touched)
        return ms_since(t0)

    def warm_up(self) -> None:
        """Every shape once (not recorded)."""
        self.verify_once()
        self.rollback.rollback(0)
        self.snapshot.restore()
        self.draft_once()
        self.round_once(0, self.drafter_after_round(0))
        self.draft_parts.clear()  # the warm-up's draft is not a sample

    def timed(self, reps: int) -> _Samples:
        """``reps`` rounds per earlier accepted count 0..k, each: the verify, the rollback, the round."""
        out = _Samples()
        for r in range(reps * (self.k + 1)):
            a = r % (self.k + 1)
            # The drafter is made ready first, then the verify and the rollback run, then the timed round: what runs just
            # before a real round's draft is the earlier round's verify and rollback, not the drafter's own work. Timed
            # straight after its preparation (its weights and cache just touched), a separate draft model's round read
            # 5.6% below the real rounds it was interleaved with (0.944, 0.931-0.956, 400 rounds); in this order 2.9%.
            d = self.drafter_after_round(a)  # the earlier round accepted a: the draft catches up a+1 positions
            t_verify = self.verify_once()
            self.rollback_ms[a].append(self.rollback_once(a))
            out.verify.append(t_verify)
            t_round, t_book = self.round_once(a, d)
            out.round.append(t_round)
            out.draft.append(t_round - t_verify)  # paired: what drafting adds to the verify just before it
            out.prior.append(a)
            out.book.append(t_book)
            if r == 0:  # the draft alone is a side figure (what barriers cost it): once a call is enough
                out.alone.append(self.draft_once())
        return out


@dataclass
class _Samples:
    """A call's timed rounds, in the order they were taken (``_RoundBench.timed``)."""
    verify: list[float] = field(default_factory=list)
    draft: list[float] = field(default_factory=list)    # each round less the verify just before it
    alone: list[float] = field(default_factory=list)    # one draft timed alone
    round: list[float] = field(default_factory=list)
    prior: list[int] = field(default_factory=list)      # the earlier round's accepted count
    book: list[float] = field(default_factory=list)


def ready_drafter(d, seq: list[int], hidden, context_len: int, a_prev: int, k: int):
    """``d`` as a real round leaves it at the end of ``seq[:context_len]``: begun ``a_prev + 1`` positions back, a round
    of ``k`` drafts that accepted ``a_prev``, updated with what was emitted (untimed). A tree round's components make
    their drafter ready the same way (``tree_components``)."""
    start = max(1, context_len - a_prev - 1)
    d.begin(seq[:start], seq[start], hidden=hidden[:start] if hidden is not None else None)
    pre = d.draft(seq[start], k)
    if pre.tokens is None:
        mx.eval(pre.array)
        pre.materialize()
    emitted = seq[start + 1:]
    d.update(len(emitted) - 1, pre, emitted, hidden=hidden[start:] if hidden is not None else None)
    return d
