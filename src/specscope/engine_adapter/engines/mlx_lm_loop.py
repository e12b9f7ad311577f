"""mlx-lm's own speculative loop (``mlx_lm.generate.speculative_generate_step``, a draft model) behind the seam.

What it reports: each cycle's wall time, the drafts it accepted and the token the target added; not what drafting,
verifying and trimming the caches cost apart (one sync a cycle), nor the drafts it rejected (``UNKNOWN_TOKEN``).

mlx-lm's loop has no first token of its own: it prefills all but the prompt's last token and its first cycle
verifies that token with the drafts. So the prompt is prefilled here, into both models' caches, exactly as
specscope's engine does (the first token sampled by the run's sampling, as plain decoding does), and mlx-lm's loop
starts from that token with those caches (its ``prompt_cache``): every cycle it runs is then one of its own rounds.
Its caches must be trimmable (mlx-lm refuses a Gated DeltaNet hybrid: "requires a trimmable prompt cache"), and the
refusal is said before anything is measured.
"""

from __future__ import annotations

from typing import Iterator

import mlx.core as mx

from specscope.engine_adapter.clock import now_ms
from specscope.engine_adapter.decode.records import PrefillRecord, RoundRecord
from specscope.engine_adapter.engines.seam import UNKNOWN_TOKEN, SpeculativeEngine
from specscope.errors import SpecscopeError



class MlxLmLoop(SpeculativeEngine):
    name = "mlx-lm"
    reports = frozenset({"ms"})
    needs_draft_model = True
    demo_kind = "dense"  # the hybrid demo's caches cannot be trimmed: --demo runs the dense demo with the demo's draft

    def __init__(self, target, draft, params) -> None:
        super().__init__(target, draft, params)
        from importlib.metadata import version

        from mlx_lm.models.cache import can_trim_prompt_cache, make_prompt_cache

        self.version = version("mlx-lm")
        if draft is None:
            raise SpecscopeError("engine mlx-lm drafts with a draft model: pass --draft-model (or --drafter draft)")
        kinds = {type(c).__name__ for c in make_prompt_cache(target.model) if not c.is_trimmable()}
        if not can_trim_prompt_cache(make_prompt_cache(target.model)):
            raise SpecscopeError(f"engine mlx-lm cannot run this target: its speculative loop needs a trimmable cache "
                                 f"and the target has {', '.join(sorted(kinds))} (mlx-lm raises the same); use "
                                 "specscope's own engine for this model")

    def forward_model(self):
        """specscope's loaded target: mlx-lm's loop forwards that very module (``model(y[None], cache=cache)``)."""
        return self.target.model

    def speculative(self, prompt: list[int], max_tokens: int, sampling) -> Iterator[PrefillRecord | RoundRecord]:
        from mlx_lm.generate import speculative_generate_step
        from mlx_lm.models.cache import make_prompt_cache
        from mlx_lm.sample_utils import make_sampler

        from specscope.engine_adapter.decode.decoding import prefill
        from specscope.engine_adapter.mlx_types import token

        k = self.params.num_draft_tokens
        target, draft = self.target.model, self.draft.model
        t_cache, d_cache = make_prompt_cache(target), make_prompt_cache(draft)
        t0 = now_ms()
        first = token(sampling.sample(prefill(target, t_cache, prompt), 0))
        mx.eval(prefill(draft, d_cache, prompt))  # the draft model reads the prompt too, as mlx-lm's own prefill does
        mx.eval([c.state for c in t_cache + d_cache])
        yield PrefillRecord(event="prefill", n_prompt=len(prompt), token=first, ms=now_ms() - t0)
        if max_tokens <= 1:
            return
        if not sampling.greedy:
            mx.random.seed(sampling.seed)
        sampler = None if sampling.greedy else make_sampler(temp=sampling.temp, top_p=sampling.top_p)
        gen = speculative_generate_step(mx.array([first], dtype=mx.uint32), target, draft, num_draft_tokens=k,
                                        max_tokens=max_tokens - 1, sampler=sampler, prompt_cache=t_cache + d_cache)
        made, index = 1, 0
        pending: list[int] = []  # this cycle's accepted drafts so far
        t_start = now_ms()
        for out, _logprobs, from_draft in gen:
            tok = int(out)
            if from_draft:
                pending.append(tok)
                if made + len(pending) < max_tokens:
                    continue
            t_end = now_ms()
            emitted = pending + ([] if from_draft else [tok])
            drafted_n = min(k, max_tokens - made)  # what mlx-lm drafted this cycle (it drafts fewer near the end)
            accepted = len(pending)
            yield RoundRecord(event="round", index=index, drafted=pending + [UNKNOWN_TOKEN] * max(0, drafted_n - accepted),
                            accepted=accepted, emitted=emitted, draft_ms=None, verify_ms=None, rollback_ms=None,
                            ms=t_end - t_start, extra={"engine": self.name}, kind="end_to_end")
            made += len(emitted)
            index += 1
            pending = []
            t_start = now_ms()  # at the resume: the consumer's time is in no cycle (one clock, as decode.decoding)
            if made >= max_tokens:
                break
