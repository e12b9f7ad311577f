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
  layers of one shape stacked on the batch axis into one call (``recurrence.states_after``).
- ``replay``: any other recurrent cache (Mamba, ShortConv, q/k/v convs, CacheLists
  holding them, chunked attention). Exact but not free: every cache is restored to
  its state before the verify and the accepted positions are run through the model
  again. Sessions label it, and its cost is counted as rollback time.

A cache of a kind with no strategy is refused before anything runs
(``UnsupportedModel``), naming the layer type: never profiled wrongly.

Planning (which strategy each cache gets, refusal): ``rollback_plan``; capture during the verify:
``capture``; the Gated DeltaNet state rebuild: ``recurrence``. ``CacheSnapshot`` (below) restores any cache
list to an earlier point, exact for every cache kind in the registry.
"""

from __future__ import annotations

import mlx.core as mx
from mlx_lm.models.cache import ArraysCache, CacheList, ChunkedKVCache, RotatingKVCache

from specscope.engine_adapter.cache.capture import Capture, record_windows
from specscope.engine_adapter.cache.recurrence import states_after
from specscope.engine_adapter.cache.rollback_plan import TRIMMABLE, UnsupportedModel, check_supported, gdn_index


class VerifyRollback:
    """Restores target caches to ``n`` accepted drafts after a verify over ``k+1`` positions."""

    def __init__(self, model, cache: list):
        self.model = model
        self.cache = cache
        self.plan = check_supported(model, cache)
        self.replay = self.plan["mode"] == "replay"
        gdn = gdn_index(model, cache)
        self.linear = [] if self.replay else [(i, gdn[i]) for i in sorted(gdn)]
        self.linear_mods = [mod for _, mod in self.linear]
        self.consts: dict = {}  # stacked per-layer parameters for the batched recurrence
        record_windows(cache)  # record what sliding windows held before each verify
        self.capture: Capture | None = None
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

    def record(self, capture: Capture, width: int, inputs: mx.array | None = None) -> None:
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
        states = states_after(cap.recurrences, accepted + 1, self.linear_mods, self.consts) if cap is not None and self.linear else []
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
    def _rewind_window(c: RotatingKVCache, accepted: int, cap: Capture | None) -> list[mx.array]:
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
