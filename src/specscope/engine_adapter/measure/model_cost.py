"""Bytes and FLOPs per block for one forward over ``n`` positions, from the loaded model itself.

What an ideal forward must move and compute, per block of ``structure.classify`` (the same blocks
the breakdown times), so a roofline can put a floor under each measured time:

- **weight bytes**: every parameter array a block reads, at its stored size — for a quantized layer
  the packed weights plus scales and biases. A dense block reads all of its parameters once per
  forward whatever ``n`` is (that is what a batched verify buys). An embedding reads only the rows of
  the ``n`` tokens; a tied output head reads the whole embedding (counted under ``output_head``).
- **MoE**: the router and shared experts are read whole; of the routed experts only the *union* the
  ``n`` tokens chose (``distinct_experts`` per layer, recorded from the router during the measured
  forward by ``verify_curve``), each expert at its share of the bank's bytes.
- **other bytes**: attention reads its KV cache over the context (``kv_per_token`` elements per token
  from the layer's own projections: GQA heads, or MLA's latent + rope key; a sliding window reads at
  most its window) and writes ``n`` new positions; a recurrent layer (Gated DeltaNet, Mamba, RG-LRU,
  short conv) reads and writes its state once per forward (its cache arrays, measured from the live
  cache); the output head writes ``n`` rows of logits.
- **FLOPs**: 2 per logical weight element per position for every matmul (quantized weights counted at
  their unpacked size), routed experts ``top_k`` per token, attention ``2·heads·(d_qk + d_v)`` per
  position per context token, a recurrence about ``RECURRENT_FLOPS_PER_STATE`` per state element per
  position. Norms and element-wise work are left out (a floor, not an estimate of the time).

``weight_bytes_total`` sums every parameter once; ``checkpoint_weight_bytes`` counts the checkpoint's
safetensors tensors (MTP tensors excluded, mlx-lm does not load them) independently, from the headers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import mlx.core as mx
import mlx.nn as nn

from specscope.engine_adapter.mlx_types import flat
from specscope.engine_adapter.model.structure import classify, own_params

from .records import BlockCost

RECURRENT_FLOPS_PER_STATE = 6  # decay, k·S, outer-product update, readout: ~6 FLOPs per state element per position
_HEADS = ("n_heads", "num_heads", "num_attention_heads", "n_head")
_KV_HEADS = ("n_kv_heads", "num_key_value_heads", "num_kv_heads")
_QK_DIM = ("q_head_dim", "qk_head_dim", "head_dim")
_V_DIM = ("v_head_dim", "head_dim")


def _int_attr(m, names) -> int | None:
    for a in names:
        v = getattr(m, a, None)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
    return None


def _arrays(mod: nn.Module, own_only: bool = False) -> list[tuple[str, mx.array]]:
    """Every parameter array under ``mod``, or (``own_only``) those it holds itself, not through a child module."""
    if not own_only:
        return [(p, v) for p, v in flat(mod.parameters()) if isinstance(v, mx.array)]
    return list(own_params(mod).items())


def _nbytes(arrays) -> int:
    return int(sum(a.nbytes for _, a in arrays))


def _logical(mod: nn.Module, w: mx.array) -> int:
    """Weight elements as the matmul sees them: a quantized weight unpacked (``size · 32 / bits``)."""
    bits = getattr(mod, "bits", None)
    return int(w.size * 32 // bits) if isinstance(bits, int) and bits > 0 and w.dtype == mx.uint32 else int(w.size)


def _is_conv(m) -> bool:
    return isinstance(m, (nn.Conv1d, nn.Conv2d)) or "conv" in type(m).__name__.lower()


def _is_leaf(m: nn.Module) -> bool:
    return not any(isinstance(c, nn.Module) for _, c in flat(m.children(), is_leaf=nn.Module.is_module))


def _matmul_flops(mod: nn.Module, skip: tuple[str, ...] = ()) -> tuple[float, float]:
    """(dense FLOPs per position, routed-expert FLOPs per position per expert) of every matmul under ``mod``."""
    dense = routed = 0.0
    for path, m in mod.named_modules():
        if path and any(path == s or path.startswith(s + ".") for s in skip):
            continue
        if isinstance(m, (nn.Embedding, nn.QuantizedEmbedding)) or not _is_leaf(m):
            continue
        w = m.get("weight") if isinstance(m, nn.Module) else None
        if not isinstance(w, mx.array) or w.ndim < 2:
            continue
        if w.ndim == 3 and not _is_conv(m):  # a switch leaf: [experts, out, in]
            routed += 2.0 * _logical(m, w) / w.shape[0]
        else:
            dense += 2.0 * _logical(m, w)
    return dense, routed


@dataclass
class BlockFacts:
    path: str
    block_name: str
    layer: int | None
    weight_bytes: int  # every parameter the block holds (own parameters only for a container)
    flops_per_position: float = 0.0  # dense matmuls
    roles: tuple = ()
    # embedding rows (an embedding reads only the tokens' rows; a tied head reads them all)
    rows: int = 0
    # MoE
    experts: int = 0
    top_k: int | None = None
    expert_bytes: float = 0.0  # one routed expert's share of the banks
    expert_flops: float = 0.0  # one routed expert, per position
    shared_bytes: int = 0  # router + shared experts
    # attention
    kv_per_token: int = 0
    window: int | None = None
    score_flops: float = 0.0  # per position per context token
    # recurrent state (read + written once per forward)
    state_bytes: int = 0
    state_elems: int = 0


@dataclass
class ModelCost:
    blocks: list[BlockFacts]
    act_bytes: int  # activation / KV element size
    act_dtype: str
    vocab: int
    kv_bytes: int = 0  # KV element size (from the live cache when given)
    notes: list[str] = field(default_factory=list)

    def forward(self, n: int, context: int, routed: dict[str, list[int]] | None = None,
                states: int = 1) -> dict[str, BlockCost]:  # dict: block name -> its cost
        """Per block: weight bytes, other bytes, FLOPs (and distinct experts) of one forward over ``n``
        positions after ``context`` cached positions. ``routed``: MoE block path -> distinct experts the
        ``n`` tokens chose, per call (from ``verify_curve.recording_routes``); absent blocks get the
        uniform-routing expectation ``E·(1 − (1 − top_k/E)^n)``. ``states``: recurrent states each recurrent layer
        reads and writes (1 for a chain; a tree verify runs every node from its parent's state and keeps each
        node's: ``n``)."""
        out: dict[str, BlockCost] = {}
        kv_item = self.kv_bytes or self.act_bytes

        def add(block, wb=0.0, ob=0.0, fl=0.0):
            c = out.setdefault(block, {"weight_bytes": 0.0, "other_bytes": 0.0, "flops": 0.0, "distinct_experts": None})
            c["weight_bytes"] += wb
            c["other_bytes"] += ob
            c["flops"] += fl

        moe_layers, estimated = [], False
        for b in self.blocks:
            if b.rows:  # an embedding: the n tokens' rows; a tied head reads the whole matrix
                add(b.block_name, wb=b.weight_bytes * min(n, b.rows) / b.rows)
                if "output_head" in b.roles:
                    add("output_head", wb=b.weight_bytes, ob=n * self.vocab * self.act_bytes, fl=n * b.flops_per_position)
                continue
            if b.block_name == "moe" and b.experts:
                rec = (routed or {}).get(b.path)
                if rec:
                    distinct = sum(rec) / len(rec)
                else:
                    k = min(b.top_k or 1, b.experts)
                    distinct = b.experts * (1 - (1 - k / b.experts) ** n)
                    estimated = True
                moe_layers.append((distinct, b))
                add("moe", wb=b.shared_bytes + distinct * b.expert_bytes,
                    fl=n * (b.flops_per_position + min(b.top_k or 1, b.experts) * b.expert_flops))
                continue
            ob = fl = 0.0
            if b.kv_per_token:
                ctx = min(context + n, b.window) if b.window else context + n
                ob += (ctx + n) * b.kv_per_token * kv_item  # read the context (incl. the new keys), write n
                fl += n * ctx * b.score_flops
            if b.state_elems or b.state_bytes:
                ob += 2 * b.state_bytes * max(1, states)
                fl += n * b.state_elems * RECURRENT_FLOPS_PER_STATE
            if b.block_name == "output_head":
                ob += n * self.vocab * self.act_bytes
            add(b.block_name, wb=b.weight_bytes, ob=ob, fl=fl + n * b.flops_per_position)
        for c in out.values():
            c["weight_bytes"] = int(round(c["weight_bytes"]))
            c["other_bytes"] = int(round(c["other_bytes"]))
            c["distinct_experts"] = None
        if moe_layers and "moe" in out:
            ks = [b.top_k for _, b in moe_layers if b.top_k]
            out["moe"].update({
                "distinct_experts": sum(d for d, _ in moe_layers) / len(moe_layers),
                "distinct_experts_per_layer": [round(d, 3) for d, _ in moe_layers],
                "routed_slots": n * max(ks) if ks else None,
                "experts": max(b.experts for _, b in moe_layers),
                "distinct_source": "uniform-routing estimate" if estimated else "recorded",
            })
        return out

    def total_weight_bytes(self) -> int:
        return int(sum(b.weight_bytes for b in self.blocks))


def act_dtype(model) -> mx.Dtype:
    """The activation dtype: the embedding's scales (quantized) or weight dtype; float32 if none is floating."""
    for _, m in model.named_modules():
        if isinstance(m, (nn.Embedding, nn.QuantizedEmbedding)):
            ref = m.get("scales") if "scales" in m else m.get("weight")
            if ref is not None and mx.issubdtype(ref.dtype, mx.floating):
                return ref.dtype
    return mx.float32


def _flat(c) -> list:
    inner = getattr(c, "caches", None)
    return [x for y in inner for x in _flat(y)] if isinstance(inner, (list, tuple)) else [c]


def _layer_caches(model, cache, mixer_layers: list[int]) -> dict[int, list] | None:  # dict: layer index -> its caches
    n_layers = len(model.layers)
    if cache is None:
        return None
    if len(cache) == n_layers:
        return {i: _flat(c) for i, c in enumerate(cache)}
    if len(cache) == len(mixer_layers):  # only mixing layers keep a cache (Nemotron-H)
        return {i: _flat(c) for i, c in zip(mixer_layers, cache)}
    return None


def model_cost(model, cache=None) -> ModelCost:
    """The static facts of every block of ``model``; ``cache``: a filled prompt cache (recurrent state sizes,
    KV dtype). Without one, recurrent layers get their state from a fresh cache after a one-token forward."""
    from mlx_lm.models.cache import ArraysCache, make_prompt_cache

    s = classify(model)
    dt = act_dtype(model)
    vocab = int(getattr(getattr(model, "args", None), "vocab_size", 0) or 0)
    notes = []
    mods = dict(model.named_modules())
    blocks: list[BlockFacts] = []
    for b in s.blocks:
        own = b.block_name == "unclassified"
        arrays = _arrays(b.module, own_only=own)
        f = BlockFacts(b.path, b.block_name, b.layer, _nbytes(arrays), roles=b.roles, kv_per_token=b.kv_per_token, window=b.window)
        m = b.module
        if isinstance(m, (nn.Embedding, nn.QuantizedEmbedding)):
            f.rows = int(m["weight"].shape[0])
            vocab = vocab or f.rows
            f.flops_per_position = 2.0 * _logical(m, m["weight"]) if b.roles else 0.0
        elif own:
            pass
        elif b.block_name == "moe" and b.experts:
            banks = [mods[p] for p in b.expert_banks]
            bank_bytes = sum(_nbytes(_arrays(bm)) for bm in banks)
            f.experts, f.top_k = b.experts, b.top_k
            f.expert_bytes = bank_bytes / b.experts
            f.shared_bytes = f.weight_bytes - bank_bytes
            rel = tuple(p[len(b.path) + 1:] for p in b.expert_banks if p != b.path)
            f.flops_per_position = _matmul_flops(m, skip=rel)[0] if rel else 0.0  # router + shared experts
            # switch banks hold every expert on a leading axis; a list of expert MLPs is one bank per expert
            f.expert_flops = sum(_matmul_flops(bm)[1] + _matmul_flops(bm)[0] / b.experts for bm in banks)
        else:
            f.flops_per_position = _matmul_flops(m)[0]
            if b.block_name == "output_head":
                vocab = vocab or int(m["weight"].shape[0])
        if b.kv_per_token:
            heads, kvh = _int_attr(m, _HEADS), _int_attr(m, _KV_HEADS)
            dqk, dv = _int_attr(m, _QK_DIM), _int_attr(m, _V_DIM)
            if heads and dqk:
                f.score_flops = 2.0 * heads * (dqk + (dv or dqk))
            else:  # from the cached widths, scaled by the query-group size where known
                f.score_flops = 2.0 * b.kv_per_token * ((heads // kvh) if heads and kvh else 1)
        blocks.append(f)

    # Recurrent state sizes from the live cache (or a fresh one after one token).
    rec = [f for f in blocks if f.block_name == "linear_attention" and f.layer is not None]
    if rec:
        if cache is None:
            cache = make_prompt_cache(model)
            mx.eval(model(mx.array([[0]], dtype=mx.uint32), cache=cache))
            notes.append("recurrent state sizes from a one-token forward on a fresh cache")
        mixer = sorted({f.layer for f in blocks if f.layer is not None and f.block_name in ("linear_attention", "full_attention")})
        per_layer = _layer_caches(model, cache, mixer)
        if per_layer is None:
            notes.append("could not match caches to layers: recurrent state bytes left out")
        else:
            seen: set[int] = set()
            for f in rec:
                layer = f.layer
                if layer is None or layer in seen:  # (never None: rec keeps blocks in a layer)
                    continue
                seen.add(layer)
                # mlx-lm's ArraysCache.cache is inferred as list[None] from its constructor; it holds arrays
                states = [a for c in per_layer.get(layer, []) if isinstance(c, ArraysCache)
                          for a in cast(list[Any], c.cache) if isinstance(a, mx.array)]
                f.state_bytes = int(sum(a.nbytes for a in states))
                f.state_elems = int(sum(a.size for a in states))
    kv_item = 0
    if cache is not None:
        for c in (x for y in cache for x in _flat(y)):
            keys = getattr(c, "keys", None)
            if isinstance(keys, mx.array) and mx.issubdtype(keys.dtype, mx.floating):
                kv_item = keys.dtype.size
                break
    return ModelCost(blocks, dt.size, str(dt).split(".")[-1], vocab, kv_item, notes)


def weight_bytes_total(model) -> int:
    """Every parameter of the model, once, at its stored size (independent of ``classify``)."""
    return int(sum(v.nbytes for _, v in flat(model.parameters())))


def checkpoint_weight_bytes(path) -> int:
    """The bytes of the checkpoint's tensors that the model loads (MTP tensors left out), from the
    safetensors headers alone: an independent count to hold the model's accounting against."""
    from specscope.engine_adapter.model.checkpoint import open_checkpoint, read_safetensors_header

    ck = open_checkpoint(path)
    mtp = set(ck.mtp_keys())
    total = 0
    for f in ck.weight_files:
        for name, meta in read_safetensors_header(f).items():
            if name != "__metadata__" and name not in mtp:
                a, b = meta["data_offsets"]
                total += b - a
    return total
