"""Plain and speculative decoding as generators of plain records.

Wall-clock times are read only after the values they cover are materialised
(``.item()`` / ``.tolist()`` / ``mx.eval``), so a time always covers finished
work.

One clock on both sides: every record times the engine's own work, from the
moment the generator resumes to the moment its value is ready, and nothing
computes while the consumer holds control between a ``yield`` and the next
resume. So a consumer's work (emitting, saving, drawing) lands in no record,
plain or speculative, and cannot favour either side. Plain decoding still
builds the next step's graph before waiting for the current token, as
``mlx_lm.generate_step`` does; only its ``async_eval`` waits for the resume.
(Issued before the ``yield``, as it was, the next forward ran in the consumer's
time where ``async_eval`` returns at once (a GPU), and where it returns only
once most of the forward has run (MLX's CPU backend) inside the previous
record: step 1's in the prefill's, which no rate counts.)
"""

from __future__ import annotations

from typing import Iterator

import mlx.core as mx
from mlx_lm.models.cache import make_prompt_cache

from specscope.engine_adapter.clock import now_ms
from specscope.engine_adapter.cache import context as _context
from specscope.engine_adapter.drafters.drafter import Drafter
from specscope.engine_adapter.cache.hidden import install_tap, tapping
from specscope.engine_adapter.mlx_types import token
from specscope.engine_adapter.decode.records import PrefillRecord, RoundRecord, StepRecord
from specscope.engine_adapter.cache.capture import capturing, install_capture, is_hybrid
from specscope.engine_adapter.cache.rollback import VerifyRollback
from specscope.engine_adapter.decode.sampling import Sampling

PREFILL_STEP = 2048
ROUND_KINDS = ("instrumented", "end_to_end", "alternate")
# "paired" (the run's default) is a protocol mode: each speculative phase runs one "end_to_end" and one "instrumented"
# pass over the same case (profiler.run.protocol); a single generator only ever runs one of the kinds above.
RUN_ROUND_KINDS = ("paired",) + ROUND_KINDS



def prefill(model, cache, prompt: list[int], step: int = PREFILL_STEP, start: _context.Stored | None = None) -> mx.array:
    """Process all prompt tokens; return the (lazy) logits of the last one, as mlx-lm does.

    A fresh cache whose tokens start with a long context stored for this model (``context.prefill_context``)
    starts from a copy of that context's cache, and only the rest is prefilled here; so does one whose tokens extend
    ``start`` (an entry kept apart, ``context.prefill_entry``)."""
    if not prompt:
        raise ValueError("empty prompt")
    return _context.prefill(model, cache, prompt, step, start)


def pipelines_plain() -> bool:
    """Whether plain decoding issues the next step before handing on this one's token, as ``mlx_lm.generate_step``
    does: on a GPU (Metal, CUDA), where ``mx.async_eval`` returns at once and the next forward's encoding then overlaps
    this one's compute (without it the baseline would pay the encoding every token). Not on MLX's CPU backend, where
    ``mx.async_eval`` returns only once most of the forward has run, so issuing early buys nothing measurable (1.009×,
    95% 0.995…1.023, 40 ABBA passes of 64 tokens) and would let that forward run while the consumer holds control."""
    return mx.default_device().type != mx.DeviceType.cpu


def plain_generate(
    model, prompt: list[int], max_tokens: int, sampling: Sampling | None = None, pipeline: bool | None = None
) -> Iterator[PrefillRecord | StepRecord]:
    """Plain decoding: one forward per token. Yields a ``PrefillRecord`` then ``StepRecord``s (``specscope.events``).

    Each record times the engine's own work, from the resume to its token (the module's one clock). ``pipeline``
    (default ``pipelines_plain()``): issue the next step before handing on this token, as mlx-lm does; a consumer that
    pauses then lets at most that one forward run unclocked (a bias towards plain, bounded by one forward per pause);
    without it nothing computes while the consumer holds control."""
    sampling = sampling or Sampling()
    pipeline = pipelines_plain() if pipeline is None else pipeline
    cache = make_prompt_cache(model)
    t_start = now_ms()
    y = sampling.sample(prefill(model, cache, prompt), 0)
    mx.async_eval(y)
    n = 0
    while True:
        if n + 1 < max_tokens:  # the next step's graph, built while ``y`` computes (mlx-lm's order)
            nxt = sampling.sample(model(y.reshape(1, 1), cache=cache)[0, -1], n + 1)
            if pipeline:
                mx.async_eval(nxt)
        tok = token(y)
        ms = now_ms() - t_start
        if n == 0:
            yield PrefillRecord(event="prefill", n_prompt=len(prompt), token=tok, ms=ms)
        else:
            yield StepRecord(event="step", index=n, token=tok, ms=ms)
        n += 1
        if n >= max_tokens:
            return
        # the step's clock starts at the resume, as a speculative round's does: the consumer's time is in no record
        t_start = now_ms()
        if not pipeline:
            mx.async_eval(nxt)
        y = nxt


def speculative_generate(
    model,
    prompt: list[int],
    drafter: Drafter,
    num_draft_tokens: int,
    max_tokens: int,
    sampling: Sampling | None = None,
    round_kinds: str = "instrumented",
) -> Iterator[PrefillRecord | RoundRecord]:
    """Speculative decoding: draft ``k``, verify ``k+1`` positions in one forward, keep the accepted prefix.

    ``round_kinds``: "instrumented" rounds wait after drafting, after verifying and after
    rolling back, so draft, verify and rollback are timed apart (the division's inputs);
    "end_to_end" rounds run as a production engine does — drafts chained lazily into the
    verify forward, rollback left lazy, one sync per round — so their wall time is what a
    user would get; "alternate" interleaves the two, so drift hits both alike.

    Caches are rolled back by the strategy ``rollback_plan.plan_rollback`` picks for
    their kind: Gated DeltaNet hybrids by rerunning the recurrence alone over the
    accepted positions from what the verify forward kept (all layers in one batched
    call); recurrent kinds without such capture by replaying the accepted positions
    (labelled, and counted as rollback time).

    An end-to-end round syncs once: the lazy drafts (each draft step ``async_eval``-ed
    as mlx-lm does), the verify forward and the greedy argmax are evaluated together in
    ``Sampling.verify``.
    """
    sampling = sampling or Sampling()
    if is_hybrid(model):
        install_capture(model)
    hidden_mode = getattr(drafter, "hidden_mode", "post-norm")
    if drafter.needs_hidden:
        install_tap(model)
    cache = make_prompt_cache(model)
    rollback = VerifyRollback(model, cache)
    t0 = now_ms()
    with tapping(drafter.needs_hidden) as tap:
        last = token(sampling.sample(prefill(model, cache, prompt), 0))
    drafter.begin(list(prompt), last, hidden=tap.hidden(hidden_mode) if tap else None)
    yield PrefillRecord(event="prefill", n_prompt=len(prompt), token=last, ms=now_ms() - t0)
    emitted, r = 1, 0
    if round_kinds not in ROUND_KINDS:
        raise ValueError(f"round_kinds must be one of {', '.join(ROUND_KINDS)}")
    while emitted < max_tokens:
        e2e = round_kinds == "end_to_end" or (round_kinds == "alternate" and r % 2 == 1)
        t_start = now_ms()
        # a round drafts what is left but one (its bonus completes the output); a drafter that drafts to the end as its
        # reference does drafts all that is left, and a round that accepts it all has its bonus cut
        k = min(num_draft_tokens, max_tokens - emitted - (0 if drafter.drafts_to_the_end else 1))
        draft = drafter.draft(last, k, lazy=True) if e2e and drafter.lazy_drafts else drafter.draft(last, k)
        t_drafted = now_ms()
        inputs = mx.concatenate([mx.array([last], dtype=mx.uint32), draft.as_array().astype(mx.uint32)]) if k else \
            mx.array([last], dtype=mx.uint32)
        rollback.before_verify()
        with capturing() as cap, tapping(drafter.needs_hidden) as tap:
            logits = model(inputs[None], cache=cache)[0]
        # lazy drafts (end-to-end round): one sync for the chained drafts, the verify and the argmax, as mlx-lm does
        accepted, bonus, extra = sampling.verify(logits, draft, emitted)
        t_verified = now_ms()
        rollback.record(cap, k + 1, inputs)
        touched = rollback.rollback(accepted)
        out_len = accepted + 1
        # An instrumented round times its rollback apart. An end-to-end round leaves it lazy, as a production engine
        # does, only when the next round is end-to-end too (its one sync pays for it). Before an instrumented round,
        # and after the last round, it is evaluated here, so the measured speed pays for every rollback and no
        # instrumented round's verify holds another round's work.
        next_e2e = round_kinds == "end_to_end" and emitted + out_len < max_tokens
        if touched and not next_e2e:
            mx.eval(touched)
        t_rolled = now_ms()
        assert draft.tokens is not None  # verify read back lazy drafts
        out = (draft.tokens[:accepted] + [bonus])[:max_tokens - emitted]
        if len(out) > accepted:  # a cut bonus ends the output: nothing follows for the drafter to update for
            drafter.update(accepted, draft, out, hidden=tap.hidden(hidden_mode) if tap else None)
        last = out[-1]
        emitted += len(out)
        t_end = now_ms()
        yield RoundRecord(event="round",
            index=r,
            drafted=list(draft.tokens),
            accepted=accepted,
            emitted=out,
            draft_ms=None if e2e else t_drafted - t_start,
            verify_ms=None if e2e else t_verified - t_drafted,
            rollback_ms=None if e2e else t_rolled - t_verified,
            ms=t_end - t_start,
            extra={**draft.extra, **extra},
            kind="end_to_end" if e2e else "instrumented",
        )
        r += 1
