"""What a checkpoint is: architecture, layer mix, MoE shape, sizes, drafters it can use."""

from __future__ import annotations

import platform
from typing import Any, Mapping

from specscope.drafter_kinds import DRAFTER_NAMES
from specscope.engine_adapter.model.checkpoint import Checkpoint, mtp_layer_index, mtp_naming, open_checkpoint
from specscope.engine_adapter.model.compat_class import cheap_report
from specscope.engine_adapter.model.config_json import TextConfig
from specscope.engine_adapter.model.loader import MEMORY_LIMIT_FRACTION, LoadedModel, system_memory_bytes
from specscope.engine_adapter.model.records import (
    Compatibility,
    KVCacheEstimate,
    LayerKinds,
    ModelDescription,
    MTPStatus,
    Naming,
)
from specscope.engine_adapter.model.structure import classify

MTP_REQUIRED = ("mtp.fc.weight", "mtp.norm.weight")


def _layer_kinds(model, structure=None) -> LayerKinds:
    """Layer mix from each layer's own structure (``structure.classify``): the same rules the breakdown times by.

    A layer with a recurrent mixer and attention side by side (Falcon-H1) counts in both; ``parallel`` says how many.
    """
    s = structure or classify(model)
    mix = s.layer_mix()
    parallel = sum(
        1 for i in range(s.layers) if {"linear_attention", "full_attention"} <= {b.block_name for b in s.in_layer(i)}
    )
    return {
        "linear": mix["linear_attention"],
        "full": mix["full_attention"],
        "sliding": mix["sliding_window"],
        "mla": mix["mla"],
        "moe": mix["moe"],
        "dense": mix["dense_mlp"],
        "unclassified": mix["unclassified"],
        "parallel": parallel,
        "linear_kinds": s.kinds("linear_attention"),
        "attention_kinds": s.kinds("full_attention"),
    }


def _param_counts(model, structure=None, text_config: TextConfig | None = None) -> tuple[int, int, int]:
    """(parameters, bytes, active parameters per token), counting quantized weights at full size.

    Every parameter is counted once, wherever it sits (also on modules with children: sinks, router
    biases). Routed-expert weights (the MoE blocks' expert banks, found by structure) count
    ``top_k / experts`` of themselves as active; routers and shared experts are always active.
    """
    from specscope.engine_adapter.mlx_types import flat

    s = structure or classify(model)
    top_k = _top_k_for(model, s, text_config)
    banks = [(p, b.experts, b.top_k or top_k) for b in s.moe_blocks() for p in b.expert_banks]
    mods = dict(model.named_modules())
    total = nbytes = 0
    inactive = 0.0
    for path, v in flat(model.parameters()):
        owner, _, leaf = path.rpartition(".")
        bits = getattr(mods.get(owner), "bits", None)
        nbytes += v.nbytes
        if bits and leaf == "weight":
            n = v.size * 32 // bits
        elif bits and leaf in ("scales", "biases"):
            n = 0
        else:
            n = v.size
        total += n
        for bank, experts, k in banks:
            if experts and k and (path == bank or path.startswith(bank + ".")):
                inactive += n * (1 - min(k, experts) / experts)
                break
    return total, nbytes, int(round(total - inactive))


def _top_k_for(model, structure=None, text_config: TextConfig | None = None) -> int | None:
    """Experts per token: what the MoE modules say, else the config's field."""
    s = structure or classify(model)
    ks = [b.top_k for b in s.moe_blocks() if b.top_k]
    if ks:
        return max(ks)
    tc = text_config or {}
    for key in ("num_experts_per_tok", "num_experts_per_token", "moe_topk", "n_activated_experts"):
        if tc.get(key):
            return int(tc[key])
    return None


def _kv_cache_estimate(model, structure, text_config: TextConfig, ctx: int) -> KVCacheEstimate:
    """KV-cache bytes at ``ctx`` tokens, per attention layer from its own projections.

    GQA: the K and V projections' widths (KV heads × head dim); MLA: the compressed latent plus
    the shared rope key (``kv_lora_rank + qk_rope_head_dim``), one "head"; sliding windows keep
    ``min(ctx, window)`` tokens. Recurrent layers keep a fixed-size state, not counted here.
    Elements are costed at the activation dtype (the quantization scales' dtype for a quantized
    model, else the embedding's).
    """
    emb = next((b.module for b in structure.blocks if b.kind.startswith("embedding")), None)
    item = 2
    if emb is not None:
        ref = emb.get("scales") if "scales" in emb else emb.get("weight")
        if ref is not None and _is_float_dtype(ref.dtype):
            item = ref.dtype.size
    fallback = 2 * int(text_config.get("num_key_value_heads") or text_config.get("num_attention_heads") or 0) * int(
        text_config.get("head_dim")
        or (text_config.get("hidden_size", 0) // max(text_config.get("num_attention_heads", 1) or 1, 1))
    )
    elems = per_token = 0
    for b in structure.blocks:
        if b.block_name != "full_attention":
            continue
        n = b.kv_per_token or fallback
        elems += n * min(ctx, b.window or ctx)
        per_token += n if not b.window else 0
    return {"bytes": int(elems * item), "bytes_per_token": int(per_token * item), "dtype_bytes": item}


def _is_float_dtype(dtype) -> bool:
    import mlx.core as mx

    return mx.issubdtype(dtype, mx.floating)


def mtp_status(ck: Checkpoint) -> MTPStatus:
    """Whether the checkpoint carries its own MTP head, and in which naming.

    ``style``: "qwen3_5" / "qwen3_next" (``mtp.*``: fc, pre_fc_norm_*, layers.0, norm) or
    "deepseek_v3" (DeepSeek-V3, GLM-4.5: ``model.layers.{N}.*`` past the trunk's N layers: eh_proj,
    enorm, hnorm, a decoder layer, shared_head). ``layers``: MTP layers present; ``declared_layers``:
    what the config says (``num_nextn_predict_layers`` / ``mtp_num_hidden_layers``); ``missing``: the
    names a head needs that are not there (then ``available`` is false).
    """
    keys = ck.mtp_keys()
    tc = ck.text_config
    style = mtp_naming(keys, ck.model_type)
    declared = tc.get("num_nextn_predict_layers", tc.get("mtp_num_hidden_layers"))
    layers: list[int] = []
    required: list[str] = []
    if style == "deepseek_v3":
        # every key of this naming is in a layer past the trunk's (that is how mtp_keys found it)
        layers = sorted({li for k in keys if (li := mtp_layer_index(k, tc["num_hidden_layers"])) is not None})
        first = f"layers.{layers[0]}."
        required = [first + n for n in ("eh_proj.weight", "enorm.weight", "hnorm.weight", "shared_head.norm.weight", "input_layernorm.weight")]
    elif style is not None:
        layers = sorted({int(i) for k in keys if (i := k.partition("mtp.layers.")[2].split(".")[0]).isdigit()})
        required = [f"mtp.{n}.weight" for n in ("fc", "norm", "pre_fc_norm_embedding", "pre_fc_norm_hidden", "layers.0.input_layernorm")]
    missing = [r for r in required if not any(k == r or k.endswith("." + r) for k in keys)]
    return {
        "available": bool(keys) and not missing,
        "tensors": len(keys),
        "style": style,
        "layers": len(layers),
        "declared_layers": declared,
        "missing": missing,
    }


def _naming(path) -> Naming:
    """How the model is called everywhere: its repo id for a cache entry, else its folder name."""
    from specscope.model_ref import ref_for_folder

    ref = ref_for_folder(path)
    return {"name": ref.name, "revision": ref.revision, "source": ref.source}


def describe(lm: LoadedModel) -> ModelDescription:
    ck, model = lm.checkpoint, lm.model
    tc = ck.text_config
    structure = classify(model)
    kinds = _layer_kinds(model, structure)
    linear, full, moe = kinds["linear"], kinds["full"], kinds["moe"]
    params, nbytes, active = _param_counts(model, structure, tc)
    moe_blocks = structure.moe_blocks()
    q = lm.config.get("quantization") or {}
    mtp = mtp_status(ck)
    ctx = 4096
    kv = _kv_cache_estimate(model, structure, tc, ctx)
    kv_bytes = kv["bytes"]
    mem = system_memory_bytes()
    # every drafter but those a model must carry (its MTP head, a DFlash drafter for it), then its head if it has one
    drafters = [n for n in DRAFTER_NAMES if n not in ("mtp", "dflash")] + (["mtp"] if mtp["available"] else [])
    return {
        "path": str(ck.path),
        **_naming(ck.path),
        "model_type": ck.model_type,
        "architecture": (ck.config.get("architectures") or [ck.model_type])[0],
        "layers": len(model.layers),
        "linear_attention_layers": linear,
        "full_attention_layers": full,
        "moe_layers": moe,
        "sliding_window_layers": kinds["sliding"],
        "mla_layers": kinds["mla"],
        "dense_mlp_layers": kinds["dense"],
        "parallel_mixer_layers": kinds["parallel"],
        "unclassified_layers": kinds["unclassified"],
        "layer_kinds": {"linear_attention": kinds["linear_kinds"], "full_attention": kinds["attention_kinds"]},
        "hybrid": linear > 0,
        "experts": max((b.experts for b in moe_blocks), default=0),
        "experts_per_token": (_top_k_for(model, structure, tc) or 0) if moe_blocks else 0,
        "shared_expert": any(b.shared for b in moe_blocks),
        "hidden_size": tc.get("hidden_size"),
        "vocab_size": tc.get("vocab_size"),
        "quantization": {"bits": q.get("bits"), "group_size": q.get("group_size"), "mode": q.get("mode", "affine")} if q else None,
        # --dtype: the floating parameters were cast to this on load (None: the checkpoint's own)
        "compute_dtype": getattr(lm, "compute_dtype", None),
        "parameters": params,
        "active_parameters": active,
        "weight_bytes": nbytes,
        "file_bytes": ck.file_bytes,
        "mtp": mtp,
        "drafters": sorted(drafters),
        "memory_estimate_bytes": int(ck.file_bytes + kv_bytes),
        "memory_estimate_context": ctx,
        "kv_cache_bytes": kv_bytes,
        "kv_cache_bytes_per_token": kv["bytes_per_token"],  # growth per token once sliding windows are full
        "system_memory_bytes": mem,
        "memory_limit_fraction": MEMORY_LIMIT_FRACTION,
        "demo": ck.config.get("specscope_demo"),
        "compatibility": _compatibility(model),
    }


def _compatibility(model) -> Compatibility:
    """The cheap part of `specscope check`: the class from the model's caches alone (no forward pass)."""
    rep = cheap_report(model)
    return {"class": rep["class"], "reasons": rep["reasons"], "rollback": rep["rollback"]["mode"],
            "sliding_windows": rep["sliding_windows"]}


def describe_path(path, allow_oversize: bool = False) -> ModelDescription:
    from specscope.engine_adapter.model.loader import load_model

    return describe(load_model(path, allow_oversize=allow_oversize))


def _layer_mix_text(d: Mapping[str, Any]) -> str:
    """"4: 2 linear-attention, 2 full-attention; 3 MoE, 1 dense MLP" (layers with both mixers count in both)."""
    text = f"{d['linear_attention_layers']} linear-attention, {d['full_attention_layers']} full-attention"
    if d.get("parallel_mixer_layers"):
        text += f" (side by side in {d['parallel_mixer_layers']} layers)"
    ffn = [f"{d['moe_layers']} MoE" if d.get("moe_layers") else "", f"{d['dense_mlp_layers']} dense MLP" if d.get("dense_mlp_layers") else ""]
    if any(ffn):
        text += "; " + ", ".join(f for f in ffn if f)
    if d.get("unclassified_layers"):
        text += f"; {d['unclassified_layers']} with unclassified parts"
    return text


def _layer_kinds_text(d: Mapping[str, Any]) -> str | None:
    """"linear: delta rule ×6; attention: sliding window 8 ×2, full ×2", or None when all attention is plain."""
    kinds = d.get("layer_kinds") or {}
    parts = []
    for block, name in (("linear_attention", "linear"), ("full_attention", "attention")):
        ks = kinds.get(block) or {}
        if ks and (block == "linear_attention" or list(ks) != ["full"]):
            parts.append(f"{name}: " + ", ".join(f"{k} ×{n}" for k, n in ks.items()))
    return "; ".join(parts) or None


def format_description(d: Mapping[str, Any]) -> str:
    gib = 2**30
    lines = [
        f"{d['name']}{' @ ' + d['revision'][:7] if d.get('revision') else ''}  ({d['architecture']}, model_type {d['model_type']})",
        f"  path              {d['path']}",
        f"  layers            {d['layers']}: {_layer_mix_text(d)}",
    ]
    if _layer_kinds_text(d):
        lines.append(f"  layer kinds       {_layer_kinds_text(d)}")
    if d["experts"]:
        lines.append(f"  experts           {d['experts']} routed, top-{d['experts_per_token']}" + (" + shared expert" if d["shared_expert"] else ""))
    q = d["quantization"]
    lines.append(f"  quantization      {q['bits']}-bit, group {q['group_size']} ({q['mode']})" if q else "  quantization      none")
    lines.append(f"  parameters        {d['parameters'] / 1e6:,.1f} M total, {d['active_parameters'] / 1e6:,.1f} M active per token")
    lines.append(f"  weights           {d['weight_bytes'] / gib:.2f} GiB in memory, {d['file_bytes'] / gib:.2f} GiB on disk")
    mtp = d["mtp"]
    if mtp["available"]:
        mtp_text = f"yes, {mtp.get('style') or '?'} naming ({mtp['tensors']} tensors)"
    elif mtp.get("tensors"):
        mtp_text = f"incomplete ({mtp['tensors']} tensors; missing {', '.join((mtp.get('missing') or [])[:3]) or '?'})"
    else:
        mtp_text = "no"
    lines.append(f"  MTP head          {mtp_text}")
    lines.append(f"  drafters          {', '.join(d['drafters'])} (oracle is a what-if)")
    sysmem = d["system_memory_bytes"]
    lines.append(
        f"  memory estimate   {d['memory_estimate_bytes'] / gib:.2f} GiB at {d['memory_estimate_context']} tokens of context"
        + (f", KV cache {d['kv_cache_bytes'] / 2**20:,.1f} MiB" if d.get("kv_cache_bytes") is not None else "")
        + (f" (this machine: {sysmem / gib:.0f} GiB, {platform.machine()})" if sysmem else "")
    )
    comp = d.get("compatibility")
    if comp:
        lines.append(f"  compatibility     {comp['class']}" + (f" ({comp['reasons'][0]})" if comp["reasons"] else "")
                     + "; run `specscope check` for the full check")
    demo = d.get("demo")
    if isinstance(demo, dict) and demo.get("kind") == "shape":
        lines.append(f"  note              random weights at {demo.get('shape')}'s released dimensions ({demo.get('layers')} "
                     "layers): timings are real, text and acceptance are not meaningful")
    elif demo:
        from specscope.demo_labels import demo_note

        lines.append(f"  note              {demo_note(demo)}")
    return "\n".join(lines)


__all__ = ["describe", "describe_path", "format_description", "open_checkpoint", "mtp_status"]
