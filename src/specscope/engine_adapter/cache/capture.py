"""Capture during a verify: references to what rollback needs, taken while ``capturing()`` is open.

Hooks on two things every Gated DeltaNet in mlx-lm goes through: its ``conv1d`` call (we record its
input) and the module-level ``gated_delta_update`` (we keep references to its arguments; the call itself
is mlx-lm's, unchanged, once over all positions). Sliding-window caches (RotatingKVCache) opted in with
``record_windows`` remember what they held before a multi-position update and what it appended.
No cost when no capture is open. The open capture is this thread's (``active.CAPTURE``): mlx-lm calls the hooks
with its own arguments, so nothing can be passed to them.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Iterator

import mlx.core as mx
import mlx.nn as nn
from mlx_lm.models.cache import RotatingKVCache

from specscope.engine_adapter.cache.active import CAPTURE, TREE


class Capture:
    """What one captured verify left for rollback: references only, nothing computed."""

    def __init__(self) -> None:
        self.conv_inputs: dict[int, mx.array] = {}
        # per Gated DeltaNet call, in layer order: (args, kwargs) of the recurrence, state before the verify included
        self.recurrences: list[tuple[tuple, dict]] = []
        self.order: list[int] = []
        # id(RotatingKVCache) -> (state before the verify, keys appended, values appended)
        self.windows: dict[int, tuple] = {}


class _RecordingRotatingKVCache(RotatingKVCache):
    """A RotatingKVCache that, while a verify is captured, remembers what it held and what was appended."""

    def update_and_fetch(self, keys, values):
        cap = CAPTURE.get()
        if cap is not None and keys.shape[2] > 1:
            # The multi-position path builds new arrays (no in-place writes), so references are a snapshot.
            cap.windows[id(self)] = ((self.keys, self.values, self.offset, self._idx), keys, values)
        return super().update_and_fetch(keys, values)


class _CapturingConv1d(nn.Conv1d):
    def __call__(self, x):
        tree = TREE.get()
        if tree is not None:  # a tree verify: each node's window along its own path (``tree_verify``)
            return tree.conv(self, x, super().__call__)
        cap = CAPTURE.get()
        if cap is not None:
            cap.conv_inputs[id(self)] = x
            cap.order.append(id(self))
        return super().__call__(x)


def _make_capturing_update(original):
    def gated_delta_update(q, k, v, a, b, A_log, dt_bias, state=None, mask=None, **kw):
        tree = TREE.get()
        if tree is not None:  # a tree verify: each node from its parent's state, depth by depth (``tree_verify``)
            return tree.recurrence(original, q, k, v, a, b, A_log, dt_bias, state, mask, **kw)
        cap = CAPTURE.get()
        if cap is not None and q.shape[1] > 1:
            # keep references only: the verify itself is mlx-lm's own single call over all positions
            cap.recurrences.append(((q, k, v, a, b, A_log, dt_bias, state, mask), kw))
        return original(q, k, v, a, b, A_log, dt_bias, state, mask, **kw)

    setattr(gated_delta_update, "specscope_original", original)  # how uninstall finds what it wrapped
    return gated_delta_update


def linear_attention_modules(model) -> list[tuple[int, nn.Module]]:
    """(layer index, module) for every linear-attention block in the trunk."""
    out = []
    for i, layer in enumerate(model.layers):
        mod = getattr(layer, "linear_attn", None)
        if mod is not None and hasattr(mod, "conv1d"):
            out.append((i, mod))
    return out


def is_hybrid(model) -> bool:
    return bool(linear_attention_modules(model))


def install_capture(model) -> None:
    """Prepare a model for state capture (idempotent, no cost when not capturing)."""
    for _, mod in linear_attention_modules(model):
        if type(mod.conv1d) is nn.Conv1d:
            mod.conv1d.__class__ = _CapturingConv1d
        module = sys.modules[type(mod).__module__]
        fn = getattr(module, "gated_delta_update", None)
        if fn is not None and not hasattr(fn, "specscope_original"):
            setattr(module, "gated_delta_update", _make_capturing_update(fn))


def uninstall_capture(model) -> None:
    """Undo ``install_capture``: mlx-lm's own classes and functions, no hooks at all (for ``bench capture``)."""
    for _, mod in linear_attention_modules(model):
        if type(mod.conv1d) is _CapturingConv1d:
            setattr(mod.conv1d, "__class__", nn.Conv1d)  # as assigning __class__; not narrowed to the subclass's type
        module = sys.modules[type(mod).__module__]
        fn = getattr(module, "gated_delta_update", None)
        if fn is not None and hasattr(fn, "specscope_original"):
            setattr(module, "gated_delta_update", fn.specscope_original)


@contextmanager
def capturing() -> Iterator[Capture]:
    """A fresh ``Capture`` that the forwards inside the block (in this thread) record into."""
    with CAPTURE.open(Capture()) as cap:
        yield cap


def record_windows(cache: list) -> None:
    """Make the sliding-window caches in ``cache`` record what they held before each captured verify."""
    for c in cache:
        if type(c) is RotatingKVCache:
            c.__class__ = _RecordingRotatingKVCache
