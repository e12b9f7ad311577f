"""Taps on the trunk's final norm: the hidden states a drafter like MTP needs.

The final norm's class is swapped for a subclass that, while a tap is open,
records its input (pre-norm) and output (post-norm) for every forward. No
cost when no tap is open.
"""

from __future__ import annotations

from contextlib import contextmanager

import mlx.core as mx

_tap = None
_tapped_classes: dict[type, type] = {}


def trunk_parts(model) -> dict:
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
            if _tap is not None:
                _tap["pre"].append(x[0])
                _tap["post"].append(out[0])
            return out

        _tapped_classes[cls] = type(f"Tapped{cls.__name__}", (cls,), {"__call__": __call__})
    return _tapped_classes[cls]


def feed(pre: mx.array, post: mx.array) -> None:
    """Hidden states computed earlier (a stored long context's, ``context``) recorded as if this forward made them."""
    if _tap is not None:
        _tap["pre"].append(pre)
        _tap["post"].append(post)


def install_tap(model) -> None:
    norm = trunk_parts(model)["norm"]
    if type(norm) not in _tapped_classes.values():
        norm.__class__ = _tapped(type(norm))


class Tap:
    def __init__(self) -> None:
        self.pre: list[mx.array] = []
        self.post: list[mx.array] = []

    def hidden(self, mode: str) -> mx.array:
        parts = self.post if mode == "post-norm" else self.pre
        return mx.concatenate(parts, axis=0)


@contextmanager
def tapping(enabled: bool = True):
    """Record trunk hidden states for the forwards inside the block."""
    global _tap
    if not enabled:
        yield None
        return
    t = Tap()
    prev, _tap = _tap, {"pre": t.pre, "post": t.post}
    try:
        yield t
    finally:
        _tap = prev
