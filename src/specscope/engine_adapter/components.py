"""The prediction's inputs, timed apart from the speculative rounds they predict.

The division (DESIGN §1) is a prediction only when its inputs are measured separately from the rounds it is
held against. Per case, after the plain run, this prefills the case's prompt and the first half of its greedy
continuation (the mean cache length the rounds see) and then, ``reps`` times, on a cache restored before each:

- **verify**: one forward over ``k+1`` positions exactly as a round verifies (the same inputs shape, hybrid state
  capture, the hidden-state tap when the drafter needs it, the same accept/reject read-back), timed to the sync;
- **rollback**: right after it, the rollback to ``a`` accepted drafts, evaluated and timed (``a`` cycles over
  0..k, so the run's acceptance histogram can weight it);
- **draft**: a fresh drafter started at the same point (untimed) and asked for ``k`` drafts, timed to the sync.

None of these are the rounds' own forwards: the speculative runs never see this cache.
"""

from __future__ import annotations

import time

import mlx.core as mx
from mlx_lm.models.cache import make_prompt_cache

from .decoding import prefill
from .drafters import Draft
from .hidden import install_tap, tapping
from .rollback import CacheSnapshot, VerifyRollback, capturing, install_capture, is_hybrid

DEFAULT_REPS = 3


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000.0


def measure_components(model, make_drafter, sampling, prompt: list[int], continuation: list[int], k: int,
                       reps: int = DEFAULT_REPS) -> dict:
    """T_verify(k+1), T_draft(k) and rollback per accepted count, timed apart at the middle of the case.

    ``continuation``: the target's own (plain) output for ``prompt``; ``make_drafter()`` a fresh drafter of the run's
    kind. Returns plain numbers: ``{"context", "k", "verify_ms": [...], "draft_ms": [...], "rollback_ms": {a: [...]}}``.
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    t_start = time.perf_counter()
    cont = list(continuation)
    m = max(1, len(cont) // 2)
    if len(cont) < m + k + 1:  # a short continuation: verify its own last tokens, repeated where it runs out
        cont = cont + [cont[-1] if cont else prompt[-1]] * (m + k + 1 - len(cont))
    context = list(prompt) + cont[:m - 1]  # the token at m-1 is "last": the round's first verify input
    last, tokens = cont[m - 1], cont[m:m + k]
    drafter = make_drafter()
    if is_hybrid(model):
        install_capture(model)
    if drafter.needs_hidden:
        install_tap(model)
    mode = getattr(drafter, "hidden_mode", "post-norm")
    cache = make_prompt_cache(model)
    with tapping(drafter.needs_hidden) as tap:
        mx.eval(prefill(model, cache, context))
        hidden = tap.hidden(mode) if tap else None
        if hidden is not None:
            mx.eval(hidden)
    mx.eval([c.state for c in cache])
    snapshot = CacheSnapshot(cache)
    rollback = VerifyRollback(model, cache)
    inputs = mx.array([last] + tokens, dtype=mx.uint32)
    draft = Draft(list(tokens))

    def verify_once() -> tuple[float, float]:
        snapshot.restore()
        t0 = time.perf_counter()
        rollback.before_verify()
        with capturing() as cap, tapping(drafter.needs_hidden):
            logits = model(inputs[None], cache=cache)[0]
        sampling.verify(logits, draft, len(context))
        t_verify = _ms(t0)
        rollback.record(cap, k + 1, inputs)
        return t_verify, cap

    def draft_once() -> float:
        d = make_drafter()
        d.begin(list(context), last, hidden=hidden)
        t0 = time.perf_counter()
        out = d.draft(last, k)
        if out.tokens is None:  # a lazy draft: evaluate it, as an instrumented round does
            mx.eval(out.array)
            out.materialize()
        return _ms(t0)

    # warm-up: every shape once (not recorded)
    verify_once()
    rollback.rollback(0)
    snapshot.restore()
    draft_once()
    verify_ms, draft_ms, rollback_ms = [], [], {a: [] for a in range(k + 1)}
    for r in range(max(reps, 1) * (k + 1)):
        a = r % (k + 1)
        t_verify, _ = verify_once()
        t0 = time.perf_counter()
        touched = rollback.rollback(a)
        if touched:
            mx.eval(touched)
        rollback_ms[a].append(_ms(t0))
        verify_ms.append(t_verify)
        if r % (k + 1) == 0:
            draft_ms.append(draft_once())
    snapshot.restore()
    return {
        "context": len(context),
        "k": k,
        "reps": max(reps, 1),
        "verify_ms": verify_ms,
        "draft_ms": draft_ms,
        "rollback_ms": {str(a): xs for a, xs in rollback_ms.items()},
        "rollback_mode": rollback.mode,
        "wall_ms": _ms(t_start),  # what timing the components apart cost this case, prefill included
    }
