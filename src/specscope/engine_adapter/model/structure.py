"""Model structure: what each block of a model is (its block name, e.g. ``moe``, and sub-kind), from each module's own
parameters, children and attributes, never from the name a model gives a layer's child. ``classify`` returns
a ``blocks.Structure``.

Every block gets one block name:

- ``linear_attention``: recurrent mixers. An SSM / delta-rule state (an ``A_log``
  parameter: Mamba, Mamba2, Gated DeltaNet, Kimi delta attention), an RG-LRU (a
  ``recurrent_param``), a depthwise convolution with no attention projections
  (ShortConv), or attention-shaped projections whose layer keeps no KV cache
  (decay-based linear attention, e.g. Bailing's lightning attention);
- ``full_attention``: query/key/value projections (separate, fused, or MLA's
  low-rank ``kv_lora_rank`` compression) whose layer keeps a KV cache; the sub-kind
  records MLA and sliding windows (the window from the layer's rotating cache);
- ``moe``: a module with an expert bank among its children (switch layers with a
  leading expert axis, or a list of identical expert MLPs), timed whole: router,
  routed experts and shared experts. A dense MLP beside an MoE in the same layer
  (Granite's ``shared_mlp``) is that layer's shared expert and joins ``moe``;
- ``dense_mlp``: a module made only of linear projections (and norms), in a layer
  with no MoE. Dense first layers of DeepSeek / GLM / Kimi are therefore not
  called MoE. It is its own block (not a relabelled ``moe``) because dense and
  routed FFNs scale differently from decode to verify: in a mixed model one row
  would average the two;
- ``output_head``: a linear map outside the layers onto the vocabulary, or the
  embedding's ``as_linear`` when the head is tied;
- ``other``: embeddings and every norm;
- ``unclassified``: anything with parameters that none of the above fits, timed
  as its own row rather than dropped into the inter-block overhead. A container
  with its own parameters (a layer with a learned scalar) is timed as well, by
  exclusive time (its wall minus the blocks inside it), so no parameter is
  ever outside a timed block.
"""

from __future__ import annotations

import inspect

import mlx.core as mx
import mlx.nn as nn

from specscope.engine_adapter.model.blocks import Block, Structure
from specscope.engine_adapter.mlx_types import flat

_TOPK_ATTRS = ("top_k", "num_experts_per_tok", "num_experts_per_token", "n_activated_experts", "moe_topk")
_Q = {"q_proj", "wq", "query", "q_a_proj", "q_b_proj"}
_K = {"k_proj", "wk", "key"}
_V = {"v_proj", "wv", "value"}
_FUSED_QKV = ("qkv", "query_key_value", "c_attn")
_KV_HEADS = ("n_kv_heads", "num_key_value_heads", "num_kv_heads", "k_num_heads")
_HEAD_DIM = ("head_dim", "qk_dim", "hidden_size_per_head")


def own_params(mod: nn.Module) -> dict[str, mx.array]:  # dict: parameter name -> array
    """Parameters held by ``mod`` itself, not by a child module."""
    out = {}

    def visit(prefix, v):
        if isinstance(v, mx.array):
            out[prefix] = v
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                visit(f"{prefix}.{i}", x)
        elif isinstance(v, dict) and not isinstance(v, nn.Module):
            for k, x in v.items():
                visit(f"{prefix}.{k}", x)

    for k, v in mod.items():
        if not k.startswith("_") and not isinstance(v, nn.Module):
            visit(k, v)
    return out


def _kids(mod: nn.Module) -> list[tuple[str, nn.Module]]:
    """Direct child modules, list elements as ``name.i``."""
    return [(p, m) for p, m in flat(mod.children(), is_leaf=nn.Module.is_module) if isinstance(m, nn.Module)]


def _has_params(mod: nn.Module) -> bool:
    return bool(flat(mod.parameters()))


def _is_conv(m) -> bool:
    return isinstance(m, (nn.Conv1d, nn.Conv2d)) or "conv" in type(m).__name__.lower()


def is_linear(m) -> bool:
    """A linear projection (plain or quantized): a leaf with a 2-D weight."""
    w = m.get("weight") if isinstance(m, nn.Module) else None
    return (isinstance(w, mx.array) and w.ndim == 2 and not _kids(m) and not _is_conv(m)
            and not isinstance(m, (nn.Embedding, nn.QuantizedEmbedding)))


def out_features(m) -> int:
    """Output width of a linear projection (rows of its weight)."""
    return int(m["weight"].shape[0])


def _is_norm(m) -> bool:
    if _kids(m):
        return False
    own = own_params(m)
    if not own or any(v.ndim > 1 for v in own.values()):
        return False
    return isinstance(m, (nn.RMSNorm, nn.LayerNorm, nn.GroupNorm)) or "norm" in type(m).__name__.lower()


def takes_indices(cls) -> bool:
    """Is ``cls`` called with the chosen experts' ``indices`` (a routed-expert layer: SwitchLinear and kin)?"""
    try:
        return "indices" in inspect.signature(cls.__call__).parameters
    except (TypeError, ValueError):
        return False


def _is_switch_leaf(m) -> bool:
    """Routed expert weights: a leaf with a leading expert axis, called with the chosen experts' indices
    (SwitchLinear and its quantized form; not MLA's per-head MultiLinear, also 3-D)."""
    w = m.get("weight") if isinstance(m, nn.Module) else None
    return (isinstance(w, mx.array) and w.ndim == 3 and not _kids(m) and not _is_conv(m)
            and takes_indices(type(m)))


def _is_mlp(m) -> bool:
    """Only linear projections (and norms) as children, at least two, no attention projections."""
    if own_params(m):
        return False
    kids = [(n, k) for n, k in _kids(m) if _has_params(k)]
    lin = [n for n, k in kids if is_linear(k)]
    if len(lin) < 2 or any(not (is_linear(k) or _is_norm(k)) for _, k in kids):
        return False
    return not _attention_shaped(m)


def _expert_bank(m) -> tuple[int, list[str]] | None:
    """(experts, relative paths of the expert weights) if ``m`` is (or directly holds) routed experts."""
    if _is_switch_leaf(m):
        return int(m["weight"].shape[0]), [""]
    kids = _kids(m)
    leaves = [(n, k) for n, k in kids if _is_switch_leaf(k)]
    if leaves:
        return int(leaves[0][1]["weight"].shape[0]), [""]
    return None


def _moe_parts(mod) -> tuple[int, list[str], bool] | None:
    """(experts, expert-bank paths relative to ``mod``, has shared expert) if ``mod`` is an MoE block."""
    experts, banks, others = 0, [], []
    lists: dict[str, list] = {}
    for name, kid in _kids(mod):
        if not _has_params(kid):
            continue
        bank = _expert_bank(kid)
        if bank:
            experts = max(experts, bank[0])
            banks.append(name)
            continue
        head, _, idx = name.rpartition(".")
        if head and idx.isdigit():
            lists.setdefault(head, []).append((name, kid))
        else:
            others.append((name, kid))
    # Experts as a list of identical MLPs, picked by a router with one output per expert.
    for head, items in lists.items():
        if len(items) >= 2 and len({type(k) for _, k in items}) == 1 and _is_mlp(items[0][1]):
            n = len(items)
            routed = any((is_linear(k) and out_features(k) == n) or any(is_linear(g) and out_features(g) == n for _, g in _kids(k))
                         for _, k in others)
            if routed:
                experts = max(experts, n)
                banks += [name for name, _ in items]
                continue
        others += items
    if not banks:
        return None
    shared = any(_is_mlp(k) for _, k in others)
    return experts, banks, shared


def _top_k(mod) -> int | None:
    for _, m in [("", mod)] + list(mod.named_modules()):
        for src in (m, getattr(m, "args", None), getattr(m, "config", None)):
            if src is None:
                continue
            for a in _TOPK_ATTRS:
                v = src.get(a) if isinstance(src, dict) and not isinstance(src, nn.Module) else getattr(src, a, None)
                if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                    return v
    return None


def _attention_shaped(m) -> bool:
    """Query/key/value projections (separate or fused) or MLA's compressed KV, as direct children."""
    names = {n.lower() for n, k in _kids(m) if is_linear(k) or _kids(k)}
    if isinstance(getattr(m, "kv_lora_rank", None), int) or "kv_a_proj_with_mqa" in names:
        return True
    if names & _Q and names & _K and names & _V:
        return True
    return any(f in n for n in names for f in _FUSED_QKV)


def _recurrent_kind(m) -> str | None:
    own = own_params(m)
    deep = set(own) | {p for _, k in _kids(m) for p in own_params(k)}
    if "recurrent_param" in deep:
        return "RG-LRU"
    if "A_log" in own or "A_log" in deep:
        if "D" in own or "D" in deep:
            return "Mamba2 SSM" if "dt_bias" in deep else "Mamba SSM"
        return "delta rule"
    return None


def _kv_per_token(m) -> int:
    """Elements the KV cache keeps per token for this attention module."""
    rank = getattr(m, "kv_lora_rank", None)
    if isinstance(rank, int):
        rope = getattr(m, "qk_rope_head_dim", None) or 0
        return rank + int(rope)  # MLA caches the compressed latent and the shared rope key
    kids = dict(_kids(m))
    k, v = kids.get("k_proj") or kids.get("wk"), kids.get("v_proj") or kids.get("wv")
    if k is not None and v is not None and is_linear(k) and is_linear(v):
        return out_features(k) + out_features(v)
    n_kv = next((getattr(m, a) for a in _KV_HEADS if isinstance(getattr(m, a, None), int)), None)
    hd = next((getattr(m, a) for a in _HEAD_DIM if isinstance(getattr(m, a, None), int)), None)
    if n_kv and hd:
        v_heads = getattr(m, "v_num_heads", None) or n_kv
        v_dim = getattr(m, "v_dim", None) or getattr(m, "v_head_dim", None) or hd
        return n_kv * hd + v_heads * v_dim
    return 0


def _shape(mod, layer: int | None, vocab: set[int]) -> tuple[str, str] | None:
    """(block name, kind) from the module's own structure, or None for a container / unknown."""
    if isinstance(mod, (nn.Embedding, nn.QuantizedEmbedding)):
        return "other", "embedding"
    if _is_norm(mod):
        return "other", "norm"
    rec = _recurrent_kind(mod)
    if rec:
        return "linear_attention", rec
    if _attention_shaped(mod):
        if any(a in mod or a in vars(mod) for a in ("slope", "_slope")):  # per-head decay: lightning attention
            return "linear_attention", "decay"
        return "full_attention", "MLA" if isinstance(getattr(mod, "kv_lora_rank", None), int) else "full"
    if _moe_parts(mod) or _expert_bank(mod):
        return "moe", "routed experts"
    if any(_is_conv(k) for _, k in _kids(mod)) and _kids(mod):
        return "linear_attention", "short conv"
    if _is_mlp(mod):
        return "dense_mlp", "dense MLP"
    if layer is None and is_linear(mod) and out_features(mod) in vocab:
        return "output_head", "output head"
    return None


def _flat_caches(c) -> list:
    inner = getattr(c, "caches", None)
    if isinstance(inner, (list, tuple)):
        return [x for y in inner for x in _flat_caches(y)]
    return [c]


def _layer_caches(model, n_layers: int, mixer_layers: list[int]) -> list[list] | None:
    """The caches each layer keeps (from the model's own ``make_cache``), or None if they cannot be matched."""
    make = getattr(model, "make_cache", None)
    if make is None:
        return None
    try:
        caches = list(make())
    except Exception:
        return None
    if len(caches) == n_layers:
        return [_flat_caches(c) for c in caches]
    if len(caches) == len(mixer_layers):  # only mixing layers get a cache (Nemotron-H)
        out: list[list] = [[] for _ in range(n_layers)]
        for i, c in zip(mixer_layers, caches):
            out[i] = _flat_caches(c)
        return out
    return None


def vocab_sizes(model) -> set[int]:
    """Vocabulary sizes the model declares: its embeddings' rows and ``args.vocab_size``."""
    vocab = {int(m["weight"].shape[0]) for _, m in model.named_modules() if isinstance(m, (nn.Embedding, nn.QuantizedEmbedding))}
    vocab |= {v for v in [getattr(getattr(model, "args", None), "vocab_size", None)] if isinstance(v, int)}
    return vocab


def classify(model) -> Structure:
    """Every block to time, with its block name and sub-kind, from each module's structure."""
    from mlx_lm.models.cache import ArraysCache

    layers = list(model.layers)
    layer_of = {id(m): i for i, m in enumerate(layers)}
    vocab = vocab_sizes(model)
    blocks: list[Block] = []
    seen: set[int] = set()

    def walk(mod, path, layer):
        if id(mod) in seen:
            return
        seen.add(id(mod))
        if id(mod) in layer_of:
            layer = layer_of[id(mod)]
        else:
            shape = _shape(mod, layer, vocab)
            if shape:
                blocks.append(Block(path, mod, shape[0], shape[1], layer))
                return
        own = own_params(mod)
        kids = [(n, k) for n, k in _kids(mod) if _has_params(k)]
        if own:  # parameters of its own: timed as unclassified (exclusive of the blocks inside it)
            what = "layer's own parameters" if id(mod) in layer_of else type(mod).__name__
            blocks.append(Block(path, mod, "unclassified", what, layer))
        for name, kid in kids:
            walk(kid, f"{path}.{name}" if path else name, layer)

    walk(model, "", None)

    # Attention-shaped modules in a layer that keeps no KV cache are linear attention; windows from rotating caches.
    mixer_layers = sorted({b.layer for b in blocks if b.layer is not None and b.block_name in ("linear_attention", "full_attention")})
    per_layer = _layer_caches(model, len(layers), mixer_layers)
    for b in blocks:
        if b.block_name != "full_attention":
            continue
        b.kv_per_token = _kv_per_token(b.module)
        if per_layer is not None and b.layer is not None:
            kv = [c for c in per_layer[b.layer] if not isinstance(c, ArraysCache)]
            if per_layer[b.layer] and not kv:
                b.block_name, b.kind, b.kv_per_token = "linear_attention", "decay", 0
                continue
            windows = [int(c.max_size) for c in kv if isinstance(getattr(c, "max_size", None), int)]
            b.window = min(windows) if windows else None
        elif getattr(b.module, "is_sliding", True) and isinstance(getattr(b.module, "window_size", None), int):
            b.window = int(b.module.window_size)
        if b.window:
            b.kind = f"sliding window {b.window}" if b.kind == "full" else f"{b.kind}, sliding window {b.window}"

    # MoE details; a dense MLP beside an MoE in the same layer is that layer's shared expert.
    for b in blocks:
        if b.block_name != "moe":
            continue
        parts = _moe_parts(b.module)
        if parts:
            b.experts, banks, b.shared = parts
            b.expert_banks = tuple(f"{b.path}.{p}" if p else b.path for p in banks)
        else:
            bank = _expert_bank(b.module)
            assert bank is not None  # classified "moe" by _shape: an MoE block or an expert bank itself
            b.experts, b.expert_banks = bank[0], (b.path,)
        b.top_k = _top_k(b.module)
    for i in range(len(layers)):
        bl = [b for b in blocks if b.layer == i]
        moe = [b for b in bl if b.block_name == "moe" and b.experts]
        for b in bl:
            if moe and b.block_name == "dense_mlp":
                b.block_name, b.kind = "moe", "shared expert"
                for m in moe:
                    m.shared = True
    for b in blocks:
        if b.block_name == "moe" and b.experts:
            b.kind = "routed experts" + (" + shared expert" if b.shared else "")

    # A tied head: no linear output head, the embedding's as_linear does it.
    tied = False
    if not any(b.block_name == "output_head" for b in blocks):
        embs = [b for b in blocks if b.kind == "embedding" and hasattr(b.module, "as_linear")]
        if embs:
            emb = max(embs, key=lambda b: b.module["weight"].shape[0])
            emb.roles, emb.kind, tied = ("output_head",), "embedding (tied output head)", True
    return Structure(blocks, len(layers), tied)


def timed_modules(model) -> list[tuple[str, nn.Module, str]]:
    """(path, module, block name) for every block we time (see ``classify``)."""
    return [(b.path, b.module, b.block_name) for b in classify(model).blocks]

