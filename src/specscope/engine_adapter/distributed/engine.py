"""The engine sharded across ranks with MLX distributed (tensor parallelism by mlx-lm's own ``model.shard``).

Every rank opens the same ``DistributedEngine`` and is driven by the same protocol, in lockstep, on the
same prompts: the sharded forwards' collectives (an all-reduce per sharded layer, an all-gather of the
vocabulary slices at the head) line up because every rank runs the same forwards in the same order.

- **Loading**: the target is loaded lazily by mlx-lm's loader, sharded (``model.shard(group)``) and only
  then materialised, so each rank reads and keeps only its slice. The model's description and the
  rollback check are taken before sharding (a sharded model's shapes are per-rank).
- **Drafting is replicated**: every rank runs the drafter itself, on identical inputs (the residual
  stream after each all-reduce and the gathered logits are bit-identical on every rank), so every rank
  knows the drafts without a broadcast. A broadcast from rank 0 would put one more collective on the
  critical path of every round - a latency of the very kind this profiler measures - and charge it to
  T_draft. The MTP head is small and replicated (never sharded); its logits go through the trunk's
  sharded head plus the same all-gather the trunk uses. Because replication relies on identical kernels
  on every rank, each decoding run ends with a cross-rank check of the tokens (one small all-sum, after
  the timed part): ranks that disagree stop the run with a clear error instead of a silent desync.
- **Communication** is a block of the breakdown, and each rank's figures are gathered
  (``distributed_breakdown``).
"""

from __future__ import annotations

import socket
import zlib
from typing import TypedDict

import mlx.core as mx

from specscope.engine_adapter.model.config_json import TextConfig
from specscope.errors import SpecscopeError

from specscope.engine_adapter.distributed.breakdown import DistributedBreakdown, measure_breakdown_distributed
from specscope.engine_adapter.engine import Engine, EngineParams, RunFacts
from specscope.engine_adapter.measure.records import ClockReading
from specscope.engine_adapter.model.records import ModelDescription
from specscope.engine_adapter.distributed.ranks import gather_rows, gather_strings, init_group


class DistributedFacts(TypedDict):
    """How the run was spread over the ranks (the session's config and the model's description carry it)."""
    ranks: int
    backend: str
    hosts: list[str]
    parallelism: str
    drafting: str


class DistributedRunFacts(RunFacts):
    distributed: DistributedFacts


class DistributedModelDescription(ModelDescription):
    """The model's description (``inspect_model.describe``, taken before sharding) and how the run was spread."""
    distributed: DistributedFacts


class RankedClockReading(ClockReading):
    """The slowest rank's reading, and every rank's (rank order)."""
    per_rank_ms: list[float]


# -- sharding -------------------------------------------------------------------------------------------------


def shard_problems(text_config: TextConfig, n: int, group_size: int | None = None) -> list[str]:
    """Why mlx-lm's tensor-parallel ``shard`` cannot split this model ``n`` ways (empty: it can).

    Checks what Qwen3.5 / Qwen3-Next style sharding splits: the vocabulary (untied head), attention and
    KV heads, linear-attention heads, the MLP / expert widths, and, for a quantized model, that every
    sharded-to-all projection's input slice is a whole number of quantization groups.
    """
    if n <= 1:
        return []
    t, out = text_config, []

    def need(name: str, value, what: str, q_in: bool = False):
        if not isinstance(value, int) or value <= 0:
            return
        if value % n:
            out.append(f"{what} ({name} = {value}) is not divisible by {n}")
        elif q_in and group_size and (value // n) % group_size:
            out.append(f"{what} ({name} = {value}) split {n} ways is {value // n} columns, not a multiple of the "
                       f"quantization group size {group_size}")

    if not t.get("tie_word_embeddings", False):
        need("vocab_size", t.get("vocab_size"), "the vocabulary")
    heads, kv, hd = t.get("num_attention_heads"), t.get("num_key_value_heads"), t.get("head_dim")
    if isinstance(hd, int) and isinstance(heads, int):
        need("num_attention_heads × head_dim", heads * hd, "the attention output projection's input", q_in=True)
    need("num_attention_heads", heads, "the attention heads")
    if isinstance(kv, int) and kv > 0 and (kv % n if n <= kv else n % kv):
        out.append(f"the KV heads (num_key_value_heads = {kv}) can be neither split nor repeated evenly over {n} ranks")
    need("linear_num_key_heads", t.get("linear_num_key_heads"), "the linear-attention key heads")
    vh, vd = t.get("linear_num_value_heads"), t.get("linear_value_head_dim")
    need("linear_num_value_heads", vh, "the linear-attention value heads")
    if isinstance(vh, int) and isinstance(vd, int):
        need("linear value dim", vh * vd, "the linear-attention output projection's input", q_in=True)
    if t.get("num_experts"):
        need("moe_intermediate_size", t.get("moe_intermediate_size"), "the expert width", q_in=True)
        need("shared_expert_intermediate_size", t.get("shared_expert_intermediate_size"), "the shared expert width", q_in=True)
    else:
        need("intermediate_size", t.get("intermediate_size"), "the MLP width", q_in=True)
    return out


def load_sharded(path, group, allow_oversize: bool = False):
    """(LoadedModel with the target sharded over ``group``, its description and compatibility taken before
    sharding). Weights are loaded lazily and materialised after sharding: each rank keeps its slice only."""
    from mlx_lm.utils import load_model as mlx_load_model
    from mlx_lm.utils import load_tokenizer

    from specscope.engine_adapter.model.checkpoint import open_checkpoint
    from specscope.engine_adapter.measure.doctor import cheap_report
    from specscope.engine_adapter.model.inspect_model import describe
    from specscope.engine_adapter.model.loader import (
        MEMORY_LIMIT_FRACTION,
        LoadedModel,
        model_classes_without_mtp,
        system_memory_bytes,
    )

    n = group.size()
    ck = open_checkpoint(path)
    total = system_memory_bytes()
    if total and not allow_oversize and ck.file_bytes / n > MEMORY_LIMIT_FRACTION * total:
        raise SpecscopeError(
            f"{ck.path.name} needs about {ck.file_bytes / n / 2**30:.1f} GiB per rank for weights alone (split {n} ways) "
            f"but this machine has {total / 2**30:.1f} GiB; pass --allow-oversize to try anyway"
        )
    try:
        model, config = mlx_load_model(ck.path, lazy=True, trust_remote_code=False, get_model_classes=model_classes_without_mtp)
    except Exception as exc:
        raise SpecscopeError(f"could not load weights from {ck.path}: {type(exc).__name__}: {exc}") from None
    try:
        tokenizer = load_tokenizer(ck.path, eos_token_ids=config.get("eos_token_id"))
    except Exception as exc:
        raise SpecscopeError(f"could not load the tokenizer in {ck.path}: {type(exc).__name__}: {exc}") from None
    target = LoadedModel(checkpoint=ck, model=model, tokenizer=tokenizer, config=config)
    description = describe(target)
    compat = cheap_report(model)
    if n > 1:
        if not hasattr(model, "shard"):
            raise SpecscopeError(
                f"mlx-lm has no tensor-parallel sharding for {ck.model_type} (its Model has no shard()); "
                "distributed runs need a family mlx-lm shards (qwen3_5, qwen3_next, qwen3_moe, llama, deepseek_v3, …)"
            )
        q = config.get("quantization") or {}
        problems = shard_problems(ck.text_config, n, q.get("group_size") if isinstance(q, dict) else None)
        if problems:
            raise SpecscopeError(f"{ck.path.name} cannot be sharded over {n} ranks: " + "; ".join(problems))
        try:
            model.shard(group)
        except Exception as exc:  # mlx-lm asserts (e.g. the vocabulary) or a split that does not divide
            raise SpecscopeError(f"mlx-lm could not shard {ck.path.name} over {n} ranks: {type(exc).__name__}: {exc}") from None
    model.eval()
    mx.eval(model.parameters())
    return target, description, compat

# -- the engine ----------------------------------------------------------------------------------------------


class RanksDisagree(SpecscopeError):
    pass


class DistributedEngine(Engine):
    """``Engine`` with the target sharded over an MLX distributed group; same methods, same records."""

    def __init__(self, params: EngineParams, target, draft, drafter_name: str, compat: dict, group, backend: str,
                 description: ModelDescription, hosts: list[str]):
        super().__init__(params, target, draft, drafter_name, compat)
        self.group, self.backend, self.hosts = group, backend, hosts
        self.rank, self.size = group.rank(), group.size()
        self._description = description

    @classmethod
    def open(cls, params: EngineParams, status=lambda message: None, backend: str = "ring", group=None) -> "DistributedEngine":
        from specscope.model_ref import resolve_model

        from specscope.engine_adapter.measure.doctor import REFUSED
        from specscope.engine_adapter.model.demo_model import default_demo_path
        from specscope.engine_adapter.model.inspect_model import mtp_status
        from specscope.engine_adapter.model.loader import check_same_vocabulary, load_model

        group = group or init_group(backend)
        n = group.size()
        status(f"joined the distributed group: rank {group.rank()} of {n} ({backend})")
        if params.demo:
            status("building/loading the demo model")
            path, label = str(default_demo_path("hybrid", params.demo_variant)), "the demo model"
        else:
            ref = resolve_model(str(params.model))  # as resolve_model reads it
            path, label = ref.path, ref.label
        if params.mtp_weights:
            from pathlib import Path

            if not Path(params.mtp_weights).expanduser().is_dir():
                params.mtp_weights = resolve_model(params.mtp_weights, what="MTP weights").path
        status(f"loading {label}, sharded over {n} ranks")
        target, description, compat = load_sharded(path, group, allow_oversize=params.allow_oversize)
        if compat["class"] == REFUSED:
            raise SpecscopeError(f"{compat['reasons'][0]} (see `specscope check`)")
        name = params.drafter
        if name == "auto":
            name = "draft" if params.draft_model else ("mtp" if mtp_status(target.checkpoint)["available"] else "ngram")
        draft = None
        if name == "draft":  # replicated: every rank runs the whole draft model
            draft = load_model(params.draft_model or str(default_demo_path("draft", params.demo_variant)), allow_oversize=params.allow_oversize)
            check_same_vocabulary(target, draft)
        hosts = gather_strings(socket.gethostname(), group)
        return cls(params, target, draft, name, compat, group, backend, description, hosts)

    # -- drafting: replicated on every rank -----------------------------------------------------------------
    def make_drafter(self, plain_tokens: list[int] | None = None):
        drafter = super().make_drafter(plain_tokens)
        lm = getattr(self.target.model, "language_model", self.target.model)
        if self.drafter_name == "mtp" and getattr(lm, "sharding_group", None) is not None:
            from mlx_lm.models.base import gather_last_axis

            head, group = drafter.lm_head, lm.sharding_group
            # the trunk's head is sharded over the vocabulary: the MTP head's logits need the same all-gather
            drafter.lm_head = lambda x: gather_last_axis(head(x), group)
        return drafter

    # -- what a session records ----------------------------------------------------------------------------
    def distributed_facts(self) -> DistributedFacts:
        return {"ranks": self.size, "backend": self.backend, "hosts": self.hosts, "parallelism": "tensor",
                "drafting": "replicated on every rank"}

    def describe(self) -> DistributedModelDescription:
        """``inspect_model.describe``'s record (taken before sharding), passed through whole, and the ranks."""
        return {**self._description, "distributed": self.distributed_facts()}

    def run_facts(self, max_tokens: int) -> DistributedRunFacts:
        return {**super().run_facts(max_tokens), "distributed": self.distributed_facts()}

    # -- the measured phases -------------------------------------------------------------------------------
    def _agree(self, what: str, tokens: list[int]) -> None:
        """Every rank decoded the same tokens (after the timed part; one small all-sum)."""
        if self.size == 1:
            return
        data = ",".join(map(str, tokens)).encode()
        crc = zlib.crc32(data)
        rows = gather_rows([float(len(tokens)), float(crc & 0xFFFF), float(crc >> 16)], self.group)
        bad = [r for r, row in enumerate(rows) if row != rows[0]]
        if bad:
            raise RanksDisagree(
                f"{what}: rank{'s' if len(bad) > 1 else ''} {', '.join(map(str, bad))} decoded different tokens from rank 0 "
                "(replicated drafting needs bit-identical kernels on every rank: mixed chips or MLX versions?)"
            )

    def _checked(self, what: str, records):
        toks: list[int] = []
        for rec in records:
            toks.extend(rec["emitted"] if rec["event"] == "round" else [rec["token"]])
            yield rec
        self._agree(what, toks)

    def plain(self, prompt: list[int], max_tokens: int):
        return self._checked("plain decoding", super().plain(prompt, max_tokens))

    def speculative(self, prompt: list[int], plain_tokens: list[int], max_tokens: int, round_kinds: str | None = None):
        return self._checked("speculative decoding", super().speculative(prompt, plain_tokens, max_tokens, round_kinds))

    def breakdown(self, prompt: list[int], continuation: list[int], reps: int) -> DistributedBreakdown:
        return measure_breakdown_distributed(self.target.model, prompt, continuation, self.params.num_draft_tokens,
                                             self.group, reps=reps, backend=self.backend, hosts=self.hosts)

    def probe(self) -> RankedClockReading:
        """The clock probe on every rank; the slowest rank's reading (the same on every rank, so decisions taken
        on it - cooldown - are the same everywhere and the ranks stay in lockstep)."""
        r = super().probe()
        rows = gather_rows([float(r["ms"])], self.group)
        return {**r, "ms": max(row[0] for row in rows), "per_rank_ms": [row[0] for row in rows]}

    def peak_memory(self) -> int:  # the largest rank's peak (a rank that runs out of memory ends the run)
        rows = gather_rows([float(mx.get_peak_memory())], self.group)
        return int(max(r[0] for r in rows))
