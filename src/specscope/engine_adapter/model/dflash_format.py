"""The DFlash drafter checkpoint format: read a folder, check it fits a target, refuse before anything runs.

A DFlash drafter (block diffusion drafting, arXiv 2602.06036) is a folder with ``config.json`` and safetensors
weights, and no embedding, head or tokenizer of its own: it borrows the target's. What the published checkpoints
(``z-lab/*-DFlash``) and the public MLX code agree on, and where they differ (this module decides as written):

- ``architectures``: ``["DFlashDraftModel"]``; ``["DFlash2DraftModel"]`` adds a convolution per layer and a
  candidate selector (``dflash2_format``: ``read_dflash`` returns its ``DFlash2Spec``). A config with a
  ``dflash_config`` and no such architecture is read as DFlash.
- The drafter's own sizes at the top level, as a Qwen3 config: ``hidden_size``, ``num_hidden_layers``,
  ``num_attention_heads``, ``num_key_value_heads``, ``head_dim``, ``intermediate_size``, ``vocab_size``,
  ``rms_norm_eps``, ``rope_theta`` (or ``rope_parameters.rope_theta``), optional ``rope_scaling``,
  ``max_position_embeddings``, ``num_target_layers`` (the layer count of the target it was trained on).
- ``block_size``: the reference MLX code (z-lab ``model_mlx.py``) and dflash-mlx read it at the top level; the
  design notes put it in ``dflash_config``. Either is accepted; both present and different is refused.
- ``dflash_config.target_layer_ids``: 0-based indices of target decoder layers whose *outputs* (the residual stream
  after the layer, ``hidden_states[i + 1]`` in Hugging Face terms) are concatenated. The PyTorch reference and
  dflash-mlx fall back to ``build_target_layer_ids(num_target_layers, num_hidden_layers)`` when absent; z-lab's MLX
  code requires it. The fallback is used here (``derived_layer_ids`` says so).
- ``dflash_config.mask_token_id``: required. dflash-mlx defaults it to 0 and z-lab's MLX loader fails without it;
  a guessed mask token would silently change every draft, so a folder without one is refused.
- ``attention_bias``: the PyTorch reference honours it, z-lab's MLX code ignores it (no biases); honoured here.
- Weights (unquantized, as published): ``fc.weight`` [H, n·H], ``hidden_norm.weight``, ``norm.weight`` and per layer
  ``layers.{i}.self_attn.{q,k,v,o}_proj.weight``, ``self_attn.{q,k}_norm.weight``, ``mlp.{gate,up,down}_proj.weight``,
  ``input_layernorm.weight``, ``post_attention_layernorm.weight``. A ``model.`` prefix is accepted.

Everything here reads small files only (config.json, safetensors headers): no MLX import.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TypedDict, cast

from specscope.engine_adapter.model.config_json import DFlashBlock, ModelConfig, TextConfig
from specscope.engine_adapter.model.dflash_spec import DFlashDescription, DFlashSpec
from specscope.errors import SpecscopeError

__all__ = ["DFlashDescription", "DFlashSpec"]  # re-exported: defined in the leaf ``dflash_spec``

ARCHITECTURES = {"DFlashDraftModel": "dflash", "DFlash2DraftModel": "dflash2"}
DFLASH_DEMO_BLOCK = 16  # the block of the demo drafters (``dflash_demo``): the published Qwen drafters' block size


def build_target_layer_ids(num_target_layers: int, num_draft_layers: int) -> list[int]:
    """The references' default choice of target layers when a config names none: one per drafter layer, spread
    evenly from layer 1 to layer ``num_target_layers - 3`` (the middle layer for a one-layer drafter)."""
    if num_draft_layers <= 1:
        return [num_target_layers // 2]
    start, end = 1, num_target_layers - 3
    return [int(round(start + i * (end - start) / (num_draft_layers - 1))) for i in range(num_draft_layers)]


class TargetShape(TypedDict):
    """The target's sizes a DFlash drafter must fit (``target_shape``); None where its config does not say."""
    hidden_size: int | None
    vocab_size: int | None
    layers: int | None


def _read_config(d: Path) -> ModelConfig:
    f = d / "config.json"
    if not f.is_file():
        raise SpecscopeError(f"{d} has no config.json: not a DFlash drafter folder")
    try:
        config = json.loads(f.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SpecscopeError(f"{f} is not valid JSON: {exc}") from None
    if not isinstance(config, dict):
        raise SpecscopeError(f"{f} is not a JSON object")
    return cast(ModelConfig, config)


def variant_of(config: ModelConfig) -> str | None:
    """"dflash" / "dflash2" for a DFlash drafter's config, else None."""
    for a in config.get("architectures") or []:
        if a in ARCHITECTURES:
            return ARCHITECTURES[a]
    return "dflash" if isinstance(config.get("dflash_config"), dict) else None


def is_dflash_folder(path: str | os.PathLike) -> bool:
    d = Path(path).expanduser()
    try:
        return (d / "config.json").is_file() and variant_of(_read_config(d)) is not None
    except SpecscopeError:
        return False


def _int(config: ModelConfig | DFlashBlock, key: str, where: str, minimum: int = 1) -> int:
    v = config.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise SpecscopeError(f"{where}: {key} must be an integer >= {minimum} (got {v!r})")
    return v


def read_dflash(path: str | os.PathLike) -> DFlashSpec:
    """Read and check a DFlash drafter folder (config and safetensors headers; no weights are loaded)."""
    from specscope.engine_adapter.model.safetensors_header import read_safetensors_header

    d = Path(path).expanduser()
    if not d.is_dir():
        raise SpecscopeError(f"DFlash drafter {d} is not a folder")
    config = _read_config(d)
    where = f"DFlash drafter {d.name}"
    variant = variant_of(config)
    if variant is None:
        raise SpecscopeError(f"{where}: config.json names no DFlash architecture (architectures "
                             f"{config.get('architectures')!r}, no dflash_config): not a DFlash drafter")
    dc = config.get("dflash_config") or {}
    if not isinstance(dc, dict):
        raise SpecscopeError(f"{where}: dflash_config must be a JSON object")
    sizes = {k: _int(config, k, where) for k in ("hidden_size", "num_hidden_layers", "num_attention_heads",
                                                  "num_key_value_heads", "intermediate_size", "vocab_size",
                                                  "num_target_layers")}
    head_dim = config.get("head_dim") or sizes["hidden_size"] // sizes["num_attention_heads"]
    blocks = {v for v in (dc.get("block_size"), config.get("block_size")) if v is not None}
    if len(blocks) > 1:
        raise SpecscopeError(f"{where}: block_size {config.get('block_size')} at the top level and "
                             f"{dc.get('block_size')} in dflash_config disagree")
    if not blocks:
        raise SpecscopeError(f"{where}: no block_size (top level or dflash_config)")
    block = _int({"block_size": blocks.pop()}, "block_size", where, minimum=2)
    if "mask_token_id" not in dc:
        raise SpecscopeError(f"{where}: dflash_config has no mask_token_id (the token every masked block position "
                             "reads); specscope does not guess it")
    mask = _int(dc, "mask_token_id", where, minimum=0)
    ids = dc.get("target_layer_ids")
    derived = ids is None
    if derived:
        ids = build_target_layer_ids(sizes["num_target_layers"], sizes["num_hidden_layers"])
    if not isinstance(ids, list) or not ids or any(isinstance(i, bool) or not isinstance(i, int) for i in ids):
        raise SpecscopeError(f"{where}: dflash_config.target_layer_ids must be a non-empty list of integers (got {ids!r})")
    rp = config.get("rope_parameters") or {}
    theta = config.get("rope_theta", rp.get("rope_theta", 10000.0))
    files = sorted(d.glob("*.safetensors"))
    if not files:
        raise SpecscopeError(f"{where}: no .safetensors weight files in {d}")
    spec = DFlashSpec(
        path=d, config=config, variant=variant, hidden_size=sizes["hidden_size"], num_layers=sizes["num_hidden_layers"],
        num_heads=sizes["num_attention_heads"], num_kv_heads=sizes["num_key_value_heads"], head_dim=int(head_dim),
        intermediate_size=sizes["intermediate_size"], vocab_size=sizes["vocab_size"],
        rms_norm_eps=float(config.get("rms_norm_eps", 1e-6)), rope_theta=float(theta),
        rope_scaling=config.get("rope_scaling"), max_position_embeddings=int(config.get("max_position_embeddings") or 32768),
        attention_bias=bool(config.get("attention_bias", False)), block_size=block, target_layer_ids=tuple(ids),
        num_target_layers=sizes["num_target_layers"], mask_token_id=mask, derived_layer_ids=derived, weight_files=files)
    for f in files:
        for name, meta in read_safetensors_header(f).items():
            if name != "__metadata__":
                spec.tensor_shapes[name] = list(meta["shape"])
                spec.tensor_dtypes[name] = meta["dtype"]
    if any(k.startswith("model.") for k in spec.tensor_shapes):
        spec.prefix = "model."
    if variant == "dflash2":  # its own fields and tensors (the selector, the convolutions) are checked too
        from specscope.engine_adapter.model.dflash2_format import as_dflash2

        spec = as_dflash2(spec, where)
    _check_weights(spec, where)
    return spec


def _check_weights(spec: DFlashSpec, where: str) -> None:
    have = {k[len(spec.prefix):] if k.startswith(spec.prefix) else k: v for k, v in spec.tensor_shapes.items()}
    if any(k.endswith(".scales") for k in have):
        raise SpecscopeError(f"{where}: quantized DFlash weights are not supported (the published drafters are bf16)")
    expected = spec.expected_shapes()
    missing = [k for k in expected if k not in have]
    if missing:
        raise SpecscopeError(f"{where}: {len(missing)} weight(s) missing, e.g. {', '.join(missing[:3])}")
    wrong = [f"{k} {have[k]} (config says {v})" for k, v in expected.items() if have[k] != v]
    if wrong:
        raise SpecscopeError(f"{where}: weights do not match its config: {'; '.join(wrong[:3])}")


def target_shape(text_config: TextConfig) -> TargetShape:
    """The target's hidden size, vocabulary and layer count, from its (text) config."""
    return {"hidden_size": text_config.get("hidden_size"), "vocab_size": text_config.get("vocab_size"),
            "layers": text_config.get("num_hidden_layers")}


def misfits(spec: DFlashSpec, text_config: TextConfig) -> list[str]:
    """Why this drafter cannot draft for a target with this config (empty: it fits)."""
    t = target_shape(text_config)
    out = []
    if spec.hidden_size != t["hidden_size"]:
        out.append(f"its hidden size is {spec.hidden_size}, the target's {t['hidden_size']} (it reads the target's "
                   "embedding and hidden states)")
    if spec.vocab_size != t["vocab_size"]:
        out.append(f"its vocabulary is {spec.vocab_size} tokens, the target's {t['vocab_size']} (it drafts through "
                   "the target's head)")
    elif not 0 <= spec.mask_token_id < (t["vocab_size"] or 0):
        out.append(f"its mask token {spec.mask_token_id} is outside the target's vocabulary of {t['vocab_size']}")
    n = t["layers"] or 0
    bad = [i for i in spec.target_layer_ids if not 0 <= i < n]
    if bad:
        out.append(f"it reads target layer(s) {bad}, the target has {n} layers (0..{n - 1})")
    elif spec.num_target_layers != n:
        out.append(f"it was made for a {spec.num_target_layers}-layer target, this one has {n} layers")
    return out


def check_fits(spec: DFlashSpec, text_config: TextConfig, target_name: str = "the target") -> None:
    """Refuse, before anything runs, a drafter that does not fit the target."""
    why = misfits(spec, text_config)
    if why:
        kind = "DFlash2" if spec.variant == "dflash2" else "DFlash"
        raise SpecscopeError(f"{kind} drafter {spec.path.name} does not fit {target_name}: {'; '.join(why)}")


def format_spec(spec: DFlashSpec, fits: list[tuple[str, list[str]]] | None = None) -> str:
    """``inspect``'s text for a DFlash drafter folder; ``fits``: (target name, misfits) pairs checked against it."""
    d = spec.describe()
    ids = ", ".join(map(str, spec.target_layer_ids)) + (" (derived: the config names none)" if spec.derived_layer_ids else "")
    lines = [
        f"{spec.path.name}  ({'DFlash2 drafter (candidate selector)' if spec.variant == 'dflash2' else 'DFlash drafter'})",
        f"  path              {spec.path}",
        f"  block             {spec.block_size} (last token + {spec.max_draft_tokens} masks): up to {spec.max_draft_tokens} drafts a round",
        f"  drafter           {spec.num_layers} layers, hidden {spec.hidden_size}, {spec.num_heads} heads "
        f"({spec.num_kv_heads} KV), {d['parameters'] / 1e6:,.1f} M parameters",
        f"  reads             target layers {ids} (outputs), mask token {spec.mask_token_id}",
        f"  fits              a target with hidden size {spec.hidden_size}, a {spec.vocab_size}-token vocabulary and "
        f"{spec.num_target_layers} layers (shares its embedding and head)",
        *spec.extra_lines(),
    ]
    for name, why in fits or []:
        lines.append(f"  {'fits ' + name if not why else 'not for ' + name + ': ' + '; '.join(why)}")
    return "\n".join(lines)
