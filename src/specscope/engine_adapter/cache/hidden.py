"""Taps on the trunk: the hidden states a drafter like MTP or DFlash needs.

The final norm's class is swapped for a subclass that, while a tap is open,
records its input (pre-norm) and output (post-norm) for every forward. Decoder
layers asked for by index (``install_tap(model, layers=...)``, DFlash's
``target_layer_ids``) are swapped the same way, one instance at a time, and
record their output (the residual stream after that layer: what the DFlash
references read as ``hidden_states[i + 1]``). One mechanism for both: the same
``tapping`` block records whatever is installed, and ``Tap.hidden(mode)`` picks
"post-norm", "pre-norm", or a tuple of layer indices (their outputs side by side,
in that order). No cost when no tap is open. The open tap is this thread's (``active.TAP``): mlx-lm calls the
swapped classes with its own arguments, so nothing can be passed to them.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, TypedDict

import mlx.core as mx

from specscope.engine_adapter.cache.active import TAP


class TrunkParts(TypedDict):
    """The trunk's embedding, final norm and output head (``trunk_parts``)."""
    embed: Any
    norm: Any
    head: Any   # the lm_head, or the embedding's ``as_linear`` for a tied head


_tapped_classes: dict[type, type] = {}  # mlx-lm's norm class -> its tapped subclass (made once, no run's data)


def trunk_parts(model) -> TrunkParts:
    """The trunk's embedding, final norm and output head (tied heads use the embedding)."""
    lm = getattr(model, "language_model", model)
    trunk = lm.model
    embed = trunk.embed_tokens
    head = getattr(lm, "lm_head", None)
    if head is None:
        head = embed.as_linear
    return {"embed": embed, "norm": trunk.norm, "head": head}


def _tapped(cls):
    if cls not in _tapped_classes:

        def __call__(self, x, *a, **kw):
            out = cls.__call__(self, x, *a, **kw)
            tap = TAP.get()
            if tap is not None:
                tap.pre.append(x[0])
                tap.post.append(out[0])
            return out

        _tapped_classes[cls] = type(f"Tapped{cls.__name__}", (cls,), {"__call__": __call__})
    return _tapped_classes[cls]


_tapped_layer_classes: dict[type, type] = {}  # likewise for decoder layers


def _tapped_layer(cls):
    """A decoder layer class that records its output under its ``_specscope_tap_index`` while a tap is open."""
    if cls not in _tapped_layer_classes:

        def __call__(self, x, *a, **kw):
            out = cls.__call__(self, x, *a, **kw)
            tap = TAP.get()
            if tap is not None:
                tap.layers.setdefault(self._specscope_tap_index, []).append(out[0])
            return out

        _tapped_layer_classes[cls] = type(f"TappedLayer{cls.__name__}", (cls,), {"__call__": __call__})
    return _tapped_layer_classes[cls]


def feed(pre: mx.array, post: mx.array, layers: dict | None = None) -> None:
    """Hidden states computed earlier (a stored long context's, ``context``) recorded as if this forward made them."""
    tap = TAP.get()
    if tap is not None:
        tap.pre.append(pre)
        tap.post.append(post)
        for i, h in (layers or {}).items():
            tap.layers.setdefault(i, []).append(h)


def trunk_layers(model) -> list:
    return list(getattr(model, "language_model", model).model.layers)


def install_tap(model, layers: tuple[int, ...] | list[int] = ()) -> None:
    """Install the final-norm tap, and a tap on the output of each decoder layer in ``layers`` (0-based)."""
    norm = trunk_parts(model)["norm"]
    if type(norm) not in _tapped_classes.values():
        norm.__class__ = _tapped(type(norm))
    trunk = trunk_layers(model)
    for i in layers:
        if not 0 <= i < len(trunk):
            raise ValueError(f"layer {i} is not one of the trunk's {len(trunk)} layers")
        layer = trunk[i]
        if type(layer) not in _tapped_layer_classes.values():
            layer.__class__ = _tapped_layer(type(layer))
        layer._specscope_tap_index = i


def uninstall_tap(model) -> None:
    """Give the final norm and every tapped layer back their own classes (``bench capture``'s side without hooks)."""
    norm = trunk_parts(model)["norm"]
    if type(norm) in _tapped_classes.values():
        norm.__class__ = type(norm).__bases__[0]
    for layer in trunk_layers(model):
        if type(layer) in _tapped_layer_classes.values():
            layer.__class__ = type(layer).__bases__[0]


def tapped_layers(model) -> tuple[int, ...]:
    """The decoder layers whose outputs a tap records (``install_tap(model, layers=...)``)."""
    return tuple(i for i, layer in enumerate(trunk_layers(model)) if type(layer) in _tapped_layer_classes.values())


class Tap:
    def __init__(self) -> None:
        self.pre: list[mx.array] = []
        self.post: list[mx.array] = []
        self.layers: dict[int, list[mx.array]] = {}

    def hidden(self, mode: str | tuple[int, ...]) -> mx.array:
        """"post-norm" / "pre-norm": the final norm's output / input, [positions, H]; a tuple of layer indices: those
        layers' outputs side by side, [positions, len(mode) * H] (DFlash's context feature)."""
        if isinstance(mode, tuple):
            missing = [i for i in mode if not self.layers.get(i)]
            if missing:
                raise RuntimeError(f"no tap on the output of layer(s) {missing} (install_tap(model, layers=...))")
            return mx.concatenate([mx.concatenate(self.layers[i], axis=0) for i in mode], axis=-1)
        parts = self.post if mode == "post-norm" else self.pre
        return mx.concatenate(parts, axis=0)


@contextmanager
def tapping(enabled: bool = True):
    """Record trunk hidden states for the forwards inside the block (in this thread); None when not ``enabled``."""
    if not enabled:
        yield None
        return
    with TAP.open(Tap()) as t:
        yield t
