"""The compatibility class of a model from its caches alone, no forward pass: supported, supported with caveats
or refused, and why (the rollback plan per layer, sliding windows). ``compat`` adds the full check on top."""

from __future__ import annotations

from mlx_lm.models.cache import RotatingKVCache, make_prompt_cache

from specscope.engine_adapter.cache.rollback_plan import describe_plan, plan_rollback
from specscope.engine_adapter.model.records import CompatReport

SUPPORTED, CAVEATS, REFUSED = "supported", "supported with caveats", "refused"


def sliding_windows(cache: list) -> list[int]:
    out = set()
    for c in cache:
        subs = getattr(c, "caches", None) or [c]
        for s in subs:
            if isinstance(s, RotatingKVCache):
                out.add(int(s.max_size))
    return sorted(out)


def cheap_report(model) -> CompatReport:
    """The compatibility class from structure alone (what the app shows when a model is picked)."""
    cache = make_prompt_cache(model)
    plan = plan_rollback(model, cache)
    windows = sliding_windows(cache)
    reasons = []
    if plan["refused"]:
        cls = REFUSED
        reasons.append(describe_plan(plan))
    else:
        cls = SUPPORTED
        if plan["mode"] == "replay":
            cls = CAVEATS
            reasons.append(describe_plan(plan))
        if windows:
            cls = CAVEATS
            reasons.append(f"sliding-window attention (window {', '.join(map(str, windows))}): rolled back by "
                           "restoring the window and re-appending the accepted positions")
    return {
        "class": cls,
        "reasons": reasons,
        "rollback": {"mode": plan["mode"], "methods": plan["methods"], "text": describe_plan(plan),
                     "layers": plan["layers"]},
        "sliding_windows": windows,
    }
