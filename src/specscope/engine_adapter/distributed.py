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
- **Communication** is a category of the breakdown. Barrier ruler: every collective issued by the
  sharded layers (``mx.distributed.all_sum`` / ``all_gather``, as called by mlx-lm's sharded layers,
  ``shard_linear``'s sharded-to-all layers and ``gather_last_axis``) runs between ``mx.eval`` barriers
  and its time goes to ``communication`` and is taken out of the enclosing block's time (the same
  exclusive-time bookkeeping as nested blocks). Barrier-free estimate: the whole graph with every
  collective replaced by a local stand-in of the same shape (identity for all-sum, copies for
  all-gather), by difference. A skipped compute block that holds a collective still issues it (on
  zeros), so the compute categories' skip estimates stay compute only.
- **Per rank**: each rank measures its own decode and verify forwards; the figures reach rank 0 through
  one all-sum of a small float matrix (each rank fills its own row) and are returned as ``per_rank``
  lists beside rank 0's numbers, in the same shape as ``breakdown.measure_breakdown``.
"""

from __future__ import annotations

import socket
import time
import zlib
from typing import Any

import mlx.core as mx

from specscope.errors import SpecscopeError

from .breakdown import RunHooks, at_prompt_end, measure_forward, median, verify_to_decode
from .engine import Engine, EngineParams
from .instrument import Instrumenter
from .structure import Structure, classify, is_linear, out_features, vocab_sizes

COMMUNICATION = "communication"
BACKENDS = ("ring", "jaccl", "mpi", "nccl", "any")

# -- the group ---------------------------------------------------------------------------------------------


def init_group(backend: str = "ring"):
    """``mx.distributed.init`` for ``backend``; a clear error when this process was not launched as a rank."""
    if backend not in BACKENDS:
        raise SpecscopeError(f"unknown distributed backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    try:
        group = mx.distributed.init(strict=backend != "any", backend=backend)
    except Exception as exc:  # no hostfile / rank in the environment, or a backend this build lacks
        raise SpecscopeError(
            f"could not join the MLX distributed group (backend {backend}): {exc}; "
            "distributed runs are started by `specscope run --ranks N` or `--hosts H1,H2` (mlx.launch)"
        ) from None
    return group


def _gather_rows(row: list[float], group) -> list[list[float]]:
    """Every rank's ``row`` (same length on every rank), in rank order, on every rank (one all-sum)."""
    n, r = group.size(), group.rank()
    m = mx.zeros((n, len(row)), dtype=mx.float32)
    if row:
        m[r] = mx.array(row, dtype=mx.float32)
    out = mx.distributed.all_sum(m, group=group)
    mx.eval(out)
    return out.tolist()


def _gather_strings(s: str, group, width: int = 64) -> list[str]:
    b = s.encode("utf-8")[:width]
    rows = _gather_rows([float(x) for x in b] + [0.0] * (width - len(b)), group)
    return [bytes(int(x) for x in row if x).decode("utf-8", "replace") for row in rows]


def sync(group) -> None:
    """A barrier across ranks (one tiny all-sum), outside every timer."""
    mx.eval(mx.distributed.all_sum(mx.zeros((1,)), group=group))


# -- sharding -------------------------------------------------------------------------------------------------


def shard_problems(text_config: dict, n: int, group_size: int | None = None) -> list[str]:
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

    from .checkpoint import open_checkpoint
    from .compat import cheap_report
    from .inspect_model import describe
    from .loader import MEMORY_LIMIT_FRACTION, LoadedModel, model_classes_without_mtp, system_memory_bytes

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


# -- communication as a category ----------------------------------------------------------------------------

class Communication(RunHooks):
    """Communication as a category of the breakdown, for one measured forward (``breakdown.measure_forward``'s
    hooks): inside ``with``, ``mx.distributed.all_sum`` / ``all_gather`` go through wrappers that count the
    collectives (the warm-up forward), time them (the barrier ruler) or stand in for them (the communication
    skipped), and pass them through otherwise. Every forward starts with a barrier across ranks.

    Its ``instrumenter`` times the sharded model's blocks with ``communication`` as an extra category; a
    skipped block that holds a collective still issues it (on its zeros), so the compute categories' skip
    estimates stay compute only."""

    def __init__(self, model, group):
        self.group, self.n = group, group.size()
        self.mode = "pass"
        self.count: dict[str, int] = {}
        self.bytes = 0
        self.wait_ms = self.transfer_ms = 0.0
        self.counted: dict[str, Any] = {}
        self.split: dict[str, list[float]] = {"wait_ms": [], "transfer_ms": []}
        self._original = {"all_sum": mx.distributed.all_sum, "all_gather": mx.distributed.all_gather}
        structure = sharded_structure(model, self.n)
        self._communicating = {id(b.module) for b in structure.blocks if _communicates(b.module)}
        self.instrumenter = Instrumenter(structure, extra_categories=(COMMUNICATION,), on_skip=self._keep_collective)

    def __enter__(self) -> Communication:
        mx.distributed.all_sum, mx.distributed.all_gather = self._collective("all_sum"), self._collective("all_gather")
        return self

    def __exit__(self, *exc: object) -> None:
        mx.distributed.all_sum, mx.distributed.all_gather = self._original["all_sum"], self._original["all_gather"]
        self.mode = "pass"

    # -- around each forward (RunHooks) ---------------------------------------------------------------------
    def before(self, phase: str, skip: str | None) -> None:
        sync(self.group)  # every rank starts the forward together: skew from the previous run stays out of this one
        mode = {"warm": "count", "time": "time"}.get(phase, "pass")
        if phase == "skip" and skip == COMMUNICATION:
            mode = "skip"
        self.mode, self.wait_ms, self.transfer_ms = mode, 0.0, 0.0

    def after(self, phase: str) -> None:
        self.mode = "pass"
        if phase == "warm":  # the collectives of one forward
            self.counted = {"calls": dict(self.count), "bytes": self.bytes}
        elif phase == "time":
            self.split["wait_ms"].append(self.wait_ms)
            self.split["transfer_ms"].append(self.transfer_ms)

    def figures(self) -> dict[str, Any]:
        # the barrier ruler's communication, split: waiting for the slowest rank vs the collective itself
        return {"collectives": self.counted, "communication_split": {k: median(v) for k, v in self.split.items()}}

    # -- the collectives -----------------------------------------------------------------------------------
    def _keep_collective(self, module, cat: str, out: mx.array) -> mx.array:
        if id(module) in self._communicating and cat != "output_head":
            out = mx.distributed.all_sum(out, group=self.group)
        return out

    def _collective(self, name: str):
        fn = self._original[name]
        all_sum = self._original["all_sum"]

        def wrapper(x, *args, **kwargs):
            mode = self.mode
            if mode == "count":
                self.count[name] = self.count.get(name, 0) + 1
                self.bytes += _nbytes(x) * (self.n - 1 if name == "all_gather" else 1)
                return fn(x, *args, **kwargs)
            if mode == "skip":  # a local stand-in of the same shape: no communication, same downstream work
                if name == "all_sum":
                    return x
                return mx.concatenate([x] * self.n, axis=0) if self.n > 1 else x
            if mode == "time":
                inst = self.instrumenter
                mx.eval(x)  # barrier: the local compute that feeds the collective is done before the clock starts
                inst.open_span()
                t0 = time.perf_counter()
                # a one-element all-sum first: the time spent waiting for the slowest rank to get here (plus one
                # small-message latency), then the collective itself (the transfer)
                mx.eval(all_sum(mx.zeros((1,)), group=self.group))
                t1 = time.perf_counter()
                out = fn(x, *args, **kwargs)
                mx.eval(out)
                t2 = time.perf_counter()
                # exclusive time: the enclosing block (attention, MoE, …) loses what the collective took
                inst.close_span(COMMUNICATION, (t2 - t0) * 1000.0)
                self.wait_ms += (t1 - t0) * 1000.0
                self.transfer_ms += (t2 - t1) * 1000.0
                return out
            return fn(x, *args, **kwargs)

        wrapper.__name__ = name
        return wrapper


def _nbytes(x) -> int:
    return int(x.size) * x.dtype.size


def _communicates(module) -> bool:
    """Does this block issue a collective of its output's shape (mlx-lm's sharded layers)?"""
    from mlx.nn.layers import distributed as nd

    sharded_to_all = tuple(c for c in (getattr(nd, "ShardedToAllLinear", None), getattr(nd, "QuantizedShardedToAllLinear", None)) if c)
    for _, m in [("", module)] + list(module.named_modules()):
        if getattr(m, "sharding_group", None) is not None or isinstance(m, sharded_to_all):
            return True
    return False


def sharded_structure(model, n: int) -> Structure:
    """``structure.classify`` for a sharded model: a head sharded over the vocabulary (``vocab / n`` outputs per
    rank) is still the output head, not an unclassified linear and not a tied embedding."""
    st = classify(model)
    vocab = vocab_sizes(model)
    fixed = False
    for b in st.blocks:
        if (b.category == "unclassified" and b.layer is None and is_linear(b.module)
                and out_features(b.module) * n in vocab):
            b.category, b.kind, fixed = "output_head", f"output head (vocabulary sharded over {n} ranks)", True
    if fixed and st.tied_head:
        st.tied_head = False
        for b in st.blocks:
            if "output_head" in b.roles:
                b.roles, b.kind = (), "embedding"
    return st


def measure_forward_distributed(model, cache, snapshot, tokens: list[int], reps: int, group, skip: bool = True) -> dict:
    """``breakdown.measure_forward`` for a sharded model, with a ``communication`` category; this rank's figures."""
    with Communication(model, group) as comm:
        return measure_forward(model, cache, snapshot, tokens, reps, skip, instrumenter=comm.instrumenter, hooks=comm)


_PER_RANK_SCALARS = ("whole_ms", "instrumented_ms", "block_sum_ms", "inter_block_ms", "barrier_distortion")
_SPLIT = ("wait_ms", "transfer_ms")


def _with_per_rank(fwd: dict, group) -> dict:
    """Add ``per_rank`` (every rank's figures, rank order) to this rank's forward dict (one all-sum)."""
    cats, skips = list(fwd["blocks"]), list(fwd["skip_estimates"])
    row = [fwd[k] for k in _PER_RANK_SCALARS] + [fwd["communication_split"][k] for k in _SPLIT]
    row += [fwd["blocks"][c] for c in cats] + [fwd["skip_estimates"][c] for c in skips]
    rows = _gather_rows(row, group)
    per = {k: [r[i] for r in rows] for i, k in enumerate(_PER_RANK_SCALARS)}
    o = len(_PER_RANK_SCALARS)
    per["communication_split"] = {k: [r[o + i] for r in rows] for i, k in enumerate(_SPLIT)}
    o += len(_SPLIT)
    per["blocks"] = {c: [r[o + i] for r in rows] for i, c in enumerate(cats)}
    o += len(cats)
    per["skip_estimates"] = {c: [r[o + i] for r in rows] for i, c in enumerate(skips)}
    return {**fwd, "per_rank": per}


def measure_breakdown_distributed(model, prompt: list[int], continuation: list[int], k: int, group, reps: int = 3,
                                  skip: bool = True, backend: str = "ring", hosts: list[str] | None = None) -> dict:
    """Decode (1 position) and verify (k+1 positions) breakdowns of the sharded model, communication included,
    in ``breakdown.measure_breakdown``'s shape plus ``per_rank`` lists and a ``distributed`` record."""
    cache, cp, toks = at_prompt_end(model, prompt, continuation, k)
    decode = _with_per_rank(measure_forward_distributed(model, cache, cp, toks[:1], reps, group, skip), group)
    verify = _with_per_rank(measure_forward_distributed(model, cache, cp, toks, reps, group, skip), group)
    ratios = verify_to_decode(decode, verify)
    labels = sharded_structure(model, group.size()).labels()
    calls = decode["collectives"]["calls"]
    what = " + ".join(f"{v} {k.replace('_', '-')}{'s' if v != 1 else ''}" for k, v in sorted(calls.items()))
    labels[COMMUNICATION] = f"Communication ({backend}, {group.size()} ranks)"  # short: a table row's label
    return {
        "decode": decode,
        "verify": verify,
        "ratios": ratios,
        "labels": labels,
        "distributed": {"ranks": group.size(), "backend": backend, "hosts": hosts or [],
                        "rank_of_figures": group.rank(), "parallelism": "tensor",
                        "collectives_per_forward": what or "no collectives",
                        "bytes_per_forward": {"decode": decode["collectives"]["bytes"],
                                              "verify": verify["collectives"]["bytes"]}},
    }


# -- the engine ----------------------------------------------------------------------------------------------


class RanksDisagree(SpecscopeError):
    pass


class DistributedEngine(Engine):
    """``Engine`` with the target sharded over an MLX distributed group; same methods, same records."""

    def __init__(self, params: EngineParams, target, draft, drafter_name: str, compat: dict, group, backend: str,
                 description: dict, hosts: list[str]):
        super().__init__(params, target, draft, drafter_name, compat)
        self.group, self.backend, self.hosts = group, backend, hosts
        self.rank, self.size = group.rank(), group.size()
        self._description = description

    @classmethod
    def open(cls, params: EngineParams, status=lambda message: None, backend: str = "ring", group=None) -> "DistributedEngine":
        from specscope.model_ref import resolve_model

        from .compat import REFUSED
        from .demo_model import default_demo_path
        from .inspect_model import mtp_status
        from .loader import check_same_vocabulary, load_model

        group = group or init_group(backend)
        n = group.size()
        status(f"joined the distributed group: rank {group.rank()} of {n} ({backend})")
        if params.demo:
            status("building/loading the demo model")
            path, label = str(default_demo_path("hybrid")), "the demo model"
        else:
            ref = resolve_model(params.model)
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
            draft = load_model(params.draft_model or str(default_demo_path("draft")), allow_oversize=params.allow_oversize)
            check_same_vocabulary(target, draft)
        hosts = _gather_strings(socket.gethostname(), group)
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
    def distributed_facts(self) -> dict:
        return {"ranks": self.size, "backend": self.backend, "hosts": self.hosts, "parallelism": "tensor",
                "drafting": "replicated on every rank"}

    def describe(self) -> dict:
        return {**self._description, "distributed": self.distributed_facts()}

    def run_facts(self, max_tokens: int) -> dict:
        return {**super().run_facts(max_tokens), "distributed": self.distributed_facts()}

    # -- the measured phases -------------------------------------------------------------------------------
    def _agree(self, what: str, tokens: list[int]) -> None:
        """Every rank decoded the same tokens (after the timed part; one small all-sum)."""
        if self.size == 1:
            return
        data = ",".join(map(str, tokens)).encode()
        crc = zlib.crc32(data)
        rows = _gather_rows([float(len(tokens)), float(crc & 0xFFFF), float(crc >> 16)], self.group)
        bad = [r for r, row in enumerate(rows) if row != rows[0]]
        if bad:
            raise RanksDisagree(
                f"{what}: rank{'s' if len(bad) > 1 else ''} {', '.join(map(str, bad))} decoded different tokens from rank 0 "
                "(replicated drafting needs bit-identical kernels on every rank: mixed chips or MLX versions?)"
            )

    def _checked(self, what: str, records):
        toks = []
        for rec in records:
            toks.extend(rec.emitted if rec.type == "round" else [rec.token])
            yield rec
        self._agree(what, toks)

    def plain(self, prompt: list[int], max_tokens: int):
        return self._checked("plain decoding", super().plain(prompt, max_tokens))

    def speculative(self, prompt: list[int], plain_tokens: list[int], max_tokens: int, round_kinds: str | None = None):
        return self._checked("speculative decoding", super().speculative(prompt, plain_tokens, max_tokens, round_kinds))

    def breakdown(self, prompt: list[int], continuation: list[int], reps: int) -> dict:
        return measure_breakdown_distributed(self.target.model, prompt, continuation, self.params.num_draft_tokens,
                                             self.group, reps=reps, backend=self.backend, hosts=self.hosts)

    def probe(self) -> dict:
        """The clock probe on every rank; the slowest rank's reading (the same on every rank, so decisions taken
        on it - cooldown - are the same everywhere and the ranks stay in lockstep)."""
        r = super().probe()
        rows = _gather_rows([float(r["ms"])], self.group)
        return {**r, "ms": max(row[0] for row in rows), "per_rank_ms": [row[0] for row in rows]}

    def peak_memory(self) -> int:  # the largest rank's peak (a rank that runs out of memory ends the run)
        rows = _gather_rows([float(mx.get_peak_memory())], self.group)
        return int(max(r[0] for r in rows))
