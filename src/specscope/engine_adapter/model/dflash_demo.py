"""Random DFlash drafters in the published format, for the demo targets and for ``--shape`` slices.

``specscope demo-model PATH --dflash`` writes a drafter folder (``config.json`` with a ``dflash_config``,
``architectures: ["DFlashDraftModel"]``, one bf16 safetensors file, no embedding, head or tokenizer: the target's
are used) that fits the demo target: the shipped trained one by default, the random one with ``--random``, or a
``--shape NAME --layers N`` slice. Its weights are random and seeded: its timings are real, its drafts are not
meaningful (a random drafter is rarely accepted).

Target layers (``target_layer_ids``): the references' own rule (``dflash_format.build_target_layer_ids``: one per
drafter layer, spread from layer 1 to layer L−3) on the target's full depth, then mapped onto the layers the target
actually has. A demo target is its own full depth; a ``--shape`` slice keeps the first N of the released model's
L layers, so layer ``i`` of the released model is mapped to ``round(i · (N−1) / (L−1))`` of the slice: the same
relative depth, the last layer onto the last. Indices the mapping merges or the rule puts out of range (targets
shallower than the rule expects) are spread evenly over 1..N−1 instead, so the drafter always reads distinct
layers. ``num_target_layers`` is the slice's N: the drafter is written for the slice, and ``specscope_demo``
records the released depth and the mapping.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import cast

from specscope.engine_adapter.model.config_json import ModelConfig, TextConfig, text_of
from specscope.engine_adapter.model.dflash_format import DFLASH_DEMO_BLOCK, build_target_layer_ids
from specscope.errors import SpecscopeError

DFLASH_DEMO_LAYERS = 2  # drafter depth of the demo drafters (the published drafters' depth is not assumed here)
DFLASH_FORMAT_VERSION = 1


def map_layer_ids(ids: list[int], full_layers: int, layers: int) -> list[int]:
    """Layer indices chosen on a ``full_layers``-deep target, at the same relative depth in its first ``layers``."""
    if layers < 2:
        raise SpecscopeError("a DFlash drafter needs a target with at least 2 layers")
    scale = (layers - 1) / max(full_layers - 1, 1)
    out = sorted({min(layers - 1, max(0, int(round(i * scale)))) for i in ids})
    if len(out) < len(ids):
        n = min(len(ids), layers - 1)  # spread over 1..layers-1, distinct
        out = sorted({1 + int(round(j * (layers - 2) / max(n - 1, 1))) for j in range(n)})
    return out


def demo_target_config(kind: str, shape: str | None = None, layers: int | None = None) -> tuple[TextConfig, str, int]:
    """(text config, target name, the target's released depth) of the demo target a drafter is written for:
    ``kind`` "trained" or "random", or a ``shape`` slice of ``layers`` layers."""
    if shape:
        from specscope.engine_adapter.model.real_shape import FULL_LAYERS, text_config

        n = layers if layers is not None else 4
        return text_config(shape, n), f"{shape} ({n} of {FULL_LAYERS[shape]} layers)", FULL_LAYERS[shape]
    if kind == "random":
        from specscope.engine_adapter.model.demo_model import VOCAB_TARGET, demo_text_config

        t = demo_text_config("hybrid", VOCAB_TARGET)
        return t, "the random demo model", t["num_hidden_layers"]
    from specscope.engine_adapter.model.demo_model import trained_demo_path

    p = trained_demo_path("hybrid")
    if p is None:
        raise SpecscopeError("this install has no trained demo; use --random")
    t = text_of(cast(ModelConfig, json.loads((p / "config.json").read_text())))
    return t, f"the trained demo model ({p.name})", t["num_hidden_layers"]


def dflash_config(text: TextConfig, full_layers: int, block_size: int = DFLASH_DEMO_BLOCK,
                  draft_layers: int = DFLASH_DEMO_LAYERS) -> ModelConfig:
    """The drafter's config.json for a target with this text config (``full_layers``: its released depth)."""
    H, V, n = int(text["hidden_size"]), int(text["vocab_size"]), int(text["num_hidden_layers"])
    if block_size < 2:
        raise SpecscopeError(f"--block-size must be at least 2 (got {block_size})")
    head_dim = 64 if H < 1024 else 128
    heads = max(1, H // head_dim)
    kv = max(1, heads // 4)
    while heads % kv:
        kv -= 1
    ids = map_layer_ids(build_target_layer_ids(full_layers, draft_layers), full_layers, n)
    return {
        "architectures": ["DFlashDraftModel"],
        "model_type": "qwen3",
        "hidden_size": H,
        "num_hidden_layers": len(ids),
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": head_dim,
        "intermediate_size": 3 * H,
        "vocab_size": V,
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000000.0,
        "max_position_embeddings": int(text.get("max_position_embeddings") or 32768),
        "attention_bias": False,
        "tie_word_embeddings": False,
        "num_target_layers": n,
        "block_size": block_size,
        "torch_dtype": "bfloat16",
        "dflash_config": {"block_size": block_size, "target_layer_ids": ids, "mask_token_id": V - 1},
    }


def build_dflash_demo(path: str | os.PathLike, text: TextConfig, target_name: str, full_layers: int | None = None,
                      seed: int = 0, block_size: int = DFLASH_DEMO_BLOCK) -> Path:
    """Write a random DFlash drafter for a target with this text config at ``path`` (atomically)."""
    import mlx.core as mx

    from specscope.engine_adapter.model.dflash_format import read_dflash
    from specscope.engine_adapter.model.demo_model import BRANCH_GAIN, model_folder

    path = Path(path).expanduser()
    if path.exists() and any(path.iterdir()):
        raise SpecscopeError(f"{path} exists and is not empty; choose a new directory")
    full = full_layers or int(text["num_hidden_layers"])
    config = dflash_config(text, full, block_size)
    # the mask token is the vocabulary's last id: a padding id the demo tokenizer never makes
    config["specscope_demo"] = {"kind": "dflash", "target": target_name, "seed": seed, "format_version": DFLASH_FORMAT_VERSION,
                                "target_released_layers": full,
                                "layer_map": "references' rule on the released depth, mapped to the same relative depth"}
    with model_folder(path, prefix=".dflash-") as tmp:
        (tmp / "config.json").write_text(json.dumps(config, indent=2))
        spec = read_dflash_shapes(tmp)
        weights = {}
        for i, (name, shape) in enumerate(sorted(spec.items())):
            key = mx.random.key(seed * 1_000_003 + 7 + i)
            if len(shape) == 1:
                w = mx.ones(shape)
            else:
                w = mx.random.normal(shape, key=key) * shape[-1] ** -0.5
                if name.endswith(("o_proj.weight", "down_proj.weight")):
                    w = w * BRANCH_GAIN
            weights[name] = w.astype(mx.bfloat16)
            mx.eval(weights[name])
        mx.save_safetensors(str(tmp / "model.safetensors"), weights, metadata={"format": "pt"})
        read_dflash(tmp)  # the folder reads back in the format it claims
    return path


def read_dflash_shapes(folder: Path) -> dict[str, list[int]]:  # dict: tensor name -> shape
    """The weight names and shapes a drafter with this folder's config.json must have."""
    return spec_of_config(cast(ModelConfig, json.loads((folder / "config.json").read_text())), folder).expected_shapes()


def spec_of_config(c: ModelConfig, folder: Path):
    """The ``DFlashSpec`` a config this module writes describes (no weights read: for writing or training one)."""
    from specscope.engine_adapter.model.dflash_format import DFlashSpec, variant_of

    dc = c["dflash_config"]
    return DFlashSpec(path=folder, config=c, variant=variant_of(c) or "dflash", hidden_size=c["hidden_size"],
                      num_layers=c["num_hidden_layers"], num_heads=c["num_attention_heads"],
                      num_kv_heads=c["num_key_value_heads"], head_dim=c["head_dim"],
                      intermediate_size=c["intermediate_size"], vocab_size=c["vocab_size"], rms_norm_eps=c["rms_norm_eps"],
                      rope_theta=c["rope_theta"], rope_scaling=None, max_position_embeddings=c["max_position_embeddings"],
                      attention_bias=False, block_size=c["block_size"], target_layer_ids=tuple(dc["target_layer_ids"]),
                      num_target_layers=c["num_target_layers"], mask_token_id=dc["mask_token_id"])


def default_dflash_path(target) -> Path:
    """The demo DFlash drafter for a loaded demo ``target`` (``run --demo --drafter dflash`` without
    ``--draft-model``): the shipped trained one for the shipped trained demo, else a random one built once into
    specscope's cache beside the demo models."""
    import shutil

    from specscope.engine_adapter.model.demo_model import file_lock, hash_name, specscope_home, trained_demo_path

    trained, drafter = trained_demo_path("hybrid"), trained_demo_path("dflash")
    if trained is not None and drafter is not None and target.path.resolve() == trained.resolve():
        return drafter

    text = target.checkpoint.text_config
    key = hash_name(f"{target.path.resolve()}|{text.get('hidden_size')}|{text.get('num_hidden_layers')}")
    out = specscope_home() / f"demo-dflash-{key}-v{DFLASH_FORMAT_VERSION}"
    if (out / "config.json").exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(out.parent / ".demo-dflash.lock"):
        if not (out / "config.json").exists():
            shutil.rmtree(out, ignore_errors=True)
            build_dflash_demo(out, text, target.path.name)
    return out
