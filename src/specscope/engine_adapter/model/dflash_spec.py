"""A DFlash drafter folder's checked description (``DFlashSpec``): a leaf that ``dflash_format`` (the reader of DFlash
folders) and ``dflash2_format`` (what DFlash2 adds) both build on, so neither imports the other's reader."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from specscope.engine_adapter.model.config_json import ModelConfig


class DFlashDescription(TypedDict):
    """A DFlash drafter folder as ``specscope inspect`` and ``check`` show it (``DFlashSpec.describe``)."""
    kind: str                       # "dflash" or "dflash2"
    path: str
    block_size: int
    max_draft_tokens: int
    target_layer_ids: list[int]
    target_layer_ids_derived: bool
    num_target_layers: int
    mask_token_id: int
    hidden_size: int
    vocab_size: int
    layers: int
    parameters: int


@dataclass
class DFlashSpec:
    """A DFlash drafter folder that passed the format checks."""

    path: Path
    config: ModelConfig
    variant: str  # "dflash" or "dflash2"
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    rms_norm_eps: float
    rope_theta: float
    rope_scaling: dict | None
    max_position_embeddings: int
    attention_bias: bool
    block_size: int
    target_layer_ids: tuple[int, ...]
    num_target_layers: int
    mask_token_id: int
    derived_layer_ids: bool = False
    weight_files: list[Path] = field(default_factory=list)
    tensor_shapes: dict[str, list[int]] = field(default_factory=dict)
    tensor_dtypes: dict[str, str] = field(default_factory=dict)
    prefix: str = ""

    @property
    def max_draft_tokens(self) -> int:
        """A block is [last token, mask × (B−1)]: at most B−1 drafts a round."""
        return self.block_size - 1

    def expected_shapes(self) -> dict[str, list[int]]:  # dict: tensor name -> shape
        H, hd = self.hidden_size, self.head_dim
        out = {"fc.weight": [H, len(self.target_layer_ids) * H], "hidden_norm.weight": [H], "norm.weight": [H]}
        for i in range(self.num_layers):
            p = f"layers.{i}."
            out.update({
                p + "self_attn.q_proj.weight": [self.num_heads * hd, H],
                p + "self_attn.k_proj.weight": [self.num_kv_heads * hd, H],
                p + "self_attn.v_proj.weight": [self.num_kv_heads * hd, H],
                p + "self_attn.o_proj.weight": [H, self.num_heads * hd],
                p + "self_attn.q_norm.weight": [hd],
                p + "self_attn.k_norm.weight": [hd],
                p + "mlp.gate_proj.weight": [self.intermediate_size, H],
                p + "mlp.up_proj.weight": [self.intermediate_size, H],
                p + "mlp.down_proj.weight": [H, self.intermediate_size],
                p + "input_layernorm.weight": [H],
                p + "post_attention_layernorm.weight": [H],
            })
        out.update(self.extra_shapes())
        return out

    def extra_shapes(self) -> list[tuple[str, list[int]]]:
        """(name, shape) of the tensors a variant adds (``DFlash2Spec``); none for DFlash."""
        return []

    def extra_lines(self) -> list[str]:
        """``inspect``'s lines for what a variant adds (``DFlash2Spec``); none for DFlash."""
        return []

    def describe(self) -> DFlashDescription:
        return {"kind": self.variant, "path": str(self.path), "block_size": self.block_size,
                "max_draft_tokens": self.max_draft_tokens, "target_layer_ids": list(self.target_layer_ids),
                "target_layer_ids_derived": self.derived_layer_ids, "num_target_layers": self.num_target_layers,
                "mask_token_id": self.mask_token_id, "hidden_size": self.hidden_size, "vocab_size": self.vocab_size,
                "layers": self.num_layers, "parameters": sum(_numel(s) for s in self.tensor_shapes.values())}


def _numel(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n
