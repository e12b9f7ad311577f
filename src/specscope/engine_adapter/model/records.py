"""The records the model package returns (plain dicts at run time, JSON-able): what a checkpoint is
(``inspect_model.describe``), its MTP head (``mtp_status``), its compatibility class (``compat_class.cheap_report``)
and the figures they are built from."""

from __future__ import annotations

from typing import Any, TypedDict

from specscope.engine_adapter.cache.rollback_plan import RollbackLayer
from specscope.engine_adapter.model.blocks import LayerMix

__all__ = ["LayerMix"]  # defined beside its producer, ``blocks.Structure.layer_mix``


class LayerKinds(TypedDict):
    """``inspect_model._layer_kinds``: the layer mix under its short names, and the sub-kinds of each mixer."""
    linear: int
    full: int
    sliding: int
    mla: int
    moe: int
    dense: int
    unclassified: int
    parallel: int                       # layers with both mixers side by side
    linear_kinds: dict[str, int]        # sub-kind -> layers
    attention_kinds: dict[str, int]


class KVCacheEstimate(TypedDict):
    """KV-cache bytes at a context (``inspect_model._kv_cache_estimate``)."""
    bytes: int
    bytes_per_token: int
    dtype_bytes: int


class MTPStatus(TypedDict):
    """Whether a checkpoint carries its own MTP head, and in which naming (``inspect_model.mtp_status``)."""
    available: bool
    tensors: int
    style: str | None
    layers: int
    declared_layers: Any                # the config's field as written (an int, or None)
    missing: list[str]


class Naming(TypedDict):
    """How a model is called everywhere (``inspect_model._naming``)."""
    name: str
    revision: str | None
    source: str


class RollbackSummary(TypedDict):
    """The rollback plan as the compatibility report shows it."""
    mode: str
    methods: list[str]
    text: str
    layers: list[RollbackLayer]


# The compatibility class from the caches alone (``compat_class.cheap_report``): "supported", "supported with caveats"
# or "refused", and why; ``specscope check`` (measure.doctor) adds the full check's findings. "class" is a keyword,
# hence the functional form.
CompatReport = TypedDict("CompatReport", {
    "class": str,
    "reasons": list[str],
    "rollback": RollbackSummary,
    "sliding_windows": list[int],
})

# The cheap part of ``specscope check`` in a model's description (``inspect_model._compatibility``).
Compatibility = TypedDict("Compatibility", {
    "class": str,
    "reasons": list[str],
    "rollback": str,
    "sliding_windows": list[int],
})


class Quantization(TypedDict):
    bits: Any
    group_size: Any
    mode: Any


class ModelDescription(TypedDict):
    """What a checkpoint is (``inspect_model.describe``): architecture, layer mix, MoE shape, sizes, drafters."""
    path: str
    name: str
    revision: str | None
    source: str
    model_type: str
    architecture: str
    layers: int
    linear_attention_layers: int
    full_attention_layers: int
    moe_layers: int
    sliding_window_layers: int
    mla_layers: int
    dense_mlp_layers: int
    parallel_mixer_layers: int
    unclassified_layers: int
    layer_kinds: dict[str, dict[str, int]]   # "linear_attention" / "full_attention" -> sub-kind -> layers
    hybrid: bool
    experts: int
    experts_per_token: int
    shared_expert: bool
    hidden_size: Any                         # the config's fields as written
    vocab_size: Any
    quantization: Quantization | None
    compute_dtype: str | None
    parameters: int
    active_parameters: int
    weight_bytes: int
    file_bytes: int
    mtp: MTPStatus
    drafters: list[str]
    memory_estimate_bytes: int
    memory_estimate_context: int
    kv_cache_bytes: int
    kv_cache_bytes_per_token: int
    system_memory_bytes: int | None
    memory_limit_fraction: float
    demo: Any                                # the config's specscope_demo, as written
    compatibility: Compatibility
