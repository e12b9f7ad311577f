"""A model folder's ``config.json`` as specscope reads and writes it: the fields it uses, typed.

Every record is ``total=False``: a config.json says what its model needs and nothing more, and the fields
specscope does not use (a model family's own options) pass through untouched at run time (the records are
dicts). mlx-lm's functions that take a config (``get_classes``, ``ModelArgs.from_dict``, ``save_config``) are
given ``dict(config)``, the one place a record becomes a plain dict again. No MLX import here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict, cast


class RopeParameters(TypedDict, total=False):
    rope_type: str
    rope_theta: float
    partial_rotary_factor: float
    mrope_section: list[int]


class TextConfig(TypedDict, total=False):
    """A text model's config: a plain model's whole config.json, or the ``text_config`` of a multimodal one merged
    over its top level (``text_of``)."""
    model_type: str
    architectures: list[str]
    hidden_size: int
    vocab_size: int
    num_hidden_layers: int
    intermediate_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rms_norm_eps: float
    rope_theta: float
    rope_parameters: RopeParameters
    max_position_embeddings: int
    tie_word_embeddings: bool
    eos_token_id: int | list[int]
    torch_dtype: str
    # hybrid attention (Qwen3.5 / Qwen3-Next): one full-attention layer every ``full_attention_interval``
    full_attention_interval: int
    layer_types: list[str]
    linear_num_value_heads: int
    linear_num_key_heads: int
    linear_key_head_dim: int
    linear_value_head_dim: int
    linear_conv_kernel_dim: int
    # mixture of experts (the names vary by family: each one specscope reads)
    num_experts: int
    num_experts_per_tok: int
    num_experts_per_token: int
    moe_topk: int
    n_activated_experts: int
    moe_intermediate_size: int
    shared_expert_intermediate_size: int
    decoder_sparse_step: int
    norm_topk_prob: bool
    # the checkpoint's own MTP head (Qwen3.5's, DeepSeek-V3's / GLM-4.5's)
    mtp_num_hidden_layers: int
    num_nextn_predict_layers: int


class DemoRecord(TypedDict, total=False):
    """``specscope_demo``: what a model specscope generated is (``demo_labels``, ``run/session_models``)."""
    kind: str               # "hybrid", "dense", "draft", "shape", "dflash", "trained", "trained-draft", ...
    seed: int
    format_version: int
    shape: str              # a ``--shape`` slice: the released model it imitates
    layers: int             # ... and how many of its layers
    target: str             # a demo DFlash drafter: the target it was written for
    target_released_layers: int
    layer_map: str
    size: str               # a trained demo: which training (with seed, steps, train_seconds)
    steps: int
    train_seconds: int


class DFlashBlock(TypedDict, total=False):
    """A DFlash drafter's ``dflash_config`` (``dflash_format`` says what each reference does with it)."""
    block_size: int
    target_layer_ids: list[int]
    mask_token_id: int
    # DFlash2's (``dflash2_format``)
    conv_kernel_size: int
    conv_group_size: int
    selector_rank: int
    selector_top_k: int
    final_logit_softcapping: float
    output_multiplier: float
    input_embedding_scale: float


class ModelConfig(TextConfig, total=False):
    """A whole config.json: a text model's fields at its top level (a plain model, a DFlash drafter), or under
    ``text_config`` (a multimodal one), and what specscope writes beside them."""
    text_config: TextConfig
    # mlx-lm's quantization: group_size, bits, mode, and a module path -> its own settings where they differ
    quantization: dict[str, Any]
    quantization_config: dict[str, Any]
    specscope_demo: DemoRecord
    # a DFlash drafter's
    dflash_config: DFlashBlock
    block_size: int
    num_target_layers: int
    attention_bias: bool
    rope_scaling: dict[str, Any] | None
    sliding_window: int  # DFlash2's sliding_attention layers (``layer_types``)
    is_causal: bool
    final_logit_softcapping: float


def text_of(config: ModelConfig) -> TextConfig:
    """The text model's config: ``text_config`` over the top level (a plain model's config is its own)."""
    return cast(TextConfig, {**config, **(config.get("text_config") or {})})


def read_config(folder: str | Path) -> ModelConfig | None:
    """``folder/config.json``, or None when it is missing, unreadable or not a JSON object."""
    try:
        d = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return cast(ModelConfig, d) if isinstance(d, dict) else None
