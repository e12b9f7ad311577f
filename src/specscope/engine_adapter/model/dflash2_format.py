"""The DFlash2 drafter format: DFlash's folder plus a convolution on every layer and a candidate selector.

Written from the method's reference MLX code (``dflash`` on PyPI, MIT: ``dflash/model_mlx.py``, ``load_draft``) and
its test fixtures (``tests/fixtures/dflash2-config.json``, ``dflash2-safetensors-header.json`` in z-lab/dflash).
What a DFlash2 folder adds to a DFlash one (``dflash_format``), and what this module decides where the reference
is silent or lenient:

- ``architectures: ["DFlash2DraftModel"]`` (``dflash_format.variant_of``).
- ``layer_types``: one per drafter layer, ``full_attention`` or ``sliding_attention`` (absent: all full, as the
  reference); a sliding layer needs ``sliding_window`` (a query at position ``P + i`` sees context positions within
  ``sliding_window − 1`` of it, and the whole block). ``is_causal`` (top level): the block's own mask; absent, a
  sliding layer is causal and a full one is not (the reference's rule); the published drafters say ``false``.
- ``dflash_config``: ``conv_kernel_size``, ``conv_group_size`` (must divide ``hidden_size``), ``selector_rank``,
  ``selector_top_k`` (1..vocabulary). The reference defaults the four to 0, which builds a model that cannot run:
  here a missing or out-of-range one is refused with the reason. Optional ``final_logit_softcapping`` (also read at
  the top level, as the reference), ``output_multiplier``, ``input_embedding_scale`` (default 1).
- Weights, per layer: ``layers.{i}.{attention,mlp}_conv.base_kernel`` [2, K, H] and
  ``….kernel_projection.weight`` [2·K·H/G, H]; the selector: ``candidate_selector.hidden_projection.weight``
  [rank, H], ``candidate_selector.predecessor_codebook`` and ``….successor_codebook`` [vocab, rank] (stored without
  a ``.weight`` suffix: the reference's loader renames them; a folder that has the suffix is not in the format).

No MLX import: config.json and safetensors headers only.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from specscope.engine_adapter.model.config_json import DFlashBlock
from specscope.engine_adapter.model.dflash_spec import DFlashDescription, DFlashSpec
from specscope.errors import SpecscopeError

LAYER_TYPES = ("full_attention", "sliding_attention")
SELECTOR_TENSORS = ("candidate_selector.hidden_projection.weight", "candidate_selector.predecessor_codebook",
                    "candidate_selector.successor_codebook")


class DFlash2Description(DFlashDescription):
    """``DFlashDescription`` plus the selector, the convolution and the attention window."""
    selector_top_k: int
    selector_rank: int
    conv_kernel_size: int
    conv_group_size: int
    sliding_window: int | None
    layer_types: list[str]


@dataclass
class DFlash2Spec(DFlashSpec):
    """A DFlash2 drafter folder that passed the format checks (``read_dflash`` returns one for a DFlash2 folder)."""

    layer_types: tuple[str, ...] = ()
    sliding_window: int | None = None
    is_causal: bool | None = None
    conv_kernel_size: int = 0
    conv_group_size: int = 0
    selector_rank: int = 0
    selector_top_k: int = 0
    final_logit_softcapping: float | None = None
    output_multiplier: float = 1.0
    input_embedding_scale: float = 1.0

    def causal(self, layer: int) -> bool:
        """Whether layer ``layer``'s block attends causally (the reference's rule when ``is_causal`` is absent)."""
        return self.layer_types[layer] == "sliding_attention" if self.is_causal is None else self.is_causal

    def extra_shapes(self) -> list[tuple[str, list[int]]]:
        H, V, r = self.hidden_size, self.vocab_size, self.selector_rank
        out = [(SELECTOR_TENSORS[0], [r, H]), (SELECTOR_TENSORS[1], [V, r]), (SELECTOR_TENSORS[2], [V, r])]
        K, groups = self.conv_kernel_size, H // self.conv_group_size
        for i in range(self.num_layers):
            for conv in ("attention_conv", "mlp_conv"):
                out.append((f"layers.{i}.{conv}.base_kernel", [2, K, H]))
                out.append((f"layers.{i}.{conv}.kernel_projection.weight", [2 * K * groups, H]))
        return out

    def describe(self) -> DFlash2Description:
        d = super().describe()
        return {**d, "selector_top_k": self.selector_top_k, "selector_rank": self.selector_rank,
                "conv_kernel_size": self.conv_kernel_size, "conv_group_size": self.conv_group_size,
                "sliding_window": self.sliding_window, "layer_types": list(self.layer_types)}

    def extra_lines(self) -> list[str]:
        """``inspect``'s lines for what DFlash2 adds."""
        sliding = sum(t == "sliding_attention" for t in self.layer_types)
        window = f", window {self.sliding_window}" if sliding else ""
        mask = "causal" if self.is_causal else ("both ways" if self.is_causal is False else "per layer type")
        return [
            f"  selector          top {self.selector_top_k} candidates a position, rank {self.selector_rank}: a walk "
            f"from the verified token (sequential, one position after another)",
            f"  layers            {sliding} of {self.num_layers} sliding attention{window}; block attends {mask}; "
            f"convolution kernel {self.conv_kernel_size}, groups of {self.conv_group_size}",
        ]


def _positive_int(dc: DFlashBlock, key: str, where: str, maximum: int | None = None) -> int:
    v = dc.get(key)
    if v is None:
        raise SpecscopeError(f"{where}: dflash_config has no {key} (a DFlash2 drafter needs it; specscope does not "
                             "guess it)")
    if isinstance(v, bool) or not isinstance(v, int) or v < 1 or (maximum is not None and v > maximum):
        bound = f" and <= {maximum}" if maximum is not None else ""
        raise SpecscopeError(f"{where}: dflash_config.{key} must be an integer >= 1{bound} (got {v!r})")
    return v


def _number(v, key: str, where: str, default: float | None) -> float | None:
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise SpecscopeError(f"{where}: {key} must be a number (got {v!r})")
    return float(v)


def as_dflash2(spec: DFlashSpec, where: str) -> DFlash2Spec:
    """``spec`` (a folder ``variant_of`` reads as DFlash2) with DFlash2's own fields read and checked."""
    c = spec.config
    dc: DFlashBlock = c.get("dflash_config") or {}
    top_k = _positive_int(dc, "selector_top_k", where, maximum=spec.vocab_size)
    rank = _positive_int(dc, "selector_rank", where)
    kernel = _positive_int(dc, "conv_kernel_size", where)
    group = _positive_int(dc, "conv_group_size", where)
    if spec.hidden_size % group:
        raise SpecscopeError(f"{where}: dflash_config.conv_group_size {group} does not divide hidden_size "
                             f"{spec.hidden_size}")
    types = c.get("layer_types")
    if types is None:
        types = ["full_attention"] * spec.num_layers
    if not isinstance(types, list) or len(types) != spec.num_layers or any(t not in LAYER_TYPES for t in types):
        raise SpecscopeError(f"{where}: layer_types must list one of {', '.join(LAYER_TYPES)} for each of its "
                             f"{spec.num_layers} layers (got {types!r})")
    window = c.get("sliding_window")
    if "sliding_attention" in types and (isinstance(window, bool) or not isinstance(window, int) or window < 2):
        raise SpecscopeError(f"{where}: sliding_attention layers need sliding_window, an integer >= 2 (got {window!r})")
    causal = c.get("is_causal")
    if causal is not None and not isinstance(causal, bool):
        raise SpecscopeError(f"{where}: is_causal must be true or false (got {causal!r})")
    cap = _number(dc.get("final_logit_softcapping", c.get("final_logit_softcapping")), "final_logit_softcapping",
                  where, None)
    base = {f.name: getattr(spec, f.name) for f in fields(DFlashSpec)}
    return DFlash2Spec(**base, layer_types=tuple(types), sliding_window=window if "sliding_attention" in types else None,
                       is_causal=causal, conv_kernel_size=kernel, conv_group_size=group, selector_rank=rank,
                       selector_top_k=top_k, final_logit_softcapping=cap if cap and cap > 0 else None,
                       output_multiplier=_number(dc.get("output_multiplier"), "output_multiplier", where, 1.0) or 0.0,
                       input_embedding_scale=_number(dc.get("input_embedding_scale"), "input_embedding_scale", where,
                                                     1.0) or 0.0)
