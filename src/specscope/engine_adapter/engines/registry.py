"""Engines by name: built in, or registered under the entry-point group ``specscope.engines``."""

from __future__ import annotations

from importlib import import_module

from specscope.errors import SpecscopeError

GROUP = "specscope.engines"
OWN = "specscope"  # specscope's own engine: no seam
BUILT_IN = {"mlx-lm": "specscope.engine_adapter.engines.mlx_lm_loop:MlxLmLoop",
            "dflash-mlx": "specscope.engine_adapter.engines.dflash_mlx_loop:DFlashMlxLoop",
            "mlx-vlm": "specscope.engine_adapter.engines.mlx_vlm_loop:MlxVlmLoop",  # the vlm extra; refused without it
            # refused here, with the reason found (engines.refused)
            "mtplx": "specscope.engine_adapter.engines.refused:Mtplx"}


def _load(ref: str):
    module, _, attr = ref.partition(":")
    return getattr(import_module(module), attr)


def available() -> dict[str, str]:  # dict: engine name -> where it comes from
    """Engine names and where each comes from (built in, or the distribution that registers it)."""
    from importlib.metadata import entry_points

    out = {name: "built in" for name in BUILT_IN}
    for ep in entry_points(group=GROUP):
        out.setdefault(ep.name, f"plugin {ep.value}")
    return out


def engine_class(name: str):
    """The class registered as ``name``; a clear error naming the engines there are."""
    if name in BUILT_IN:
        return _load(BUILT_IN[name])
    from importlib.metadata import entry_points

    for ep in entry_points(group=GROUP):
        if ep.name == name:
            try:
                return ep.load()
            except Exception as exc:  # a plugin's import error is the plugin's, said as such
                raise SpecscopeError(f"engine {name!r} ({ep.value}) could not be loaded: {exc}") from None
    names = ", ".join([OWN, *sorted(available())])
    raise SpecscopeError(f"unknown engine {name!r}; engines here: {names} (a plugin registers under {GROUP!r})")
