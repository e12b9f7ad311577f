"""Which rollback strategy each layer's cache gets (``plan_rollback``), and the refusal, before anything runs,
of a cache no strategy covers (``UnsupportedModel``). The strategies themselves: ``rollback``."""

from __future__ import annotations

import sys
from typing import TypedDict

import mlx.nn as nn
from mlx_lm.models.cache import (
    ArraysCache,
    CacheList,
    ChunkedKVCache,
    ConcatenateKVCache,
    KVCache,
    QuantizedKVCache,
    RotatingKVCache,
)

from specscope.errors import SpecscopeError

from specscope.engine_adapter.cache.capture import linear_attention_modules


class UnsupportedModel(SpecscopeError):
    """A model whose caches specscope cannot roll back exactly: refused before it is profiled."""


TRIMMABLE = (KVCache, QuantizedKVCache, ConcatenateKVCache)


class RollbackLayer(TypedDict):
    """One layer's cache and how it is rolled back (a row of ``plan_rollback``)."""
    layer: int
    layer_type: str     # the layer's class, or "cache {i}" when caches and layers do not line up
    cache: str
    method: str         # "trim", "restore+append", "captured states", "replay" or "unsupported"


class RollbackPlan(TypedDict):
    """How each layer's cache is rolled back (``plan_rollback``); ``refused``: the layers no strategy covers."""
    mode: str           # "replay" if any layer replays, else "exact"
    layers: list[RollbackLayer]
    refused: list[RollbackLayer]
    methods: list[str]


def _aligned(model, cache: list) -> bool:
    """One cache per layer, in layer order (not so for e.g. nemotron_h, whose MLP/MoE blocks have none)."""
    layers = getattr(model, "layers", None)
    try:
        return layers is not None and len(layers) == len(cache)
    except TypeError:
        return False


def _layer_type(model, i: int, aligned: bool) -> str:
    if not aligned:
        return f"cache {i}"
    return type(model.layers[i]).__name__


def gdn_index(model, cache: list | None = None) -> dict[int, nn.Module]:  # dict: layer index -> its GDN module
    """Layers whose Gated DeltaNet recurrence can be captured per position (module-level gated_delta_update).

    Only when caches and layers line up one to one; otherwise replay, which needs no such mapping.
    """
    if cache is not None and not _aligned(model, cache):
        return {}
    out = {}
    for i, mod in linear_attention_modules(model):
        if hasattr(sys.modules[type(mod).__module__], "gated_delta_update"):
            out[i] = mod
    return out


def _method(c, gdn: bool) -> str | None:
    if isinstance(c, RotatingKVCache):
        return "restore+append"
    if isinstance(c, TRIMMABLE):
        return "trim"
    if isinstance(c, ArraysCache):
        return "captured states" if gdn else "replay"
    if isinstance(c, ChunkedKVCache):
        return "replay"
    if isinstance(c, CacheList):
        subs = [_method(s, False) for s in c.caches]
        if None in subs:
            return None
        return "trim" if all(m == "trim" for m in subs) else "replay"
    return None


def cache_name(c) -> str:
    if isinstance(c, CacheList):
        return "CacheList(" + ", ".join(cache_name(s) for s in c.caches) + ")"
    if isinstance(c, ArraysCache):
        return f"ArraysCache({len(c.cache)})"
    name = type(c).__name__
    return name[len("_Recording"):] if name.startswith("_Recording") else name


def plan_rollback(model, cache: list) -> RollbackPlan:
    """How each layer's cache is rolled back; ``refused`` lists the layers no strategy covers."""
    gdn = gdn_index(model, cache)
    aligned = _aligned(model, cache)
    layers: list[RollbackLayer] = []
    refused: list[RollbackLayer] = []
    for i, c in enumerate(cache):
        m = _method(c, i in gdn)
        row: RollbackLayer = {"layer": i, "layer_type": _layer_type(model, i, aligned), "cache": cache_name(c),
               "method": m or "unsupported"}
        layers.append(row)
        if m is None:
            refused.append(row)
    mode = "replay" if any(r["method"] == "replay" for r in layers) else "exact"
    return {"mode": mode, "layers": layers, "refused": refused,
            "methods": sorted({r["method"] for r in layers})}


def describe_plan(plan: RollbackPlan) -> str:
    if plan["refused"]:
        r = plan["refused"][0]
        where = f"layer {r['layer']} ({r['layer_type']})" if not r["layer_type"].startswith("cache ") else r["layer_type"]
        return (f"{where} uses a {r['cache']} cache, which specscope cannot roll back "
                f"after a partial acceptance; refusing rather than reporting wrong numbers")
    if plan["mode"] == "replay":
        kinds = sorted({r["cache"] for r in plan["layers"] if r["method"] == "replay"})
        return (f"rollback by replay: {', '.join(kinds)} state cannot be selected per position, so partial rounds "
                f"restore the caches and re-run the accepted positions (exact; counted as rollback time)")
    return "exact rollback without re-running the model (" + ", ".join(plan["methods"]) + ")"


def check_supported(model, cache: list | None = None) -> RollbackPlan:
    """The rollback plan for ``model``; raises UnsupportedModel if any layer cannot be rolled back."""
    from mlx_lm.models.cache import make_prompt_cache

    plan = plan_rollback(model, cache if cache is not None else make_prompt_cache(model))
    if plan["refused"]:
        raise UnsupportedModel(describe_plan(plan))
    return plan
