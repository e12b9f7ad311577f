"""The result of classifying a model (``structure.classify``): its timed blocks, and what they add up to
(block names present, sub-kinds, the layer mix, the labels the breakdown's rows carry)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

import mlx.nn as nn

from specscope.engine_adapter.model.block_names import BLOCK_NAMES


@dataclass
class Block:
    """One timed module: its path, the block it is timed in (``block_name``, e.g. ``moe``), and what it is (``kind``)."""

    path: str
    module: nn.Module = field(repr=False)
    block_name: str
    kind: str
    layer: int | None = None
    roles: tuple = ()  # extra blocks the module is timed in (a tied head: "output_head")
    experts: int = 0  # MoE: routed experts
    top_k: int | None = None  # MoE: experts per token, when the module says
    shared: bool = False  # MoE: has a shared (always active) expert
    expert_banks: tuple = ()  # MoE: paths of the routed-expert weights (for active parameters)
    kv_per_token: int = 0  # attention: cached elements per token (K+V, or MLA's latent + rope key)
    window: int | None = None  # attention: sliding window


class LayerMix(TypedDict):
    """Layers per kind (``Structure.layer_mix``): a layer with a recurrent mixer and attention counts in both."""
    linear_attention: int
    full_attention: int
    sliding_window: int
    mla: int
    moe: int
    dense_mlp: int
    unclassified: int


@dataclass
class Structure:
    """A model's timed blocks, its layer count, and whether its output head is the tied embedding."""

    blocks: list[Block]
    layers: int
    tied_head: bool = False

    def in_layer(self, i: int) -> list[Block]:
        return [b for b in self.blocks if b.layer == i]

    def block_names(self) -> list[str]:
        present = {b.block_name for b in self.blocks} | {r for b in self.blocks for r in b.roles}
        return [n for n in BLOCK_NAMES if n in present]

    def kinds(self, block_name: str) -> dict[str, int]:  # dict: sub-kind -> layers with it
        """Sub-kind -> number of layers with it (blocks outside layers count once each)."""
        seen: dict[str, set] = {}
        for b in self.blocks:
            if b.block_name == block_name:
                seen.setdefault(b.kind, set()).add(b.layer if b.layer is not None else b.path)
        return {k: len(v) for k, v in seen.items()}

    def layer_mix(self) -> LayerMix:
        """Counts per layer kind: a layer with both a recurrent mixer and attention (Falcon-H1) counts in both."""
        mix: LayerMix = {"linear_attention": 0, "full_attention": 0, "sliding_window": 0, "mla": 0, "moe": 0, "dense_mlp": 0,
               "unclassified": 0}
        for i in range(self.layers):
            bl = self.in_layer(i)
            names = {b.block_name for b in bl}
            for c in ("linear_attention", "full_attention", "moe", "dense_mlp", "unclassified"):
                mix[c] += c in names
            attn = [b for b in bl if b.block_name == "full_attention"]
            mix["sliding_window"] += any(b.window for b in attn)
            mix["mla"] += any(b.kind.startswith("MLA") for b in attn)
        return mix

    def moe_blocks(self) -> list[Block]:
        return [b for b in self.blocks if b.block_name == "moe" and b.experts]

    def labels(self) -> dict[str, str]:  # dict: block name -> its label for this model
        out = {}
        for block, name in (("linear_attention", "Linear attention"), ("full_attention", "Full attention")):
            kinds = self.kinds(block)
            if kinds and list(kinds) != ["full"]:  # plain attention needs no detail
                out[block] = f"{name} ({', '.join(k if len(kinds) == 1 else f'{n}× {k}' for k, n in kinds.items())})"
        moe = self.moe_blocks()
        if moe:
            ks = {b.top_k for b in moe if b.top_k}
            out["moe"] = (f"MoE ({max(b.experts for b in moe)} experts"
                          + (f", top-{max(ks)}" if ks else "")
                          + (" + shared" if any(b.shared for b in moe) else "") + ")")
        if "dense_mlp" in self.block_names():
            out["dense_mlp"] = "Dense MLP"
        if self.tied_head:
            out["output_head"] = "Output head (tied embedding)"
        if "unclassified" in self.block_names():
            out["unclassified"] = "Unclassified (" + ", ".join(sorted(self.kinds("unclassified"))) + ")"
        return out
