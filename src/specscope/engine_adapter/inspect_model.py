"""What a checkpoint is: architecture, layer mix, MoE shape, sizes, drafters it can use."""

from __future__ import annotations

import platform

from .checkpoint import Checkpoint, open_checkpoint
from .loader import LoadedModel, system_memory_bytes

MTP_REQUIRED = ("mtp.fc.weight", "mtp.norm.weight")


def _layer_kinds(model) -> tuple[int, int, int]:
    linear = full = moe = 0
    for layer in model.layers:
        if getattr(layer, "linear_attn", None) is not None or getattr(layer, "is_linear", False):
            linear += 1
        elif any(getattr(layer, n, None) is not None for n in ("self_attn", "attention", "attn")):
            full += 1
        mlp = getattr(layer, "mlp", None) or getattr(layer, "block_sparse_moe", None)
        if mlp is not None and any(hasattr(mlp, n) for n in ("switch_mlp", "experts")):
            moe += 1
    return linear, full, moe


def _param_counts(model) -> tuple[int, int, int]:
    """(parameters, bytes, active parameters per token), counting quantized weights at full size."""
    import mlx.nn as nn
    from mlx.utils import tree_flatten

    total = nbytes = inactive = 0
    for path, mod in tree_flatten(model.leaf_modules(), is_leaf=nn.Module.is_module):
        params = dict(tree_flatten(mod.parameters()))
        nbytes += sum(v.nbytes for v in params.values())
        if hasattr(mod, "bits") and "weight" in params:
            n = params["weight"].size * 32 // mod.bits
        else:
            n = sum(v.size for k, v in params.items() if not k.endswith(("scales", "biases")))
        total += n
        if ".switch_mlp." in f".{path}." or ".experts." in f".{path}.":
            num = getattr(mod, "num_experts", None) or (params["weight"].shape[0] if "weight" in params else None)
            top_k = _top_k_for(model)
            if num and top_k:
                inactive += n * (1 - top_k / num)
    return total, nbytes, int(total - inactive)


def _top_k_for(model) -> int | None:
    for layer in model.layers:
        mlp = getattr(layer, "mlp", None) or getattr(layer, "block_sparse_moe", None)
        for attr in ("top_k", "num_experts_per_tok"):
            if mlp is not None and getattr(mlp, attr, None):
                return int(getattr(mlp, attr))
    return None


def mtp_status(ck: Checkpoint) -> dict:
    keys = ck.mtp_keys()
    ok = all(any(k.endswith(req) for k in keys) for req in MTP_REQUIRED)
    return {"available": ok, "tensors": len(keys)}


def _naming(path) -> dict:
    """How the model is called everywhere: its repo id for a cache entry, else its folder name."""
    from specscope.model_ref import ref_for_folder

    ref = ref_for_folder(path)
    return {"name": ref.name, "revision": ref.revision, "source": ref.source}


def describe(lm: LoadedModel) -> dict:
    ck, model = lm.checkpoint, lm.model
    tc = ck.text_config
    linear, full, moe = _layer_kinds(model)
    params, nbytes, active = _param_counts(model)
    q = lm.config.get("quantization") or {}
    mtp = mtp_status(ck)
    n_kv = tc.get("num_key_value_heads") or tc.get("num_attention_heads") or 0
    head_dim = tc.get("head_dim") or (tc.get("hidden_size", 0) // max(tc.get("num_attention_heads", 1), 1))
    ctx = 4096
    kv_bytes = 2 * full * n_kv * head_dim * ctx * 2
    mem = system_memory_bytes()
    drafters = ["draft", "ngram", "oracle"] + (["mtp"] if mtp["available"] else [])
    return {
        "path": str(ck.path),
        **_naming(ck.path),
        "model_type": ck.model_type,
        "architecture": (ck.config.get("architectures") or [ck.model_type])[0],
        "layers": len(model.layers),
        "linear_attention_layers": linear,
        "full_attention_layers": full,
        "moe_layers": moe,
        "hybrid": linear > 0,
        "experts": tc.get("num_experts") or tc.get("num_local_experts") or 0,
        "experts_per_token": tc.get("num_experts_per_tok") or 0,
        "shared_expert": bool(tc.get("shared_expert_intermediate_size")),
        "hidden_size": tc.get("hidden_size"),
        "vocab_size": tc.get("vocab_size"),
        "quantization": {"bits": q.get("bits"), "group_size": q.get("group_size"), "mode": q.get("mode", "affine")} if q else None,
        "parameters": params,
        "active_parameters": active,
        "weight_bytes": nbytes,
        "file_bytes": ck.file_bytes,
        "mtp": mtp,
        "drafters": sorted(drafters),
        "memory_estimate_bytes": int(ck.file_bytes + kv_bytes),
        "memory_estimate_context": ctx,
        "system_memory_bytes": mem,
        "demo": ck.config.get("specscope_demo"),
    }


def describe_path(path, allow_oversize: bool = False) -> dict:
    from .loader import load_model

    return describe(load_model(path, allow_oversize=allow_oversize))


def format_description(d: dict) -> str:
    gib = 2**30
    lines = [
        f"{d['name']}{' @ ' + d['revision'][:7] if d.get('revision') else ''}  ({d['architecture']}, model_type {d['model_type']})",
        f"  path              {d['path']}",
        f"  layers            {d['layers']}: {d['linear_attention_layers']} linear-attention, {d['full_attention_layers']} full-attention"
        + (f"; {d['moe_layers']} MoE" if d["moe_layers"] else ""),
    ]
    if d["experts"]:
        lines.append(f"  experts           {d['experts']} routed, top-{d['experts_per_token']}" + (" + shared expert" if d["shared_expert"] else ""))
    q = d["quantization"]
    lines.append(f"  quantization      {q['bits']}-bit, group {q['group_size']} ({q['mode']})" if q else "  quantization      none")
    lines.append(f"  parameters        {d['parameters'] / 1e6:,.1f} M total, {d['active_parameters'] / 1e6:,.1f} M active per token")
    lines.append(f"  weights           {d['weight_bytes'] / gib:.2f} GiB in memory, {d['file_bytes'] / gib:.2f} GiB on disk")
    lines.append(f"  MTP head          {'yes' if d['mtp']['available'] else 'no'} ({d['mtp']['tensors']} mtp.* tensors)")
    lines.append(f"  drafters          {', '.join(d['drafters'])} (oracle is a what-if)")
    sysmem = d["system_memory_bytes"]
    lines.append(
        f"  memory estimate   {d['memory_estimate_bytes'] / gib:.2f} GiB at {d['memory_estimate_context']} tokens of context"
        + (f" (this machine: {sysmem / gib:.0f} GiB, {platform.machine()})" if sysmem else "")
    )
    if d.get("demo"):
        lines.append("  note              synthetic demo model: timings are real, text and acceptance are not meaningful")
    return "\n".join(lines)


__all__ = ["describe", "describe_path", "format_description", "open_checkpoint", "mtp_status"]
