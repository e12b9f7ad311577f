"""Random-weight models at a released model's real dimensions, written a layer at a time.

``specscope demo-model PATH --shape qwen3.5-35b-a3b --layers N`` writes the first N
decoder layers of Qwen3.5-35B-A3B at its released dimensions (DESIGN §6: vocabulary
248,320, hidden 2,048, one full-attention layer in four, 256 routed experts top-8),
4-bit like the mlx-community conversions (router gates 8-bit, the rest bfloat16), in
the on-disk format mlx-lm's loader reads. It exists to look at the app and the
commands with real shapes (wide output head, 64 routed rows at k = 7, long names)
without downloading a checkpoint; its text and acceptance mean nothing.

Memory stays bounded: the model object is built lazily (MLX arrays are graphs until
evaluated), and each part — the embedding, one decoder layer, the final norm and the
output head — is drawn, quantized, evaluated and written to its own safetensors shard,
then released, before the next one. Draws are made in bfloat16 (one expert projection, 256 × 512 × 2,048,
is 0.5 GiB), one array evaluated at a time, so the peak does not grow with N.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any, cast

from specscope.engine_adapter.model.config_json import ModelConfig, TextConfig
from specscope.errors import SpecscopeError

SHAPES = ("qwen3.5-35b-a3b",)
REAL_SHAPE_FORMAT_VERSION = 1
FULL_LAYERS = {"qwen3.5-35b-a3b": 40}
MIN_LAYERS = 4


def text_config(shape: str, layers: int) -> TextConfig:
    """The released model's text config (transformers' Qwen3_5MoeTextConfig defaults), cut to ``layers``."""
    if shape not in SHAPES:
        raise SpecscopeError(f"unknown --shape {shape!r}; known: {', '.join(SHAPES)}")
    full = FULL_LAYERS[shape]
    if not MIN_LAYERS <= layers <= full:
        # mlx-lm's qwen3_5 model builds its attention mask from its first full-attention layer (every fourth):
        # with fewer than four layers there is none, and the model cannot run a forward
        raise SpecscopeError(f"--layers must be {MIN_LAYERS}..{full} for {shape} (got {layers}): one layer in four is "
                             "full attention, and mlx-lm needs at least one")
    return {
        "model_type": "qwen3_5_moe_text",
        "hidden_size": 2048,
        "vocab_size": 248320,
        "num_hidden_layers": layers,
        "full_attention_interval": 4,
        "num_attention_heads": 16,
        "num_key_value_heads": 2,
        "head_dim": 256,
        "linear_num_key_heads": 16,
        "linear_num_value_heads": 32,
        "linear_key_head_dim": 128,
        "linear_value_head_dim": 128,
        "linear_conv_kernel_dim": 4,
        "num_experts": 256,
        "num_experts_per_tok": 8,
        "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512,
        "decoder_sparse_step": 1,
        "norm_topk_prob": True,
        "intermediate_size": 512,
        "rms_norm_eps": 1e-6,
        "max_position_embeddings": 262144,
        "tie_word_embeddings": False,
        "eos_token_id": 0,
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": 10000000,
            "partial_rotary_factor": 0.25,
            "mrope_section": [11, 11, 10],
        },
    }


def _config(shape: str, layers: int) -> ModelConfig:
    return {
        "model_type": "qwen3_5_moe",
        "architectures": ["Qwen3_5MoeForConditionalGeneration"],
        "text_config": text_config(shape, layers),
        "tie_word_embeddings": False,
        "eos_token_id": 0,
        "torch_dtype": "bfloat16",
    }


def _draw(module, prefix: str, n_tokens: int, seed: int) -> None:
    """Replace a module's lazily initialised parameters with this builder's seeded draws (bfloat16)."""
    import mlx.core as mx
    from mlx.utils import tree_unflatten

    from specscope.engine_adapter.mlx_types import flat

    from specscope.engine_adapter.model.demo_model import BRANCH_GAIN, hash_name

    new = []
    for name, value in flat(module.parameters()):
        full = f"{prefix}.{name}" if prefix else name
        key = mx.random.key(seed * 100003 + hash_name(full))
        shape = value.shape
        dt = mx.bfloat16
        if full.endswith("A_log"):
            w, dt = mx.log(mx.random.uniform(1.0, 16.0, shape, key=key)), mx.float32
        elif ("norm" in full and value.ndim == 1) or full.endswith("dt_bias"):
            w = mx.ones(shape)
        elif full.endswith("conv1d.weight"):
            w = mx.random.normal(shape, dtype=dt, key=key) * 0.3
        elif full.endswith("embed_tokens.weight"):
            w = mx.random.normal(shape, dtype=dt, key=key)
        elif full.endswith("lm_head.weight"):
            # Rows past the tokenizer's ids score zero, as untrained rows do (and are not drawn at all).
            rows = min(n_tokens, shape[0])
            w = mx.concatenate([mx.random.normal((rows, shape[1]), dtype=dt, key=key) * shape[-1] ** -0.5,
                                mx.zeros((shape[0] - rows, shape[1]), dtype=dt)])
        else:
            # drawn in bfloat16 directly: a float32 draw of one expert projection would be 1 GiB
            w = mx.random.normal(shape, dtype=dt, key=key) * shape[-1] ** -0.5
            if full.endswith(("o_proj.weight", "out_proj.weight", "down_proj.weight")):
                w = w * BRANCH_GAIN
        new.append((name, w.astype(dt)))
    module.update(tree_unflatten(new))


def _quantize(module, prefix: str, predicate, config_q: dict) -> None:
    import mlx.nn as nn

    def pred(path, m):
        if not hasattr(m, "to_quantized") or m.weight.shape[-1] % 64:
            return False
        full = f"{prefix}.{path}" if path else prefix
        out = predicate(full, m) if predicate else True
        if isinstance(out, dict):
            config_q[full] = out
        return out

    nn.quantize(module, group_size=64, bits=4, class_predicate=pred)


def _eval_in_parts(module) -> None:
    """Evaluate one array at a time, so only one large float32 draw exists at once."""
    import mlx.core as mx
    from specscope.engine_adapter.mlx_types import flat

    for _, v in flat(module.parameters()):
        mx.eval(v)


def build_real_shape_model(path, shape: str = "qwen3.5-35b-a3b", layers: int = 4, seed: int = 0,
                           progress=lambda done, total, what: None, overrides: dict | None = None) -> Path:
    """Write the model folder at ``path`` (atomically) and return it. ``progress(done, total, what)`` per part.

    ``overrides`` replaces text-config entries (the tests build the same layout at toy sizes)."""
    import mlx.core as mx
    import mlx.nn as nn
    from specscope.engine_adapter.mlx_types import flat
    from mlx_lm.utils import save_config

    from specscope.engine_adapter.mlx_lm_compat import get_classes

    from specscope.engine_adapter.model.demo_model import VOCAB_TARGET, model_folder
    from specscope.engine_adapter.model.demo_tokenizer import build_tokenizer

    config = _config(shape, layers)
    config["text_config"].update(cast(TextConfig, overrides or {}))
    path = Path(path).expanduser()
    if path.exists() and any(path.iterdir()):
        raise SpecscopeError(f"{path} exists and is not empty; choose a new directory")
    with model_folder(path, prefix=".shape-") as tmp:
        n_tokens = build_tokenizer(tmp, VOCAB_TARGET)
        model_class, args_class = get_classes(dict(config))  # mlx-lm's functions take a plain dict
        model = model_class(args_class.from_dict(dict(config)))  # lazy: nothing is allocated yet
        predicate = getattr(model, "quant_predicate", None)
        lm = model.language_model
        parts: list[tuple[str, Any, str | int]] = [("language_model.model.embed_tokens", lm.model, "embed_tokens")]
        parts += [(f"language_model.model.layers.{i}", lm.model.layers, i) for i in range(layers)]
        parts += [("language_model.model.norm", lm.model, "norm"), ("language_model.lm_head", lm, "lm_head")]
        quant: dict[str, Any] = {"group_size": 64, "bits": 4, "mode": "affine"}
        weight_map, total_size, total_params = {}, 0, 0
        n_shards = len(parts)
        for i, (prefix, owner, attr) in enumerate(parts):
            progress(i, n_shards, prefix.split(".", 2)[-1])
            module = owner[attr] if isinstance(attr, int) else getattr(owner, attr)
            _draw(module, prefix, n_tokens, seed)
            if hasattr(module, "to_quantized"):  # the embedding and the output head are quantized whole
                module = module.to_quantized(group_size=64, bits=4)
                if isinstance(attr, int):
                    owner[attr] = module
                else:
                    setattr(owner, attr, module)
            elif not isinstance(module, nn.RMSNorm):
                with contextlib.redirect_stdout(sys.stderr):
                    _quantize(module, prefix, predicate, quant)
            _eval_in_parts(module)
            weights = {f"{prefix}.{k}": v for k, v in flat(module.parameters())}
            shard = f"model-{i + 1:05d}-of-{n_shards:05d}.safetensors"
            mx.save_safetensors(str(tmp / shard), weights, metadata={"format": "mlx"})
            for k, v in weights.items():
                weight_map[k] = shard
                total_size += v.nbytes
                total_params += v.size
            del weights
            if isinstance(attr, int):  # release the part: only its name is needed from here on
                owner[attr] = nn.Module()
            else:
                setattr(owner, attr, nn.Module())
            del module
            mx.clear_cache()
        progress(n_shards, n_shards, "done")
        index = {"metadata": {"total_size": total_size, "total_parameters": total_params},
                 "weight_map": dict(sorted(weight_map.items()))}
        (tmp / "model.safetensors.index.json").write_text(json.dumps(index, indent=4))
        config["quantization"] = quant
        config["quantization_config"] = dict(quant)
        config["specscope_demo"] = {"kind": "shape", "shape": shape, "layers": layers, "seed": seed,
                                    "format_version": REAL_SHAPE_FORMAT_VERSION}
        save_config(dict(config), tmp / "config.json")
        (tmp / "generation_config.json").write_text(json.dumps({"eos_token_id": 0}, indent=2))
    return path
