"""Roll caches back after a partial acceptance: one small strategy per cache kind.

A registry maps each layer's cache to how it is rolled back (``plan_rollback``):

- ``trim``: attention KV caches (KVCache, QuantizedKVCache, ConcatenateKVCache):
  positions past the offset are never read, so dropping the offset is exact.
- ``restore+append``: sliding-window caches (RotatingKVCache). A trim would leave
  rejected keys inside a full window, so the cache's state before the verify is
  kept (by reference: the multi-position update builds new arrays) together with
  the keys and values the verify appended; rollback restores the state and appends
  only the accepted positions.
- ``captured states``: Gated DeltaNet (Qwen3.5, Qwen3-Next). A conv window and a
  recurrent state cannot be trimmed. The verify forward stays exactly mlx-lm's own
  (``gated_delta_update`` called once per layer over all k+1 positions: one fused
  kernel on Metal, which reads and writes the state once); we only keep references
  to what rollback needs: each layer's conv input, and the recurrence's inputs and
  its state before the verify. Rolling back to ``n`` accepted drafts takes the conv
  window from the kept input and rebuilds the state by running the recurrence alone
  over the ``n + 1`` accepted positions (no weights read, no forward re-run), all
  layers of one shape stacked on the batch axis into one call (``_states_after``).
- ``replay``: any other recurrent cache (Mamba, ShortConv, q/k/v convs, CacheLists
  holding them, chunked attention). Exact but not free: every cache is restored to
  its state before the verify and the accepted positions are run through the model
  again. Sessions label it, and its cost is counted as rollback time.

A cache of a kind with no strategy is refused before anything runs
(``UnsupportedModel``), naming the layer type: never profiled wrongly.

Capture works by hooking two things every Gated DeltaNet in mlx-lm goes
through: its ``conv1d`` call (we record its input) and the module-level
``gated_delta_update`` (we keep references to its arguments; the call itself is
mlx-lm's, unchanged, once over all positions).
"""

from __future__ import annotations

import sys
from contextlib import contextmanager

import mlx.core as mx
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

_capture = None  # the active _Capture, if any


class _Capture:
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
        if _capture is not None and keys.shape[2] > 1:
            # The multi-position path builds new arrays (no in-place writes), so references are a snapshot.
            _capture.windows[id(self)] = ((self.keys, self.values, self.offset, self._idx), keys, values)
        return super().update_and_fetch(keys, values)


class _CapturingConv1d(nn.Conv1d):
    def __call__(self, x):
        if _capture is not None:
            _capture.conv_inputs[id(self)] = x
            _capture.order.append(id(self))
        return super().__call__(x)


def _make_capturing_update(original):
    def gated_delta_update(q, k, v, a, b, A_log, dt_bias, state=None, mask=None, **kw):
        if _capture is not None and q.shape[1] > 1:
            # keep references only: the verify itself is mlx-lm's own single call over all positions
            _capture.recurrences.append(((q, k, v, a, b, A_log, dt_bias, state, mask), kw))
        return original(q, k, v, a, b, A_log, dt_bias, state, mask, **kw)

    gated_delta_update.specscope_original = original
    return gated_delta_update


def _state_after(recurrence: tuple[tuple, dict], n: int, mod: nn.Module) -> mx.array:
    """The recurrent state after the first ``n`` verified positions: the recurrence alone, over those positions."""
    (q, k, v, a, b, A_log, dt_bias, state, mask), kw = recurrence
    original = sys.modules[type(mod).__module__].gated_delta_update.specscope_original
    sl = slice(0, n)
    _, new_state = original(q[:, sl], k[:, sl], v[:, sl], a[:, sl], b[:, sl], A_log, dt_bias, state,
                            None if mask is None else mask[:, sl], **kw)
    return new_state


def _batch_key(recurrence: tuple[tuple, dict], original) -> tuple | None:
    """Recurrences with equal keys can run as one batched call (layers stacked on the batch axis)."""
    (q, k, v, a, b, A_log, dt_bias, state, mask), kw = recurrence
    if mask is not None or state is None or A_log.ndim != 1 or dt_bias.ndim != 1:
        return None
    try:
        kw_key = tuple(sorted(kw.items()))
        hash(kw_key)
    except TypeError:
        return None
    return (id(original), kw_key, q.shape, k.shape, v.shape, a.shape, b.shape, state.shape, A_log.shape,
            dt_bias.shape, q.dtype, k.dtype, v.dtype, a.dtype, b.dtype, state.dtype, A_log.dtype, dt_bias.dtype)


def _takes_ops_path(original, args: tuple, kw: dict) -> bool:
    """Whether mlx-lm's ``gated_delta_update`` would run these arguments (all but ``q``) through its ops path
    (the CPU, or shapes its Metal kernel does not take), with scalar gating and only the keywords we know."""
    from mlx_lm.models import gated_delta

    k, v, a, b, A_log, dt_bias, state = args
    if original is not gated_delta.gated_delta_update or a.ndim != 3 or not hasattr(gated_delta, "compute_g"):
        return False
    if not set(kw) <= {"use_kernel", "lower_bound", "allow_neg_eigval"}:
        return False
    return (not kw.get("use_kernel", True) or mx.default_device() != mx.gpu or not mx.metal.is_available()
            or k.shape[-1] < 32 or k.shape[-1] % 32 != 0)


def _ops_state_only(k, v, a, b, A_log, dt_bias, state, *, use_kernel=True, lower_bound=None,
                    allow_neg_eigval=False) -> mx.array:
    """mlx-lm's ops path of ``gated_delta_update`` (``gated_delta_ops`` over ``_gated_delta_step_ops``), the
    same arithmetic in the same order, but only the state: the per-position outputs (and the ``q`` they
    need) are skipped, which rollback never reads. A test pins it bit for bit to mlx-lm's own call."""
    from mlx_lm.models import gated_delta

    beta = mx.sigmoid(b)
    if allow_neg_eigval:
        beta = beta * 2.0
    if lower_bound is None:
        g = gated_delta.compute_g(A_log, a, dt_bias)
    else:
        g = gated_delta.compute_lower_bound_g(A_log, a, dt_bias, lower_bound)
    if (repeat := v.shape[-2] // k.shape[-2]) > 1:
        k = mx.repeat(k, repeat, -2)
    for t in range(k.shape[1]):
        state = state * g[:, t][..., None, None]
        kt = k[:, t][..., None, :]
        kv_mem = (state * kt).sum(axis=-1)
        delta = (v[:, t] - kv_mem) * beta[:, t][..., None]
        state = state + kt * delta[..., None]
    return state


def _states_after(recurrences: list[tuple[tuple, dict]], n: int, mods: list[nn.Module],
                  consts: dict | None = None) -> list[mx.array]:
    """The recurrent state of every captured layer after the first ``n`` verified positions.

    Layers of one shape run as *one* recurrence, stacked on the batch axis (per-layer ``A_log`` and
    ``dt_bias`` broadcast per row): the recurrence is independent per batch row, so each row's state is
    exactly the per-layer call's (a test compares bit for bit). Where mlx-lm's ``gated_delta_update``
    would take its Metal kernel, that is one call of it (one fused kernel for all layers); where it takes
    its ops path (the CPU), the same ops computing only the state. Anything unusual (a mask, a missing
    state) runs mlx-lm's call per layer. ``consts`` caches the stacked per-row parameters between calls.
    """
    originals = [sys.modules[type(m).__module__].gated_delta_update.specscope_original for m in mods]
    out: list[mx.array | None] = [None] * len(recurrences)
    groups: dict[tuple, list[int]] = {}
    for j, (rec, orig) in enumerate(zip(recurrences, originals)):
        key = _batch_key(rec, orig)
        if key is None:
            out[j] = _state_after(rec, n, mods[j])
        else:
            groups.setdefault(key, []).append(j)
    consts = {} if consts is None else consts
    for js in groups.values():
        if len(js) == 1:
            out[js[0]] = _state_after(recurrences[js[0]], n, mods[js[0]])
            continue
        recs = [recurrences[j][0] for j in js]
        B = recs[0][0].shape[0]
        sl = slice(0, n)

        def cat(i, positions=True):
            return mx.concatenate([r[i][:, sl] if positions else r[i] for r in recs], axis=0)

        def per_row(i):  # [L*B, 1, H]: layer j's vector for each of its batch rows; parameters, so cached
            key = (i, B, tuple(id(r[i]) for r in recs))
            if key not in consts:
                vecs = mx.stack([r[i] for r in recs])[:, None, None, :]
                consts[key] = (mx.broadcast_to(vecs, (len(recs), B, 1, vecs.shape[-1])).reshape(len(recs) * B, 1, -1),
                               [r[i] for r in recs])  # the sources stay referenced: their ids stay theirs
            return consts[key][0]

        kw = recurrences[js[0]][1]
        rest = (cat(1), cat(2), cat(3), cat(4), per_row(5), per_row(6), cat(7, positions=False))
        if _takes_ops_path(originals[js[0]], rest, kw):
            state = _ops_state_only(*rest, **kw)
        else:
            _, state = originals[js[0]](cat(0), *rest, None, **kw)
        for g, j in enumerate(js):
            out[j] = state[g * B : (g + 1) * B]
    filled = [s for s in out if s is not None]
    assert len(filled) == len(out)  # every recurrence is in one group
    return filled


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
def capturing():
    global _capture
    prev, _capture = _capture, _Capture()
    try:
        yield _capture
    finally:
        _capture = prev


class UnsupportedModel(SpecscopeError):
    """A model whose caches specscope cannot roll back exactly: refused before it is profiled."""


TRIMMABLE = (KVCache, QuantizedKVCache, ConcatenateKVCache)


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


def _gdn_index(model, cache: list | None = None) -> dict[int, nn.Module]:
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


def _cache_name(c) -> str:
    if isinstance(c, CacheList):
        return "CacheList(" + ", ".join(_cache_name(s) for s in c.caches) + ")"
    if isinstance(c, ArraysCache):
        return f"ArraysCache({len(c.cache)})"
    name = type(c).__name__
    return name[len("_Recording"):] if name.startswith("_Recording") else name


def plan_rollback(model, cache: list) -> dict:
    """How each layer's cache is rolled back; ``refused`` lists the layers no strategy covers."""
    gdn = _gdn_index(model, cache)
    aligned = _aligned(model, cache)
    layers, refused = [], []
    for i, c in enumerate(cache):
        m = _method(c, i in gdn)
        row = {"layer": i, "layer_type": _layer_type(model, i, aligned), "cache": _cache_name(c),
               "method": m or "unsupported"}
        layers.append(row)
        if m is None:
            refused.append(row)
    mode = "replay" if any(r["method"] == "replay" for r in layers) else "exact"
    return {"mode": mode, "layers": layers, "refused": refused,
            "methods": sorted({r["method"] for r in layers})}


def describe_plan(plan: dict) -> str:
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


def check_supported(model, cache: list | None = None) -> dict:
    """The rollback plan for ``model``; raises UnsupportedModel if any layer cannot be rolled back."""
    from mlx_lm.models.cache import make_prompt_cache

    plan = plan_rollback(model, cache if cache is not None else make_prompt_cache(model))
    if plan["refused"]:
        raise UnsupportedModel(describe_plan(plan))
    return plan


class VerifyRollback:
    """Restores target caches to ``n`` accepted drafts after a verify over ``k+1`` positions."""

    def __init__(self, model, cache: list):
        self.model = model
        self.cache = cache
        self.plan = check_supported(model, cache)
        self.replay = self.plan["mode"] == "replay"
        gdn = _gdn_index(model, cache)
        self.linear = [] if self.replay else [(i, gdn[i]) for i in sorted(gdn)]
        self.linear_mods = [mod for _, mod in self.linear]
        self.consts: dict = {}  # stacked per-layer parameters for the batched recurrence
        for c in cache:  # record what sliding windows held before each verify
            if type(c) is RotatingKVCache:
                c.__class__ = _RecordingRotatingKVCache
        self.capture: _Capture | None = None
        self.width = 0
        self.inputs: mx.array | None = None
        self.saved: "CacheSnapshot | None" = None

    @property
    def mode(self) -> str:
        return self.plan["mode"]

    def before_verify(self) -> None:
        """Call right before the verify forward: replay mode snapshots every cache."""
        if self.replay:
            self.saved = CacheSnapshot(self.cache)

    def record(self, capture: _Capture, width: int, inputs: mx.array | None = None) -> None:
        self.capture, self.width, self.inputs = capture, width, inputs

    def rollback(self, accepted: int) -> list[mx.array]:
        """Make the caches hold exactly the first ``accepted + 1`` verified positions.

        Returns the arrays it set (callers may evaluate them to time the work).
        """
        drop = self.width - 1 - accepted
        if drop <= 0:
            return []
        if self.replay:
            return self._replay(accepted)
        touched = []
        cap = self.capture
        if self.linear and (cap is None or len(cap.recurrences) != len(self.linear)):
            raise RuntimeError("verify ran without state capture; cannot roll back linear attention")
        states = _states_after(cap.recurrences, accepted + 1, self.linear_mods, self.consts) if cap is not None and self.linear else []
        conv_inputs = cap.conv_inputs if cap is not None else {}
        for j, (i, mod) in enumerate(self.linear):
            c = self.cache[i]
            n_keep = mod.conv_kernel_size - 1
            conv_in = conv_inputs[id(mod.conv1d)]
            c[0] = conv_in[:, accepted + 1 : accepted + 1 + n_keep]
            c[1] = states[j]
            touched += [c[0], c[1]]
        for c in self.cache:
            if isinstance(c, RotatingKVCache):
                touched += self._rewind_window(c, accepted, cap)
            elif not isinstance(c, ArraysCache):
                c.trim(drop)
        return touched

    @staticmethod
    def _rewind_window(c: RotatingKVCache, accepted: int, cap: _Capture | None) -> list[mx.array]:
        rec = cap.windows.get(id(c)) if cap is not None else None
        if rec is None:
            raise RuntimeError("verify ran without recording a sliding-window cache; cannot roll it back")
        (keys, values, offset, idx), new_k, new_v = rec
        c.keys, c.values, c.offset, c._idx = keys, values, offset, idx
        RotatingKVCache.update_and_fetch(c, new_k[:, :, : accepted + 1], new_v[:, :, : accepted + 1])
        return [c.keys, c.values]

    def _replay(self, accepted: int) -> list[mx.array]:
        if self.saved is None or self.inputs is None:
            raise RuntimeError("replay rollback needs before_verify() and the verify inputs")
        self.saved.restore()
        self.model(self.inputs[: accepted + 1][None], cache=self.cache)
        return [a for c in self.cache for a in _arrays(c.state)]


def _arrays(obj) -> list[mx.array]:
    if isinstance(obj, mx.array):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [a for o in obj for a in _arrays(o)]
    return []


def _frozen(a):
    """A reference that later in-place writes (``a[...] = x``) cannot change."""
    return None if a is None else mx.stop_gradient(a)


def _snapshot(c):
    if isinstance(c, TRIMMABLE):
        return c.offset  # positions past the offset are never read
    if isinstance(c, RotatingKVCache):
        return (_frozen(c.keys), _frozen(c.values), c.offset, c._idx)
    if isinstance(c, ChunkedKVCache):
        return (_frozen(c.keys), _frozen(c.values), c.offset, c.start_position)
    if isinstance(c, ArraysCache):
        return list(c.cache)  # entries are replaced, never written in place
    if isinstance(c, CacheList):
        return tuple(_snapshot(s) for s in c.caches)
    raise UnsupportedModel(f"cannot snapshot a {type(c).__name__} cache")


def _restore(c, s) -> None:
    if isinstance(c, TRIMMABLE):
        extra = c.offset - s
        if extra > 0:
            c.trim(extra)
        elif extra < 0:
            raise RuntimeError("cannot restore a cache checkpoint that is ahead of the cache")
    elif isinstance(c, RotatingKVCache):
        c.keys, c.values, c.offset, c._idx = s
    elif isinstance(c, ChunkedKVCache):
        c.keys, c.values, c.offset, c.start_position = s
    elif isinstance(c, ArraysCache):
        c.cache = list(s)
    elif isinstance(c, CacheList):
        for sub, ss in zip(c.caches, s):
            _restore(sub, ss)


class CacheSnapshot:
    """A snapshot of a cache list that can be restored later, exact for every cache kind in the registry."""

    def __init__(self, cache: list):
        self.cache = cache
        self.saved = [_snapshot(c) for c in cache]

    def restore(self) -> None:
        for c, s in zip(self.cache, self.saved):
            _restore(c, s)
