"""Synthetic demo models written in exactly the on-disk format mlx-lm loads.

Three kinds, all sharing one tokenizer, one embedding and one output head (so
their greedy predictions partly agree, which gives drafting something to do):

- ``hybrid``: Qwen3.5-MoE layout (``qwen3_5_moe``), 3 Gated DeltaNet layers per
  full-attention layer, routed + shared experts, 4-bit, plus MTP-head weights
  (``mtp.*``) in the original checkpoint's naming, unquantized bf16.
- ``dense``: a plain ``qwen3`` model, for comparisons with mlx-lm's own
  speculative path (which refuses hybrid models).
- ``draft``: a small ``qwen3`` model to use as ``--draft-model`` for either.

Weights are random but seeded: the same seed gives the same files.

``--demo`` loads the *trained* demo shipped in the package (``default_demo_path``): the same
``qwen3_5_moe`` layout, much smaller, trained offline on code, English and Chinese (see
``training/``), with a trained MTP head and 2-layer draft model. The random ones stay for fast
tests (``demo-model --random``, ``SPECSCOPE_DEMO=random``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
from typing import cast
from pathlib import Path

from specscope.engine_adapter.model.config_json import ModelConfig, TextConfig
from specscope.demo_labels import SYNTHETIC_NOTE, TRAINED_NOTE, demo_note  # noqa: F401 (re-exported)
from specscope.errors import SpecscopeError
from specscope.engine_adapter.model.shipped import TRAINED_KINDS, trained_demo_path  # noqa: F401 (its users import them here)

DEMO_KINDS = ("hybrid", "dense", "draft")
DEMO_SEED = 0
DEMO_FORMAT_VERSION = 3  # bump when the generated files change (3: the window of Qwen3.5-35B-A3B)
DEMO_WINDOW = 262_144  # max_position_embeddings: the window of the model the demo imitates (Qwen3.5-35B-A3B)
HIDDEN = 512
VOCAB_TARGET = 4096  # model vocabulary; the tokenizer uses a prefix of it, the rest is padding
# Residual branches are scaled down so the token's own embedding stays visible
# in the output: random models then agree with each other part of the time.
BRANCH_GAIN = float(os.environ.get("SPECSCOPE_GAIN", "0.15"))


def demo_text_config(kind: str, vocab: int) -> TextConfig:
    common: TextConfig = {
        "hidden_size": HIDDEN,
        "vocab_size": vocab,
        "rms_norm_eps": 1e-6,
        "max_position_embeddings": DEMO_WINDOW,
        "tie_word_embeddings": False,
        "eos_token_id": 0,
    }
    if kind == "hybrid":
        return {
            **common,
            "model_type": "qwen3_5_moe_text",
            "num_hidden_layers": 8,
            "full_attention_interval": 4,
            "num_attention_heads": 8,
            "num_key_value_heads": 2,
            "head_dim": 64,
            "linear_num_value_heads": 8,
            "linear_num_key_heads": 4,
            "linear_key_head_dim": 64,
            "linear_value_head_dim": 64,
            "linear_conv_kernel_dim": 4,
            "num_experts": 16,
            "num_experts_per_tok": 4,
            "moe_intermediate_size": 256,
            "shared_expert_intermediate_size": 512,
            "decoder_sparse_step": 1,
            "norm_topk_prob": True,
            "intermediate_size": 1024,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 10000000,
                "partial_rotary_factor": 0.25,
                "mrope_section": [11, 11, 10],
            },
            "mtp_num_hidden_layers": 1,
        }
    layers, inter = (6, 1536) if kind == "dense" else (2, 512)
    return {
        **common,
        "model_type": "qwen3",
        "num_hidden_layers": layers,
        "intermediate_size": inter,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "rope_theta": 1000000,
    }


def _config(kind: str, vocab: int) -> ModelConfig:
    text = demo_text_config(kind, vocab)
    if kind == "hybrid":
        return {
            "model_type": "qwen3_5_moe",
            "architectures": ["Qwen3_5MoeForConditionalGeneration"],
            "text_config": text,
            "tie_word_embeddings": False,
            "eos_token_id": 0,
        }
    return {**text, "architectures": ["Qwen3ForCausalLM"]}


def _random_params(model, seed: int, shared_seed: int, n_tokens: int):
    """Seeded weights for every parameter, named so shared ones coincide."""
    import mlx.core as mx
    from mlx.utils import tree_unflatten

    from specscope.engine_adapter.mlx_types import flat

    out = []
    for i, (name, value) in enumerate(sorted(flat(model.parameters()))):
        shared = name.endswith("embed_tokens.weight") or name.endswith("lm_head.weight")
        key = mx.random.key((shared_seed if shared else seed) * 100003 + (hash_name(name.split(".")[-2]) if shared else i))
        shape, dt = value.shape, mx.float32
        if "norm" in name and value.ndim == 1:
            w = mx.ones(shape)
        elif name.endswith("A_log"):
            w = mx.log(mx.random.uniform(1.0, 16.0, shape, key=key))
            dt = mx.float32
        elif name.endswith("dt_bias"):
            w = mx.ones(shape)
        elif name.endswith("conv1d.weight"):
            w = mx.random.normal(shape, key=key) * 0.3
        elif name.endswith("embed_tokens.weight"):
            w = mx.random.normal(shape, key=key)
        else:
            fan_in = shape[-1]
            w = mx.random.normal(shape, key=key) * fan_in**-0.5
            if any(name.endswith(s) for s in ("o_proj.weight", "out_proj.weight", "down_proj.weight")):
                w = w * BRANCH_GAIN
            if name.endswith("lm_head.weight"):
                # Padding rows (ids the tokenizer never makes) score zero, as untrained rows do.
                w = mx.concatenate([w[:n_tokens], mx.zeros((shape[0] - n_tokens, shape[1]))])
        out.append((name, w.astype(dt)))
    model.update(tree_unflatten(out))
    mx.eval(model.parameters())


def hash_name(name: str) -> int:
    """A stable (not Python-hash-randomized) small integer for a name."""
    import zlib

    return zlib.crc32(name.encode()) % 100000


def _mtp_weights(text: TextConfig, seed: int) -> dict:  # dict: tensor name -> array
    """MTP head tensors in the original (Hugging Face) checkpoint naming."""
    import mlx.core as mx

    H = text["hidden_size"]
    heads, kv, hd = text["num_attention_heads"], text["num_key_value_heads"], text["head_dim"]
    E, I, S = text["num_experts"], text["moe_intermediate_size"], text["shared_expert_intermediate_size"]
    shapes = {
        "mtp.fc.weight": (H, 2 * H),
        "mtp.pre_fc_norm_embedding.weight": (H,),
        "mtp.pre_fc_norm_hidden.weight": (H,),
        "mtp.norm.weight": (H,),
        "mtp.layers.0.input_layernorm.weight": (H,),
        "mtp.layers.0.post_attention_layernorm.weight": (H,),
        "mtp.layers.0.self_attn.q_proj.weight": (2 * heads * hd, H),
        "mtp.layers.0.self_attn.k_proj.weight": (kv * hd, H),
        "mtp.layers.0.self_attn.v_proj.weight": (kv * hd, H),
        "mtp.layers.0.self_attn.o_proj.weight": (H, heads * hd),
        "mtp.layers.0.self_attn.q_norm.weight": (hd,),
        "mtp.layers.0.self_attn.k_norm.weight": (hd,),
        "mtp.layers.0.mlp.gate.weight": (E, H),
        "mtp.layers.0.mlp.shared_expert_gate.weight": (1, H),
        "mtp.layers.0.mlp.shared_expert.gate_proj.weight": (S, H),
        "mtp.layers.0.mlp.shared_expert.up_proj.weight": (S, H),
        "mtp.layers.0.mlp.shared_expert.down_proj.weight": (H, S),
    }
    for e in range(E):
        p = f"mtp.layers.0.mlp.experts.{e}"
        shapes[f"{p}.gate_proj.weight"] = (I, H)
        shapes[f"{p}.up_proj.weight"] = (I, H)
        shapes[f"{p}.down_proj.weight"] = (H, I)
    out = {}
    for i, (name, shape) in enumerate(sorted(shapes.items())):
        key = mx.random.key(seed * 7919 + 17 + i)
        if len(shape) == 1:
            # Original checkpoints store 1+w norms: zeros mean unit scale.
            w = mx.zeros(shape)
        elif name == "mtp.fc.weight":
            # Mostly pass the next token's embedding through, a little hidden state.
            eye = mx.eye(H)
            w = mx.concatenate([eye, 0.1 * eye], axis=1) + 0.002 * mx.random.normal(shape, key=key)
        else:
            w = mx.random.normal(shape, key=key) * shape[-1] ** -0.5
            if name.endswith(("o_proj.weight", "down_proj.weight")):
                w = w * BRANCH_GAIN
        out[name] = w.astype(mx.bfloat16)
    return out


@contextlib.contextmanager
def model_folder(path: Path, prefix: str = ".model-"):
    """A temporary folder beside ``path`` to write a model into, renamed onto ``path`` only when complete."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=path.parent))
    try:
        yield tmp
        if path.exists():
            path.rmdir()
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def build_demo_model(path: str | os.PathLike, kind: str = "hybrid", seed: int = DEMO_SEED) -> Path:
    """Write a demo model directory at ``path`` (atomically) and return it."""
    if kind not in DEMO_KINDS:
        raise SpecscopeError(f"unknown demo model kind {kind!r}; choose one of {', '.join(DEMO_KINDS)}")
    import mlx.core as mx
    from mlx_lm.utils import quantize_model, save_config, save_model

    from specscope.engine_adapter.mlx_lm_compat import get_classes

    from specscope.engine_adapter.model.demo_tokenizer import build_tokenizer

    path = Path(path).expanduser()
    if path.exists() and any(path.iterdir()):
        raise SpecscopeError(f"{path} exists and is not empty; choose a new directory")
    with model_folder(path, prefix=".demo-") as tmp:
        n_tokens = build_tokenizer(tmp, VOCAB_TARGET)
        config = _config(kind, VOCAB_TARGET)
        plain = dict(config)  # mlx-lm's functions take a plain dict
        model_class, args_class = get_classes(plain)
        model = model_class(args_class.from_dict(plain))
        _random_params(model, seed=seed * 10 + DEMO_KINDS.index(kind), shared_seed=seed, n_tokens=n_tokens)
        predicate = getattr(model, "quant_predicate", None)
        with contextlib.redirect_stdout(sys.stderr):  # mlx-lm prints an [INFO] line; stdout may carry JSON
            model, quantized = quantize_model(model, plain, group_size=64, bits=4, quant_predicate=predicate)
        config = cast(ModelConfig, quantized)
        save_model(tmp, model)
        if kind == "hybrid":
            mtp = _mtp_weights(config["text_config"], seed)
            mx.save_safetensors(str(tmp / "model-mtp.safetensors"), mtp, metadata={"format": "pt"})
            index_path = tmp / "model.safetensors.index.json"
            index = json.loads(index_path.read_text())
            index["weight_map"].update({k: "model-mtp.safetensors" for k in mtp})
            index["weight_map"] = dict(sorted(index["weight_map"].items()))
            index_path.write_text(json.dumps(index, indent=4))
        config["specscope_demo"] = {"kind": kind, "seed": seed, "format_version": DEMO_FORMAT_VERSION}
        save_config(dict(config), tmp / "config.json")
        (tmp / "generation_config.json").write_text(json.dumps({"eos_token_id": 0}, indent=2))
    return path


def specscope_home() -> Path:
    """Where specscope keeps its cache (demo models): SPECSCOPE_HOME, else the user cache dir."""
    if os.environ.get("SPECSCOPE_HOME"):
        return Path(os.environ["SPECSCOPE_HOME"]).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("specscope", appauthor=False))


def demo_model_path(kind: str = "hybrid") -> Path:
    """The cached demo model of this kind, built on first use.

    Several processes may ask at once (the app's inspector and a worker): a
    lock file serialises the build where the OS has one, and a lost race is
    fine either way because the build lands with one atomic rename.
    """
    target = specscope_home() / f"demo-{kind}-v{DEMO_FORMAT_VERSION}"
    if (target / "config.json").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(target.parent / f".demo-{kind}.lock"):
        if (target / "config.json").exists():
            return target
        if target.exists():
            shutil.rmtree(target)  # a half-built folder from an older, killed build
        tmp = target.parent / f".build-{kind}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        build_demo_model(tmp, kind)
        try:
            os.replace(tmp, target)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            if not (target / "config.json").exists():
                raise
    return target


@contextlib.contextmanager
def file_lock(path: Path):
    try:
        import fcntl
    except ImportError:  # no advisory locks here: rely on the atomic rename
        yield
        return
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# -- the tiny trained demo (shipped) -------------------------------------------------------------------

def use_random_demo() -> bool:
    """SPECSCOPE_DEMO=random makes ``--demo`` use the random (synthetic) demo everywhere."""
    return os.environ.get("SPECSCOPE_DEMO", "").strip().lower() in ("random", "synthetic")


def default_demo_path(kind: str = "hybrid", variant: str | None = None) -> Path:
    """What ``--demo`` loads: the shipped trained demo, else (SPECSCOPE_DEMO=random, a dense model, or an
    install without it) the random one, built once into the cache. ``variant`` ("trained" or "random") asks for
    one of them whatever the environment says."""
    if variant not in (None, "trained", "random"):
        raise SpecscopeError(f"unknown demo variant {variant!r}; choose trained or random")
    random = use_random_demo() if variant is None else variant == "random"
    trained = None if random else trained_demo_path(kind)
    if variant == "trained" and trained is None and kind in TRAINED_KINDS:
        raise SpecscopeError(f"this install has no trained {kind} demo")
    return trained if trained is not None else demo_model_path(kind)


def copy_trained_demo(path: str | os.PathLike, kind: str = "hybrid") -> Path:
    """Copy the shipped trained demo (target with its MTP head, or the draft model) to ``path``."""
    src = trained_demo_path(kind)
    if src is None:
        raise SpecscopeError(f"this install has no trained {kind} demo; use --random" if kind in TRAINED_KINDS
                             else f"there is no trained {kind} demo; use --random")
    path = Path(path).expanduser()
    if path.exists() and any(path.iterdir()):
        raise SpecscopeError(f"{path} exists and is not empty; choose a new directory")
    with model_folder(path, prefix=".demo-") as tmp:
        for f in sorted(src.iterdir()):
            if f.is_file():
                shutil.copy(f, tmp / f.name)
    return path
