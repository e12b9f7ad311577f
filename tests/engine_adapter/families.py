"""Tiny random-weight models of many mlx-lm families, written in the exact folder format mlx-lm loads.

A helper for tests, not a test module. Each family is a real mlx-lm ``model_type`` (the
``FAMILIES`` key is the model_type, except ``qwen3_tied`` / ``llama_tied``: ``qwen3`` /
``llama`` with tied embeddings) built with mlx-lm's own model classes
(``mlx_lm.utils._get_classes``) and written with ``save_model`` / ``save_config`` next to the
demo tokenizer, so ``specscope.engine_adapter.model.loader.load_model`` reads it exactly like a
downloaded checkpoint. Weights are float32 and never quantized (fast, exact) and seeded: the
same family and seed give the same files. Each build takes well under a second.

The initialisation is scaled so that greedy decoding neither collapses onto one repeated
token nor ignores the caches, since either would hide rollback errors:

- linear weights ~ N(0, 1/fan_in), residual-branch output projections scaled by a gain,
  norms at 1, biases 0, conv kernels ~ N(0, 0.3^2), the lm_head ~ N(0, 4/fan_in) with the rows
  past the tokenizer's vocabulary at 0 (as untrained rows score);
- untied models: embeddings ~ N(0, 1), so the input token stays visible (as in demo_model);
- tied models: small embeddings and stronger branches, else the tied head scores the input
  token's own embedding highest and decoding repeats it;
- SSMs: softplus(dt_bias) in [0.01, 0.3], exp(A_log) in [1, 8], D = 0.1, so that a state
  rolled back one token too few changes the greedy continuation (checked per family, seed 0,
  for every ArraysCache slot: see ``_TUNING`` for the families that needed more).

With seed 0 and the prompt the tests use, every family's 24-token greedy continuation has
>= 17 distinct tokens, and at most one of its 24 top-1/top-2 logit margins is below 1e-3.

    FAMILIES                  name -> config dict (what lands in config.json)
    UNBUILDABLE               name -> why it is left out with the installed mlx-lm
    build_family(name, path)  -> Path of the new folder
    family_dir(name, root)    -> Path, built once per process under ``root`` (for session fixtures)
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import sys
import tempfile
import zlib
from pathlib import Path

from specscope.engine_adapter.model.demo_model import VOCAB_TARGET, model_folder

SEED = 0
MAX_POS = 4096  # every family's context limit (>= 512 as the tests need)

# Output projections of residual branches (mixers, MLPs; attention separately): scaled by the family's gain.
_OUT_PROJ = {"out_proj", "down_proj", "w2", "fc2", "linear_out"}
_ATTN_OUT = {"o_proj", "dense", "c_proj", "wo"}
_EMBED = {"embed_tokens", "embeddings", "embedding", "wte"}


def _common(**kw) -> dict:
    base = {
        "vocab_size": VOCAB_TARGET,
        "max_position_embeddings": MAX_POS,
        "tie_word_embeddings": False,
        "eos_token_id": 0,
        # transformers' AutoConfig (read by mlx-lm's tokenizer loader) fills these in with
        # real-model ids outside this tiny vocabulary otherwise, and warns.
        "pad_token_id": 0,
        "bos_token_id": None,
        "rms_norm_eps": 1e-6,
    }
    base.update(kw)
    return base


FAMILIES: dict[str, dict] = {
    "mamba2": _common(
        model_type="mamba2",
        architectures=["Mamba2ForCausalLM"],
        hidden_size=64,
        num_hidden_layers=3,
        num_heads=4,
        head_dim=16,
        intermediate_size=64,
        state_size=16,
        n_groups=1,
        conv_kernel=4,
        use_bias=False,
        use_conv_bias=True,
        layer_norm_epsilon=1e-5,
        time_step_limit=[0.0, 1000.0],
        time_step_rank=4,
        expand=1,  # transformers checks hidden_size * expand == num_heads * head_dim
    ),
    "mamba": _common(
        model_type="mamba",
        architectures=["MambaForCausalLM"],
        hidden_size=64,
        num_hidden_layers=3,
        intermediate_size=128,
        state_size=8,
        conv_kernel=4,
        use_bias=False,
        use_conv_bias=True,
        time_step_rank=4,
    ),
    "nemotron_h": _common(
        model_type="nemotron_h",
        architectures=["NemotronHForCausalLM"],
        hidden_size=64,
        # Mamba, attention, MoE, Mamba, dense MLP: only M and * layers get a cache.
        hybrid_override_pattern=list("M*EM-"),
        intermediate_size=128,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        attention_bias=False,
        mamba_num_heads=4,
        mamba_head_dim=16,
        mamba_proj_bias=False,
        ssm_state_size=16,
        conv_kernel=4,
        n_groups=1,
        mlp_bias=False,
        layer_norm_epsilon=1e-5,
        use_bias=False,
        use_conv_bias=True,
        moe_intermediate_size=64,
        moe_shared_expert_intermediate_size=64,
        n_group=1,
        n_routed_experts=8,
        n_shared_experts=1,
        topk_group=1,
        num_experts_per_tok=2,
        norm_topk_prob=True,
        routed_scaling_factor=1.0,
        time_step_limit=[0.0, 1000.0],
    ),
    "granitemoehybrid": _common(
        model_type="granitemoehybrid",
        architectures=["GraniteMoeHybridForCausalLM"],
        hidden_size=64,
        num_hidden_layers=4,
        layer_types=["mamba", "attention", "mamba", "attention"],
        intermediate_size=128,
        num_attention_heads=4,
        num_key_value_heads=2,
        attention_bias=False,
        embedding_multiplier=1.0,
        attention_multiplier=0.25,
        logits_scaling=1.0,
        residual_multiplier=1.0,
        num_local_experts=4,
        num_experts_per_tok=2,
        shared_intermediate_size=64,
        mamba_n_heads=4,
        mamba_d_head=16,
        mamba_proj_bias=False,
        mamba_d_state=16,
        mamba_d_conv=4,
        mamba_n_groups=1,
        mamba_conv_bias=True,
        mamba_expand=1,  # transformers checks mamba_expand * hidden_size == mamba_n_heads * mamba_d_head
        position_embedding_type="rope",
        rope_theta=10000.0,
        tie_word_embeddings=True,
    ),
    "lfm2": _common(
        model_type="lfm2",
        architectures=["Lfm2ForCausalLM"],
        hidden_size=64,
        num_hidden_layers=4,
        layer_types=["conv", "full_attention", "conv", "full_attention"],
        num_attention_heads=4,
        num_key_value_heads=2,
        norm_eps=1e-5,
        conv_bias=False,
        conv_L_cache=3,
        block_dim=64,
        block_ff_dim=128,
        block_multiple_of=16,
        block_ffn_dim_multiplier=1.0,
        block_auto_adjust_ff_dim=False,
        rope_theta=1000000.0,
        tie_word_embeddings=True,
    ),
    "olmo_hybrid": _common(
        model_type="olmo_hybrid",
        architectures=["OlmoHybridForCausalLM"],
        hidden_size=64,
        num_hidden_layers=4,
        layer_types=["linear_attention", "full_attention", "linear_attention", "full_attention"],
        intermediate_size=128,
        num_attention_heads=4,
        num_key_value_heads=2,
        linear_num_key_heads=2,
        linear_num_value_heads=2,
        linear_key_head_dim=32,
        linear_value_head_dim=32,
        linear_conv_kernel_dim=4,
        linear_allow_neg_eigval=True,
        attention_bias=False,
        rope_theta=10000.0,
    ),
    "falcon_h1": _common(
        model_type="falcon_h1",
        architectures=["FalconH1ForCausalLM"],
        hidden_size=64,
        num_hidden_layers=3,
        intermediate_size=128,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        mamba_d_ssm=64,
        mamba_n_heads=4,
        mamba_d_head=16,
        mamba_d_state=16,
        mamba_d_conv=4,
        mamba_n_groups=1,
        mamba_expand=1,
        mamba_chunk_size=16,
        mamba_rms_norm=True,
        mamba_norm_before_gate=False,
        rope_theta=10000.0,
        tie_word_embeddings=False,
        # The muP multipliers are folded into the weights by sanitize() for raw checkpoints only.
        embedding_multiplier=1.0,
        lm_head_multiplier=1.0,
        attention_in_multiplier=1.0,
        attention_out_multiplier=1.0,
        key_multiplier=1.0,
        ssm_in_multiplier=1.0,
        ssm_out_multiplier=1.0,
        mlp_multipliers=[1.0, 1.0],
        ssm_multipliers=[1.0, 1.0, 1.0, 1.0, 1.0],
    ),
    "kimi_linear": _common(
        model_type="kimi_linear",
        architectures=["KimiLinearForCausalLM"],
        hidden_size=64,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=4,
        intermediate_size=128,
        head_dim=16,
        rope_theta=10000.0,
        model_max_length=MAX_POS,
        # KDA (delta-rule) layers are 1-based in this config; layer 4 (index 3) is MLA attention.
        linear_attn_config={"kda_layers": [1, 2, 3], "full_attn_layers": [4], "num_heads": 2,
                            "head_dim": 32, "short_conv_kernel_size": 4},
        num_experts=8,
        num_experts_per_token=2,
        num_shared_experts=1,
        moe_intermediate_size=32,
        first_k_dense_replace=1,
        kv_lora_rank=32,
        qk_nope_head_dim=16,
        qk_rope_head_dim=8,
        v_head_dim=16,
        mla_use_nope=True,
        use_grouped_topk=True,
        num_expert_group=1,
        topk_group=1,
    ),
    "jamba": _common(
        model_type="jamba",
        architectures=["JambaForCausalLM"],
        hidden_size=64,
        num_hidden_layers=4,
        intermediate_size=128,
        num_attention_heads=4,
        num_key_value_heads=2,
        attn_layer_offset=1,
        attn_layer_period=2,
        expert_layer_offset=1,
        expert_layer_period=2,
        mamba_d_conv=4,
        mamba_d_state=8,
        mamba_expand=2,
        mamba_dt_rank=8,
        num_experts=4,
        num_experts_per_tok=2,
        tie_word_embeddings=True,
    ),
    "gpt_oss": _common(
        model_type="gpt_oss",
        architectures=["GptOssForCausalLM"],
        hidden_size=64,
        num_hidden_layers=4,
        layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
        sliding_window=8,
        num_local_experts=4,
        num_experts_per_tok=2,
        intermediate_size=64,
        head_dim=16,
        num_attention_heads=4,
        num_key_value_heads=2,
        rope_theta=150000,
    ),
    "gemma3_text": _common(
        model_type="gemma3_text",
        architectures=["Gemma3ForCausalLM"],
        hidden_size=64,
        num_hidden_layers=4,
        intermediate_size=128,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        query_pre_attn_scalar=16,
        sliding_window=8,
        sliding_window_pattern=2,
        rope_theta=1000000.0,
        rope_local_base_freq=10000.0,
        tie_word_embeddings=True,
    ),
    "qwen3_tied": _common(
        model_type="qwen3",
        architectures=["Qwen3ForCausalLM"],
        hidden_size=64,
        num_hidden_layers=3,
        intermediate_size=128,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        rope_theta=1000000,
        tie_word_embeddings=True,
    ),
    "llama_tied": _common(
        model_type="llama",
        architectures=["LlamaForCausalLM"],
        hidden_size=64,
        num_hidden_layers=3,
        intermediate_size=128,
        num_attention_heads=4,
        num_key_value_heads=2,
        rope_theta=10000.0,
        tie_word_embeddings=True,
    ),
    "qwen3_next": _common(
        model_type="qwen3_next",
        architectures=["Qwen3NextForCausalLM"],
        hidden_size=64,
        num_hidden_layers=4,
        full_attention_interval=2,
        intermediate_size=128,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        linear_num_value_heads=4,
        linear_num_key_heads=2,
        linear_key_head_dim=32,
        linear_value_head_dim=16,
        linear_conv_kernel_dim=4,
        num_experts=8,
        num_experts_per_tok=2,
        decoder_sparse_step=1,
        shared_expert_intermediate_size=64,
        mlp_only_layers=[],
        moe_intermediate_size=32,
        norm_topk_prob=True,
        rope_theta=10000000.0,
        partial_rotary_factor=0.25,
    ),
    "qwen3_5_moe": {
        "model_type": "qwen3_5_moe",
        "architectures": ["Qwen3_5MoeForConditionalGeneration"],
        "tie_word_embeddings": False,
        "eos_token_id": 0,
        "pad_token_id": 0,
        "bos_token_id": None,
        # The demo hybrid's layout (3 Gated DeltaNet layers per full-attention layer), shrunk.
        "text_config": _common(
            model_type="qwen3_5_moe_text",
            hidden_size=64,
            num_hidden_layers=4,
            full_attention_interval=4,
            intermediate_size=128,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            linear_num_value_heads=4,
            linear_num_key_heads=2,
            linear_key_head_dim=32,
            linear_value_head_dim=16,
            linear_conv_kernel_dim=4,
            num_experts=8,
            num_experts_per_tok=2,
            moe_intermediate_size=32,
            shared_expert_intermediate_size=64,
            decoder_sparse_step=1,
            norm_topk_prob=True,
            rope_parameters={
                "rope_type": "default",
                "rope_theta": 10000000,
                "partial_rotary_factor": 0.25,
                "mrope_section": [1, 1, 0],
            },
        ),
    },
    "qwen3_moe": _common(
        model_type="qwen3_moe",
        architectures=["Qwen3MoeForCausalLM"],
        hidden_size=64,
        num_hidden_layers=3,
        intermediate_size=128,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        num_experts=8,
        num_experts_per_tok=2,
        decoder_sparse_step=1,
        mlp_only_layers=[],
        moe_intermediate_size=32,
        norm_topk_prob=True,
        rope_theta=1000000.0,
    ),
    "deepseek_v3": _common(
        model_type="deepseek_v3",
        architectures=["DeepseekV3ForCausalLM"],
        hidden_size=64,
        num_hidden_layers=3,
        intermediate_size=128,
        moe_intermediate_size=32,
        num_attention_heads=4,
        num_key_value_heads=4,
        n_shared_experts=1,
        n_routed_experts=8,
        routed_scaling_factor=1.0,
        kv_lora_rank=32,
        q_lora_rank=48,
        qk_rope_head_dim=8,
        v_head_dim=16,
        qk_nope_head_dim=16,
        topk_method="noaux_tc",
        scoring_func="sigmoid",
        norm_topk_prob=True,
        n_group=1,
        topk_group=1,
        num_experts_per_tok=2,
        moe_layer_freq=1,
        first_k_dense_replace=1,
        rope_theta=10000.0,
    ),
    "glm4_moe": _common(
        model_type="glm4_moe",
        architectures=["Glm4MoeForCausalLM"],
        hidden_size=64,
        num_hidden_layers=3,
        intermediate_size=128,
        moe_intermediate_size=32,
        norm_topk_prob=True,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        n_group=1,
        topk_group=1,
        n_shared_experts=1,
        n_routed_experts=8,
        routed_scaling_factor=1.0,
        num_experts_per_tok=2,
        first_k_dense_replace=1,
        rope_theta=10000.0,
        rope_scaling=None,
        use_qk_norm=True,
        attention_bias=False,
        partial_rotary_factor=0.5,
    ),
    "plamo2": _common(
        model_type="plamo2",
        architectures=["Plamo2ForCausalLM"],
        hidden_size=64,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        hidden_size_per_head=16,
        attention_window_size=MAX_POS,
        mamba_d_state=16,
        mamba_d_conv=4,
        mamba_num_heads=4,
        mamba_step=2,
        mamba_chunk_size=16,
        mamba_enabled=True,
        intermediate_size=128,
        tie_word_embeddings=True,
    ),
    "recurrent_gemma": _common(
        model_type="recurrent_gemma",
        architectures=["RecurrentGemmaForCausalLM"],
        hidden_size=64,
        num_hidden_layers=3,
        intermediate_size=192,
        num_attention_heads=4,
        num_key_value_heads=1,
        attention_bias=False,
        conv1d_width=4,
        logits_soft_cap=30.0,
        rope_theta=10000.0,
        attention_window_size=8,
        block_types=["recurrent", "recurrent", "attention"],
        embeddings_scale_by_sqrt_dim=True,
    ),
    "bailing_hybrid": _common(
        model_type="bailing_hybrid",
        architectures=["BailingMoeV2_5ForCausalLM"],
        hidden_size=64,
        num_hidden_layers=4,
        intermediate_size=128,
        moe_intermediate_size=32,
        num_attention_heads=4,
        num_key_value_heads=4,
        num_experts=8,
        num_experts_per_tok=2,
        num_shared_experts=1,
        n_group=1,
        topk_group=1,
        first_k_dense_replace=1,
        layer_group_size=2,
        group_norm_size=1,
        rope_theta=10000.0,
        routed_scaling_factor=1.0,
        head_dim=16,
        kv_lora_rank=32,
        q_lora_rank=48,
        qk_rope_head_dim=8,
        qk_nope_head_dim=16,
        v_head_dim=16,
    ),
}

# Init scales. ``gain`` multiplies residual-branch output projections. Untied models keep the
# token's own embedding visible (like demo_model's 0.15 gain), which makes decoding lively. A tied
# head scores every token against the final state, and with a dominant input embedding the
# input token itself wins and decoding repeats one token forever: tied families get smaller
# embeddings (``embed_std``) and stronger branches so the state moves away from the input token.
_UNTIED = {"gain": 0.5, "attn_gain": 1.0, "embed_std": 1.0}
_TIED = {"gain": 1.5, "attn_gain": 0.6, "embed_std": 0.05}
_HEAD_GAIN = 2.0  # lm_head scale: logits std ~2, so top-1/top-2 margins are rarely tiny
# Recurrent layers: the state must matter, or a state rollback error would not show in the
# logits. The state's share of an SSM's output grows with dt * A and shrinks with the D skip;
# a rolled-back-too-little state (one extra token folded in) flips greedy tokens with these.
SSM_DT = (0.01, 0.3)  # softplus(dt_bias) range
SSM_A = (1.0, 8.0)  # exp(A_log) range (decay per step exp(-dt * A))
SSM_D = 0.1  # skip connection (1.0 in trained models, where B and C are large)
RGLRU_SOFTPLUS = (0.005, 0.05)  # RG-LRU a = exp(-8 * gate * softplus(p)), about 0.9
_TUNING: dict[str, dict] = {
    # Mamba v1 has no norm on the SSM output and takes B, C from a fan-in-scaled x_proj: left at
    # the default scale the whole mixer is a tiny perturbation and its state never matters.
    "mamba": {"gain": 1.0, "embed_std": 0.3, "scale": {"x_proj": 4.0, "conv1d": 3.0}},
    # Griffin multiplies embeddings by sqrt(hidden_size) (= 8): undo it so the branches show.
    "recurrent_gemma": {"embed_std": 0.125},
    # Stronger recurrent / attention outputs where, at the default scale, a state or KV rollback
    # error moved the logits but never the greedy tokens.
    "olmo_hybrid": {"scale": {"linear_attn.o_proj": 3.0}},
    "qwen3_5_moe": {"scale": {"linear_attn.out_proj": 3.0, "self_attn.o_proj": 3.0}},
    "granitemoehybrid": {"scale": {"self_attn.o_proj": 3.0}},
}


def _tuning(name: str) -> dict:
    tied = bool(_text(FAMILIES[name]).get("tie_word_embeddings", False))
    return {**(_TIED if tied else _UNTIED), **_TUNING.get(name, {}), "tied": tied}


# Families asked for but left out, with the reason. Empty: with mlx-lm 0.32.x every family
# above builds, loads through specscope's loader and decodes.
UNBUILDABLE: dict[str, str] = {}


def _key_index(name: str) -> int:
    return zlib.crc32(name.encode()) % 1_000_003


def _inv_softplus(x):
    import mlx.core as mx

    return mx.log(mx.expm1(x))


def _init_value(
    name: str,
    shape: tuple,
    key,
    n_tokens: int,
    gain: float,
    embed_std: float,
    tied: bool,
    attn_gain: float | None = None,
    scale: dict | None = None,
):
    w = _base_value(name, shape, key, n_tokens, gain, embed_std, tied, attn_gain)
    for fragment, factor in (scale or {}).items():  # "x_proj" or "linear_attn.o_proj": a module path piece
        if f".{fragment}." in f".{name}":
            w = w * factor
    return w


def _base_value(name, shape, key, n_tokens, gain, embed_std, tied, attn_gain):
    import mlx.core as mx

    parts = name.split(".")
    leaf = parts[-1]
    parent = parts[-2] if len(parts) > 1 else ""
    if leaf == "dt_bias" or (parent == "dt_proj" and leaf == "bias"):
        return _inv_softplus(mx.random.uniform(*SSM_DT, shape, key=key))
    if leaf == "A_log":
        return mx.log(mx.random.uniform(*SSM_A, shape, key=key))
    if leaf == "recurrent_param":  # RG-LRU: a = exp(-8 * gate * softplus(p)) close to 1
        return _inv_softplus(mx.random.uniform(*RGLRU_SOFTPLUS, shape, key=key))
    if leaf == "D":
        return mx.full(shape, SSM_D)
    if leaf == "bias" or leaf.endswith("_bias") or leaf == "sinks":
        return mx.zeros(shape)
    if "norm" in name and len(shape) == 1:
        return mx.ones(shape)
    if len(shape) == 3 and "conv" in parent:
        return mx.random.normal(shape, key=key) * 0.3
    if parent in _EMBED and leaf == "weight":
        w = mx.random.normal(shape, key=key) * embed_std
        if tied:  # rows the tokenizer never makes score zero, as untrained rows do
            w = mx.concatenate([w[:n_tokens], mx.zeros((shape[0] - n_tokens, shape[1]))])
        return w
    if len(shape) == 1:
        return mx.random.normal(shape, key=key) * 0.1
    w = mx.random.normal(shape, key=key) * shape[-1] ** -0.5
    if parent in _OUT_PROJ:
        w = w * gain
    if parent in _ATTN_OUT:
        w = w * (gain if attn_gain is None else attn_gain)
    if parent == "lm_head":
        w = w * _HEAD_GAIN
        w = mx.concatenate([w[:n_tokens], mx.zeros((shape[0] - n_tokens, shape[1]))])
    return w


def _random_params(model, seed: int, n_tokens: int, **tuning) -> None:
    import mlx.core as mx
    from mlx.utils import tree_flatten, tree_unflatten

    out = []
    for name, value in sorted(tree_flatten(model.parameters())):
        key = mx.random.key(seed * 1_000_003 + _key_index(name))
        w = _init_value(name, tuple(value.shape), key, n_tokens, **tuning)
        out.append((name, w.astype(mx.float32)))
    model.update(tree_unflatten(out))
    mx.eval(model.parameters())


def _text(config: dict) -> dict:
    return {**config, **config.get("text_config", {})}


_TOKENIZER: dict[str, object] = {}


def _tokenizer_files(out: Path) -> int:
    """Write the demo tokenizer into ``out`` (trained once per process, then copied); return its size."""
    from specscope.engine_adapter.model.demo_tokenizer import build_tokenizer

    src = _TOKENIZER.get("dir")
    if src is None or not (src / "tokenizer.json").exists():
        src = Path(tempfile.mkdtemp(prefix="specscope-families-tok-"))
        atexit.register(shutil.rmtree, src, True)
        _TOKENIZER["n"] = build_tokenizer(src, VOCAB_TARGET)
        _TOKENIZER["dir"] = src
    for f in src.iterdir():
        shutil.copy(f, out / f.name)
    return int(_TOKENIZER["n"])


def build_family(name: str, path: str | os.PathLike, seed: int = SEED) -> Path:
    """Write the tiny ``name`` model folder at ``path`` (must be new or empty) and return it."""
    if name not in FAMILIES:
        why = UNBUILDABLE.get(name)
        raise KeyError(f"unknown family {name!r}" + (f" (left out: {why})" if why else ""))
    import mlx.core as mx
    from mlx_lm.utils import _get_classes, save_config, save_model

    path = Path(path)
    if path.exists() and any(path.iterdir()):
        raise FileExistsError(f"{path} exists and is not empty")
    with model_folder(path, prefix=f".{name}-") as tmp:
        n_tokens = _tokenizer_files(tmp)
        config = json.loads(json.dumps(FAMILIES[name]))
        model_class, args_class = _get_classes(config)
        with mx.stream(mx.cpu):
            model = model_class(args_class.from_dict(config))
            _random_params(model, seed * 7919 + _key_index(name), n_tokens, **_tuning(name))
            with contextlib.redirect_stdout(sys.stderr):
                save_model(tmp, model)
        save_config(config, tmp / "config.json")
        (tmp / "generation_config.json").write_text(json.dumps({"eos_token_id": 0}, indent=2))
    return path


_BUILT: dict[tuple[str, str], Path] = {}
_DEFAULT_ROOT: list[Path] = []


def family_dir(name: str, root: str | os.PathLike | None = None) -> Path:
    """The ``name`` model under ``root``, built on first use in this process and reused after.

    Meant for a session-scoped fixture (``root=tmp_path_factory.mktemp("families")``); without a
    root the models go to a temporary folder removed when the process exits.
    """
    if root is None:
        if not _DEFAULT_ROOT:
            _DEFAULT_ROOT.append(Path(tempfile.mkdtemp(prefix="specscope-families-")))
            atexit.register(shutil.rmtree, _DEFAULT_ROOT[0], True)
        root = _DEFAULT_ROOT[0]
    root = Path(root)
    cache_key = (name, str(root.resolve()))
    target = _BUILT.get(cache_key)
    if target is None or not (target / "config.json").exists():
        target = root / name
        if not (target / "config.json").exists():
            shutil.rmtree(target, ignore_errors=True)  # a half-built folder from an interrupted build
            build_family(name, target)
        _BUILT[cache_key] = target
    return target
