"""dflash-mlx's block-drafting loop (``dflash_mlx.runtime.stream_dflash_generate``, PyPI ``dflash-mlx`` 0.1.8: the
``dflash`` extra) behind the seam.

It loads its own copy of the target and the DFlash drafter from their folders (``load_runtime_bundle``) and decodes the
run's prompt tokens greedily (it has no sampling: ``greedy_only``). Verify mode "dflash" (a fixed block; the default
"adaptive" shrinks the block on its own, which would hide the block size asked for). Each cycle is read from its token
events — every token carries how many cycles were complete when it was emitted — and timed from the previous cycle's
last token to its own, less the time this generator's consumer held control inside that span (a cycle is known
complete only at the next cycle's first token, so its record is handed on from inside the next cycle: one clock with
specscope's own records, which time the engine's own work and never the consumer's), without its per-cycle
diagnostics: turning those on makes its drafts synchronous (``spec_epoch``), so the timings would describe another
loop. dflash-mlx launches its next draft before it hands over a cycle's tokens (its own pipelining, kept): where
``mx.async_eval`` returns at once (a GPU) that draft may run while the consumer holds control; on MLX's CPU backend
it has mostly run before ``async_eval`` returns. So it reports each cycle's wall time and how many
tokens it committed; not the drafts it proposed, not what drafting, verifying and rolling back cost apart. It also
mixes a prompt-lookup drafter ("copyspec") into its cycles, which no setting turns off: a cycle's tokens may come from
either, and the session cannot tell which.

Tested here (Linux, MLX CPU backend) on a dense qwen3 target with a random DFlash drafter in the published format:
token-identical to plain decoding. A Gated DeltaNet hybrid target is refused on the CPU backend: 0.1.8's CPU path
for the hybrid's verify repeats no key heads up to the value heads (a shape error on the first verify) and, on any
device, its logits for an untied target go through the embedding instead of ``lm_head`` (the output repeats one
token); both were reproduced here.
"""

from __future__ import annotations

from typing import Iterator

from specscope.engine_adapter.clock import now_ms
from specscope.engine_adapter.decode.records import PrefillRecord, RoundRecord
from specscope.engine_adapter.engines.seam import UNKNOWN_TOKEN, SpeculativeEngine
from specscope.errors import SpecscopeError

TESTED_VERSION = "0.1.8"



class DFlashMlxLoop(SpeculativeEngine):
    name = "dflash-mlx"
    reports = frozenset({"ms"})
    needs_draft_model = True
    greedy_only = True

    def __init__(self, target, draft, params) -> None:
        super().__init__(target, draft, params)
        from importlib.metadata import PackageNotFoundError, version

        try:
            self.version = version("dflash-mlx")
        except PackageNotFoundError:
            raise SpecscopeError("engine dflash-mlx is not installed: pip install 'specscope[dflash]' "
                                 f"(dflash-mlx {TESTED_VERSION}, the version this adapter was tested with)") from None
        if self.version != TESTED_VERSION:
            raise SpecscopeError(f"engine dflash-mlx {self.version} is installed; this adapter was tested with "
                                 f"{TESTED_VERSION} only: pip install 'dflash-mlx=={TESTED_VERSION}'")
        if not params.draft_model:
            raise SpecscopeError("engine dflash-mlx drafts with a DFlash drafter: pass --draft-model FOLDER")
        if params.temp > 0:
            raise SpecscopeError("engine dflash-mlx decodes greedily only (it has no sampling): use --temp 0")
        import mlx.core as mx

        layers = getattr(getattr(target.model, "language_model", target.model), "layers", None) or []
        hybrid = any(hasattr(layer, "linear_attn") for layer in layers)
        if hybrid and not mx.metal.is_available():
            raise SpecscopeError("engine dflash-mlx 0.1.8 cannot verify a Gated DeltaNet hybrid on the CPU backend: "
                                 "its CPU path raises a shape error on the first verify (key heads not repeated to the "
                                 "value heads) and its logits for an untied target use the embedding; profile a dense "
                                 "target with it here, or run on a Mac")
        from dflash_mlx.runtime.bundle import load_runtime_bundle
        from dflash_mlx.runtime.context import build_offline_runtime_context

        self._ctx = build_offline_runtime_context(verify_mode="dflash")
        self._bundle = load_runtime_bundle(model_ref=str(target.path), draft_ref=str(params.draft_model),
                                           verify_config=self._ctx.verify)
        self.block = int(self._bundle.draft_model.block_size)

    def forward_model(self) -> str:
        return ("dflash-mlx runs its own copy of the target (load_runtime_bundle), forwards it layer by layer through "
                "its target ops rather than the model's call, and patches the model classes process-wide "
                "(cls.__call__ replaced): a forward's width and blocks cannot be read at the model's call")

    def speculative(self, prompt: list[int], max_tokens: int, sampling) -> Iterator[PrefillRecord | RoundRecord]:
        from dflash_mlx.engine.events import PrefillCompleteEvent, TokenEvent
        from dflash_mlx.runtime import stream_dflash_generate

        b = self._bundle
        k = min(self.params.num_draft_tokens, self.block - 1)
        t0 = now_ms()
        events = stream_dflash_generate(target_model=b.target_model, target_ops=b.target_ops, tokenizer=b.tokenizer,
                                        draft_model=b.draft_model, draft_backend=b.draft_backend, prompt="",
                                        prompt_tokens_override=list(prompt), max_new_tokens=max_tokens,
                                        use_chat_template=False, block_tokens=k + 1, stop_token_ids=[],
                                        runtime_context=self._ctx)
        made, index, cycle = 0, 0, 0
        pending: list[int] = []  # the current cycle's tokens
        # times on the engine's clock: wall time less the consumer's so far (records are handed on from inside the
        # next cycle, the moment its first token shows the last one complete)
        away = 0.0
        t_cycle = t_end = t0  # the previous cycle's last token; the current one's latest
        prefill_ms = None
        for ev in events:
            if isinstance(ev, PrefillCompleteEvent):
                prefill_ms = ev.prefill_us / 1000.0
            if not isinstance(ev, TokenEvent):
                continue
            now = now_ms() - away
            rec: PrefillRecord | RoundRecord | None = None
            if made == 0:  # the prefill's token
                rec = PrefillRecord(event="prefill", n_prompt=len(prompt), token=int(ev.token_id),
                                    ms=prefill_ms if prefill_ms is not None else now - t0)
                made, cycle, t_cycle = 1, ev.cycles_completed, now
            else:
                if ev.cycles_completed != cycle and pending:  # a new cycle began: the last one is complete
                    rec = self._round(index, pending, k, t_end - t_cycle)
                    index, t_cycle, pending = index + 1, t_end, []
                cycle = ev.cycles_completed
                pending.append(int(ev.token_id))
                t_end = now
                made += 1
            if rec is not None:
                handed = now_ms()
                yield rec
                away += now_ms() - handed
        if pending:
            yield self._round(index, pending, k, t_end - t_cycle)

    def _round(self, index: int, tokens: list[int], k: int, ms: float) -> RoundRecord:
        accepted = len(tokens) - 1  # a cycle commits its accepted drafts and the target's own token
        return RoundRecord(event="round", index=index, drafted=tokens[:accepted] + [UNKNOWN_TOKEN] * (k - accepted), accepted=accepted,
                         emitted=list(tokens), draft_ms=None, verify_ms=None, rollback_ms=None, ms=ms,
                         extra={"engine": self.name}, kind="end_to_end")
