"""Roll caches back after a partial acceptance, without re-running the model.

Attention KV caches are trimmed. Linear-attention (Gated DeltaNet) caches hold
a conv window and a recurrent state that cannot be trimmed, so during a verify
forward we keep what is needed for every position (like vLLM's one state slot
per draft position): the full conv input of each layer and the recurrent state
after each position. Rolling back to ``n`` accepted drafts then only selects
slices that were already computed.

Capture works by hooking two things every Gated DeltaNet in mlx-lm goes
through: its ``conv1d`` call (we record its input) and the module-level
``gated_delta_update`` (run one position at a time while capturing, which is
the same arithmetic the CPU path does anyway, so we keep each state).
"""

from __future__ import annotations

import sys
from contextlib import contextmanager

import mlx.core as mx
import mlx.nn as nn
from mlx_lm.models.cache import ArraysCache

_capture = None  # the active _Capture, if any


class _Capture:
    def __init__(self):
        self.conv_inputs: dict[int, mx.array] = {}
        self.states: list[list[mx.array]] = []
        self.order: list[int] = []


class _CapturingConv1d(nn.Conv1d):
    def __call__(self, x):
        if _capture is not None:
            _capture.conv_inputs[id(self)] = x
            _capture.order.append(id(self))
        return super().__call__(x)


def _make_capturing_update(original):
    def gated_delta_update(q, k, v, a, b, A_log, dt_bias, state=None, mask=None, **kw):
        if _capture is None or q.shape[1] == 1:
            return original(q, k, v, a, b, A_log, dt_bias, state, mask, **kw)
        ys, states = [], []
        for t in range(q.shape[1]):
            y, state = original(
                q[:, t : t + 1], k[:, t : t + 1], v[:, t : t + 1], a[:, t : t + 1], b[:, t : t + 1],
                A_log, dt_bias, state, None if mask is None else mask[:, t : t + 1], **kw,
            )
            ys.append(y)
            states.append(state)
        _capture.states.append(states)
        return mx.concatenate(ys, axis=1), state

    gated_delta_update.specscope_original = original
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
            module.gated_delta_update = _make_capturing_update(fn)


@contextmanager
def capturing():
    global _capture
    prev, _capture = _capture, _Capture()
    try:
        yield _capture
    finally:
        _capture = prev


class VerifyRollback:
    """Restores target caches to ``n`` accepted drafts after a verify over ``k+1`` positions."""

    def __init__(self, model, cache: list):
        self.cache = cache
        self.linear = [(i, mod) for i, mod in linear_attention_modules(model)]
        self.capture: _Capture | None = None
        self.width = 0

    def record(self, capture: _Capture, width: int) -> None:
        self.capture, self.width = capture, width

    def rollback(self, accepted: int) -> list[mx.array]:
        """Make the caches hold exactly the first ``accepted + 1`` verified positions.

        Returns the arrays it set (callers may evaluate them to time the work).
        """
        drop = self.width - 1 - accepted
        if drop <= 0:
            return []
        touched = []
        cap = self.capture
        if self.linear and (cap is None or len(cap.states) != len(self.linear)):
            raise RuntimeError("verify ran without state capture; cannot roll back linear attention")
        for j, (i, mod) in enumerate(self.linear):
            c = self.cache[i]
            n_keep = mod.conv_kernel_size - 1
            conv_in = cap.conv_inputs[id(mod.conv1d)]
            c[0] = conv_in[:, accepted + 1 : accepted + 1 + n_keep]
            c[1] = cap.states[j][accepted]
            touched += [c[0], c[1]]
        for c in self.cache:
            if not isinstance(c, ArraysCache):
                c.trim(drop)
        return touched


class Checkpoint:
    """A snapshot of a cache list that can be restored later (KV: offsets; arrays: references)."""

    def __init__(self, cache: list):
        self.cache = cache
        self.saved = [
            list(c.cache) if isinstance(c, ArraysCache) else c.offset for c in cache
        ]

    def restore(self) -> None:
        for c, s in zip(self.cache, self.saved):
            if isinstance(c, ArraysCache):
                c.cache = list(s)
            else:
                extra = c.offset - s
                if extra > 0:
                    c.trim(extra)
                elif extra < 0:
                    raise RuntimeError("cannot restore a cache checkpoint that is ahead of the cache")

