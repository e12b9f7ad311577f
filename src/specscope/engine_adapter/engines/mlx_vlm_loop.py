"""mlx-vlm's speculative loop (``mlx_vlm.generate.ar.generate_step(draft_model=, draft_kind=)``, PyPI ``mlx-vlm``
0.7.10: the ``vlm`` extra) behind the seam.

mlx-vlm loads its own copy of the target (``mlx_vlm.load``: its own model classes, a vision tower disabled when the
checkpoint has none) and its own drafter (``mlx_vlm.speculative.drafters.load_drafter``). Its drafter kinds are
DFlash (``dflash``: block drafters in the published DFlash format, which is this project's), MTP (``mtp``: a native
checkpoint's own next-token head, e.g. the trained hybrid demo's) and EAGLE-3; it has no separate draft-model kind.
The kind follows the run's drafter: ``--draft-model FOLDER`` of a DFlash drafter → dflash; no draft model and a
target with an MTP head → mtp (``--demo``: the trained hybrid demo and its head, what specscope's ``auto`` picks
too). Anything else is refused before anything is measured. mlx-vlm verifies with DFlash only on targets whose
language model exposes its hidden states (``capture_layer_ids``: the Qwen3.5 family, Gemma 4, …; a plain dense qwen3
is not one of them: its prefill returns no hidden states).

Each cycle is read from its tokens: mlx-vlm counts its rounds on the drafter (``speculative_total_rounds``,
``speculative_total_accepted``, ``speculative_total_drafted``: lifetime counters, bumped before a round's tokens are
yielded), so the first token of a round says how many drafts it proposed and kept, and the round is complete at its
``accepted + 1``-th token. A round's time runs from the resume after the previous round's last token to its own last
token (one clock with specscope's records: the consumer's time is in no round). It reports each cycle's wall time,
the drafts proposed and accepted; not the rejected drafts (``UNKNOWN_TOKEN``), not what drafting, verifying and
rolling back cost apart (no per-cycle timings of its own).

Sampling: greedy at ``--temp 0``; at temperature its positioned sampler (``temperature``, ``top_p``, ``top_k`` 0,
``seed``), the rule whose output distribution ``specscope check --engine mlx-vlm`` audits against plain decoding.

Its target is an MLX module (``language_model`` of mlx-vlm's model): the opened pass times its forwards and blocks
while the loop decodes (``forward_model``); its verify forwards go through mlx-vlm's exact speculative verifier, which
reads the blocks' weights without calling them, so the blocks are timed at that verifier's per-block methods
(``block_sites``).
"""

from __future__ import annotations

from typing import Iterator

from specscope.engine_adapter.clock import now_ms
from specscope.engine_adapter.decode.records import PrefillRecord, RoundRecord
from specscope.engine_adapter.engines.seam import UNKNOWN_TOKEN, SpeculativeEngine
from specscope.errors import SpecscopeError

TESTED_VERSION = "0.7.10"
INSTALL = f"pip install 'specscope[vlm]' (mlx-vlm {TESTED_VERSION}, the version this adapter was tested with)"


def _drafter_kind(target, params) -> str:
    """The mlx-vlm drafter kind for the run: a DFlash drafter folder → dflash; no draft model and a target with an MTP
    head → mtp; anything else refused with what to pass."""
    from specscope.model_ref import resolve_model

    from specscope.engine_adapter.model.dflash_format import is_dflash_folder
    from specscope.engine_adapter.model.inspect_model import mtp_status

    if params.drafter not in ("auto", "dflash", "mtp"):
        raise SpecscopeError(f"engine mlx-vlm drafts with its own drafter kinds (dflash, mtp, eagle3), not "
                             f"--drafter {params.drafter}: use --drafter dflash --draft-model FOLDER, or --drafter mtp "
                             "on a target with an MTP head")
    if params.draft_model:
        if params.drafter == "mtp" or not is_dflash_folder(resolve_model(params.draft_model, what="draft model").path):
            raise SpecscopeError(f"engine mlx-vlm has no draft-model kind: {params.draft_model} is not a DFlash "
                                 "drafter (mlx-vlm drafts with DFlash, MTP or EAGLE-3)")
        return "dflash"
    if params.drafter == "dflash":
        raise SpecscopeError("engine mlx-vlm's DFlash needs --draft-model FOLDER (a DFlash drafter)")
    if params.mtp_weights:
        raise SpecscopeError("engine mlx-vlm reads a target's MTP head from the target's own folder: --mtp-weights "
                             "is not passed to it")
    if not mtp_status(target.checkpoint)["available"]:
        raise SpecscopeError("engine mlx-vlm needs a drafter it supports: this target has no MTP head; pass "
                             "--drafter dflash --draft-model FOLDER (a DFlash drafter)")
    return "mtp"


class MlxVlmLoop(SpeculativeEngine):
    name = "mlx-vlm"
    refusal: str | None = None  # set below when mlx-vlm is missing: ``Engine.open`` says it before any weights load
    reports = frozenset({"ms"})
    needs_draft_model = False   # its drafter is an MTP head or a DFlash drafter, never a draft model
    demo_kind = None            # --demo: the hybrid demo (the trained one: its MTP head drafts)

    def __init__(self, target, draft, params) -> None:
        super().__init__(target, draft, params)
        self.version = installed_version()
        self.kind = _drafter_kind(target, params)
        from mlx_vlm import load
        from mlx_vlm.speculative.drafters import load_drafter

        self._model, _processor = load(str(target.path))
        ref = str(target.path) if self.kind == "mtp" else str(params.draft_model)
        if self.kind == "dflash":
            from specscope.model_ref import resolve_model

            ref = resolve_model(ref, what="draft model").path
        self._drafter, kind = load_drafter(ref, self.kind)
        if kind != self.kind:
            raise SpecscopeError(f"engine mlx-vlm read {ref} as a {kind} drafter, not {self.kind}")
        if self.kind == "dflash":
            lm = self._model.language_model
            if not _reads_capture_layer_ids(lm):
                raise SpecscopeError(f"engine mlx-vlm cannot verify with DFlash on this target: its language model "
                                     f"({type(lm).__module__}) does not return the hidden states a DFlash drafter "
                                     "reads (no capture_layer_ids); use specscope's own engine or an MTP head")

    def forward_model(self):
        """mlx-vlm's own copy of the target: its loop forwards this language model (``model.language_model``)."""
        return self._model.language_model

    def block_sites(self) -> list[tuple[object, str]]:
        """mlx-vlm verifies through its exact speculative verifier (``_EXACT_SPECULATIVE_VERIFIER`` of the language
        model's module, e.g. ``models/qwen3_5/speculative_verifier.py``), which reads each block's weights instead of
        calling the block: its per-block methods (``_gated_delta``, ``_attention``, ``_feed_forward``; ``_linear`` for
        the output head), each taking the block module first, are where the opened pass times them."""
        import sys

        for cls in type(self._model.language_model).__mro__:
            verifier = getattr(sys.modules.get(cls.__module__), "_EXACT_SPECULATIVE_VERIFIER", None)
            if verifier is not None:
                return [(verifier, m) for m in ("_gated_delta", "_attention", "_feed_forward", "_linear")
                        if callable(getattr(verifier, m, None))]
        return []

    def speculative(self, prompt: list[int], max_tokens: int, sampling) -> Iterator[PrefillRecord | RoundRecord]:
        import mlx.core as mx
        from mlx_vlm.generate.ar import generate_step

        k = self.params.num_draft_tokens
        dm = self._drafter
        opts = ({"temperature": 0.0} if sampling.greedy else
                {"temperature": float(sampling.temp), "top_p": float(sampling.top_p), "top_k": 0,
                 "seed": int(sampling.seed)})
        t0 = now_ms()
        gen = generate_step(mx.array([list(prompt)], dtype=mx.int32), self._model, None, None,
                            max_tokens=max_tokens, draft_model=dm, draft_kind=self.kind, draft_block_size=k + 1,
                            **opts)
        made, index = 0, 0
        rounds = accepted_total = drafted_total = 0.0
        pending: list[int] = []
        expected = drafted = accepted = 0
        t_start = t_end = t0
        for tok, _logprobs in gen:
            now = now_ms()
            if made == 0:
                yield PrefillRecord(event="prefill", n_prompt=len(prompt), token=int(tok), ms=now - t0)
                made = 1
                rounds, accepted_total, drafted_total = _counters(dm)
                t_start = now_ms()
                continue
            r, a, d = _counters(dm)
            if r != rounds:  # a new round: its drafts were proposed and checked before its first token
                if pending:  # a round cut short (never seen here): what it gave, as it gave it
                    yield self._round(index, pending, drafted, accepted, t_end - t_start)
                    index, pending, t_start = index + 1, [], now_ms()
                if r != rounds + 1:
                    raise SpecscopeError(f"engine mlx-vlm ran {r - rounds:g} rounds between two tokens: its rounds "
                                         "cannot be read from its tokens (an mlx-vlm other than "
                                         f"{TESTED_VERSION}?)")
                accepted, drafted = int(round(a - accepted_total)), int(round(d - drafted_total))
                rounds, accepted_total, drafted_total = r, a, d
                expected = min(accepted + 1, max_tokens - made)
            elif not pending and made > 0:
                raise SpecscopeError("engine mlx-vlm yielded a token outside any round it counted")
            pending.append(int(tok))
            made += 1
            t_end = now
            if len(pending) >= expected:
                yield self._round(index, pending, drafted, accepted, t_end - t_start)
                index, pending = index + 1, []
                t_start = now_ms()  # at the resume: the consumer's time is in no round
            if made >= max_tokens:
                break
        if pending:
            yield self._round(index, pending, drafted, accepted, t_end - t_start)

    def _round(self, index: int, tokens: list[int], drafted: int, accepted: int, ms: float) -> RoundRecord:
        kept = min(accepted, len(tokens))
        return RoundRecord(event="round", index=index, drafted=tokens[:kept] + [UNKNOWN_TOKEN] * max(0, drafted - kept),
                           accepted=kept, emitted=list(tokens), draft_ms=None, verify_ms=None, rollback_ms=None, ms=ms,
                           extra={"engine": self.name, "draft_kind": self.kind}, kind="end_to_end")


def _counters(dm) -> tuple[float, float, float]:
    """mlx-vlm's lifetime round counters on its drafter: rounds, drafts accepted, drafts proposed."""
    return (float(getattr(dm, "speculative_total_rounds", 0)), float(getattr(dm, "speculative_total_accepted", 0.0)),
            float(getattr(dm, "speculative_total_drafted", 0)))


def _reads_capture_layer_ids(module) -> bool:
    """Whether mlx-vlm's language model returns the hidden states of the layers a DFlash drafter reads: its call
    takes ``capture_layer_ids`` (by name, or from its keyword arguments: the Qwen3.5 family pops it there)."""
    import inspect

    call = type(module).__call__
    try:
        return "capture_layer_ids" in inspect.signature(call).parameters or "capture_layer_ids" in inspect.getsource(call)
    except (OSError, TypeError):  # no source to read: let mlx-vlm's own check speak
        return True


def installed_version() -> str:
    """The installed mlx-vlm's version: the tested one, or a clear refusal (not installed, or another version)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("mlx-vlm")
    except PackageNotFoundError:
        raise SpecscopeError(f"engine mlx-vlm is not installed: {INSTALL}") from None
    if found != TESTED_VERSION:
        raise SpecscopeError(f"engine mlx-vlm {found} is installed; this adapter was tested with {TESTED_VERSION} "
                             f"only: pip install 'mlx-vlm=={TESTED_VERSION}'")
    return found


def _refusal() -> str | None:
    try:
        installed_version()
    except SpecscopeError as exc:
        return str(exc)
    return None


MlxVlmLoop.refusal = _refusal()
