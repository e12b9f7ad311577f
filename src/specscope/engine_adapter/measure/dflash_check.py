"""``specscope check --drafter dflash``: is a DFlash drafter's own context right after every accepted length?

For each accepted count ``n`` in 0..k (k up to block size − 1): a round as a run makes it (the target's prefill with
the tap on the drafter's target layers, the drafter's real block of k drafts, the verify forward over k+1 positions,
the target's rollback to n, the drafter's update with the verify forward's hidden states), then the next block's
draft logits, compared with those of a fresh drafter given the hidden states of a separate forward over the same
accepted tokens. They must agree to the doctor's tolerance: a drafter that kept a rejected position's features,
lost an accepted one, or placed them at the wrong positions differs by far more.
"""

from __future__ import annotations

import time

import mlx.core as mx
from mlx_lm.models.cache import make_prompt_cache

from specscope.engine_adapter.cache.capture import capturing, install_capture, is_hybrid
from specscope.engine_adapter.cache.hidden import tapping
from specscope.engine_adapter.cache.rollback import CacheSnapshot, VerifyRollback
from specscope.engine_adapter.mlx_types import scalar

from .records import DrafterContextCheck, DrafterContextRow


def _rel(got: mx.array, want: mx.array) -> float:
    got, want = got.astype(mx.float32), want.astype(mx.float32)
    scale = max(1.0, float(scalar(mx.max(mx.abs(want)))))
    return float(scalar(mx.max(mx.abs(got - want)))) / scale


def drafter_context_exactness(model, make_drafter, prompt: list[int], k: int, tolerance: float,
                              progress=lambda done, total, what: None) -> DrafterContextCheck:
    """Rows ``{"accepted": n, "relative_error": e, "exact": bool}`` for n = 0..k (see the module docstring)."""
    if is_hybrid(model):
        install_capture(model)
    from specscope.engine_adapter.decode.decoding import prefill

    rows: list[DrafterContextRow] = []
    t0 = time.perf_counter()
    # the prompt prefilled once, every row's round from a snapshot of that cache (restoring is exact for every cache
    # kind; the prefill was ~half of the check's time, repeated k + 1 times)
    mode = make_drafter().hidden_mode
    cache = make_prompt_cache(model)
    with tapping() as tap:
        last = int(scalar(mx.argmax(prefill(model, cache, prompt))))
        hidden = tap.hidden(mode)
    mx.eval(hidden, [c.state for c in cache])
    snapshot = CacheSnapshot(cache)
    for n in range(k + 1):
        progress(n, k + 1, f"DFlash drafter context: k = {k}, {n} accepted")
        d = make_drafter()
        snapshot.restore()
        rb = VerifyRollback(model, cache)
        d.begin(list(prompt), last, hidden=hidden)
        draft = d.draft(last, k)
        assert draft.tokens is not None
        inputs = mx.array([last] + draft.tokens, dtype=mx.uint32)
        rb.before_verify()
        with capturing() as cap, tapping() as tap:
            mx.eval(model(inputs[None], cache=cache))
            verified = tap.hidden(mode)
        rb.record(cap, k + 1, inputs)
        touched = rb.rollback(n)
        if touched:
            mx.eval(touched)
        bonus = (draft.tokens[n] + 1) % d.spec.vocab_size if n < k else prompt[0]  # a bonus unlike the rejected draft
        d.update(n, draft, draft.tokens[:n] + [bonus], hidden=verified)
        got = d.block_logits(bonus, k)
        mx.eval(got)
        # the reference: a fresh drafter, given a separate forward's hidden states over the same accepted tokens
        seq = list(prompt) + [last] + list(draft.tokens[:n])
        with tapping() as tap:
            mx.eval(prefill(model, make_prompt_cache(model), seq))
            fresh_hidden = tap.hidden(mode)
        ref = make_drafter()
        ref.begin(seq, bonus, hidden=fresh_hidden)
        want = ref.block_logits(bonus, k)
        err = _rel(got, want)
        rows.append({"accepted": n, "relative_error": err, "exact": err <= tolerance,
                     "context_positions": d.read_positions(), "expected_positions": len(seq)})
    progress(k + 1, k + 1, "DFlash drafter context done")
    return {"k": k, "rows": rows, "max_relative_error": max(r["relative_error"] for r in rows),
            "exact": all(r["exact"] and r["context_positions"] == r["expected_positions"] for r in rows),
            "tolerance": tolerance, "seconds": time.perf_counter() - t0}
