"""One verify forward over every node of a draft tree (``cache.tree.Tree``), exact, and the caches left afterwards
exactly as plain decoding along the accepted path would leave them.

The forward is mlx-lm's own model call over the tree's tokens in node order; while a ``TreeForward`` is open
(``active.TREE``, only around that call) four things see the tree instead of a sequence:

- **full attention** (``KVCache``): the mask the model asks its cache for (``make_mask``) is the tree's, every node
  seeing the cached prefix, itself and its ancestors only; the rotary position of each node is the prefix length
  plus its depth (the attention's ``rope`` module applies a per-node offset, one rotary call with the nodes on its
  batch axis: ``mx.fast.rope`` takes an offset per batch row). The new keys and values go into the cache in node
  order, as for a chain.
- **Gated DeltaNet** (mlx-lm's ``qwen3_5`` / ``qwen3_next`` linear attention): the short convolution runs on each
  node's own window (the cached conv state and the node's ancestors, then the node), and the recurrence runs each
  node from its *parent's* state: the nodes of one depth are stacked on the batch axis, so the tree costs as many
  recurrence steps as it is deep (each the module's own ``gated_delta_update``), and every node's state is kept.

After acceptance ``TreeForward.keep(path)`` compacts: each KV cache's entries of the accepted path are moved, in path
order, to follow the prefix and the rest dropped; each Gated DeltaNet layer's conv state becomes the last
``kernel - 1`` inputs along the path and its recurrent state the state after the path's last node.

Any other cache kind is refused with its reason (``refusal``): a sliding window, a quantized or chunked cache, or
another recurrent state could be made exact only with work specscope does not do yet.
"""

from __future__ import annotations

import mlx.core as mx
import mlx.nn as nn
import numpy as np
from mlx_lm.models.cache import ArraysCache, KVCache

from specscope.engine_adapter.cache.active import TREE
from specscope.engine_adapter.cache.capture import install_capture, is_hybrid
from specscope.engine_adapter.cache.rollback_plan import cache_name, gdn_index
from specscope.engine_adapter.cache.tree import Tree


class _TreeKVCache(KVCache):
    """A KVCache whose mask, while a tree verify is open, is the tree's (prefix, ancestors and the node itself)."""

    def make_mask(self, *args, **kwargs):
        tree = TREE.get()
        if tree is not None:
            return tree.attention_mask(self.offset)
        return super().make_mask(*args, **kwargs)


_tree_ropes: dict[type, type] = {}  # mlx-lm's rope class -> its tree-aware subclass (made once, no run's data)


def _tree_rope(cls: type) -> type:
    if cls not in _tree_ropes:

        def __call__(self, x, offset=0):
            tree = TREE.get()
            if tree is None or x.ndim != 4 or x.shape[-2] != tree.n or x.shape[0] != 1:
                return cls.__call__(self, x, offset)
            # [1, H, N, D] -> [N, H, 1, D]: each node a batch row, its offset the prefix plus its depth
            out = cls.__call__(self, x.swapaxes(0, 2), offset + tree.depths)
            return out.swapaxes(0, 2)

        _tree_ropes[cls] = type(f"Tree{cls.__name__}", (cls,), {"__call__": __call__})
    return _tree_ropes[cls]


def _attentions(model) -> list[tuple[int, nn.Module]]:
    return [(i, layer.self_attn) for i, layer in enumerate(model.layers) if hasattr(layer, "self_attn")]


def refusal(model, cache: list) -> str | None:
    """Why a tree verify cannot be exact on this model (its first layer that stops it), or None."""
    layers = list(model.layers)
    if len(layers) != len(cache):
        return "its caches do not line up with its layers one to one, so a tree's branch states cannot be placed"
    gdn = gdn_index(model, cache)
    for i, (layer, c) in enumerate(zip(layers, cache)):
        where = f"layer {i} ({type(layer).__name__})"
        if type(c) in (KVCache, _TreeKVCache):
            attn = getattr(layer, "self_attn", None)
            if attn is None or not isinstance(getattr(attn, "rope", None), nn.Module):
                return f"{where} has no rotary module specscope can give per-node positions"
            continue
        if isinstance(c, ArraysCache) and i in gdn:
            continue
        return (f"{where} uses a {cache_name(c)} cache, which a tree verify cannot keep exact (each branch would "
                "need its own copy of it); the tree needs full-attention KV caches and Gated DeltaNet layers")
    return None


def install_tree(model, cache: list) -> None:
    """Prepare a model and its cache list for tree verifies (idempotent; no cost when no tree is open)."""
    if is_hybrid(model):
        install_capture(model)  # the conv and recurrence hooks the tree's Gated DeltaNet path runs in
    for _, attn in _attentions(model):
        rope = attn.rope
        if type(rope) not in _tree_ropes.values():
            rope.__class__ = _tree_rope(type(rope))
    for c in cache:
        if type(c) is KVCache:
            c.__class__ = _TreeKVCache


class TreeForward:
    """One tree verify: what its forward reads (mask, positions, each node's conv window and parent state) and what
    it leaves for ``keep`` (every Gated DeltaNet layer's conv input and the state after every node)."""

    def __init__(self, tree: Tree, model, cache: list):
        self.tree, self.n, self.model, self.cache = tree, len(tree), model, cache
        self.depths = mx.array(tree.depths, dtype=mx.int32)
        self._vis = tree.visibility()
        self._masks: dict[int, mx.array] = {}
        levels = tree.by_depth()
        self.slot = {node: (d, r) for d, level in enumerate(levels) for r, node in enumerate(level)}
        self.levels = [(mx.array(level, dtype=mx.int32),
                        mx.array([self.slot[tree.parents[i]][1] for i in level], dtype=mx.int32) if d else None)
                       for d, level in enumerate(levels)]
        self.inverse = mx.array(np.argsort([i for level in levels for i in level]).astype(np.int32))
        self.conv_inputs: dict[int, mx.array] = {}   # id(conv1d) -> its input [1, kernel - 1 + N, C]
        self.states: list[list[mx.array]] = []        # per Gated DeltaNet call (layer order): per depth, [m, ...]
        self._windows: dict[int, mx.array] = {}
        self.prefix = next((c.offset for c in cache if isinstance(c, KVCache)), 0)

    # -- what the forward asks while it runs -----------------------------------------------------------------------
    def attention_mask(self, offset: int) -> mx.array:
        """[N, offset + N] bool: every node sees the prefix, its ancestors and itself."""
        if offset not in self._masks:
            self._masks[offset] = mx.array(np.concatenate([np.ones((self.n, offset), dtype=bool), self._vis], axis=1))
        return self._masks[offset]

    def windows(self, kernel: int) -> mx.array:
        """[N, kernel] indices into a conv input ``[conv state (kernel - 1), node inputs (N)]``: each node's window."""
        if kernel not in self._windows:
            rows = []
            for i in range(self.n):
                seq = list(range(kernel - 1)) + [kernel - 1 + j for j in self.tree.path(i)]
                rows.append(seq[-kernel:])
            self._windows[kernel] = mx.array(np.array(rows, dtype=np.int32))
        return self._windows[kernel]

    def conv(self, conv_mod: nn.Module, x: mx.array, call) -> mx.array:
        """The short convolution of every node over its own window (the module's own conv, one window a row)."""
        B, L, C = x.shape
        kernel = L - self.n + 1
        if B != 1 or kernel < 1:
            raise RuntimeError(f"a tree verify runs one sequence of {self.n} nodes (got a conv input of {x.shape})")
        self.conv_inputs[id(conv_mod)] = x
        w = mx.take(x[0], self.windows(kernel), axis=0)  # [N, kernel, C]
        return call(w).reshape(1, self.n, -1)

    def recurrence(self, original, q, k, v, a, b, A_log, dt_bias, state, mask, **kw):
        """``gated_delta_update`` over the tree: depth by depth, every node from its parent's state."""
        if q.shape[0] != 1 or q.shape[1] != self.n or mask is not None:
            raise RuntimeError(f"a tree verify runs one unmasked sequence of {self.n} nodes (got {q.shape})")
        if state is None:
            state = mx.zeros((1, v.shape[-2], v.shape[-1], k.shape[-1]), dtype=mx.float32)
        ys: list[mx.array] = []
        blocks: list[mx.array] = []
        for d, (nodes, parent_rows) in enumerate(self.levels):
            st = state if parent_rows is None else mx.take(blocks[-1], parent_rows, axis=0)

            def rows(t: mx.array) -> mx.array:  # [1, N, ...] -> [m, 1, ...]: this depth's nodes on the batch axis
                return mx.expand_dims(mx.take(t[0], nodes, axis=0), 1)

            y, s = original(rows(q), rows(k), rows(v), rows(a), rows(b), A_log, dt_bias, st, None, **kw)
            ys.append(y[:, 0])
            blocks.append(s)
        self.states.append(blocks)
        out = mx.take(mx.concatenate(ys, axis=0), self.inverse, axis=0)[None]
        return out, blocks[-1][:1]  # the state the module stores is provisional: ``keep`` sets the path's

    # -- after acceptance ------------------------------------------------------------------------------------------
    def keep(self, path: list[int]) -> list[mx.array]:
        """Leave every cache as plain decoding over the accepted ``path`` (node indices from the root) leaves it;
        returns the arrays set (callers may evaluate them to time the work)."""
        if not path or path[0] != 0 or any(self.tree.parents[b] != a for a, b in zip(path, path[1:])):
            raise ValueError(f"{path} is not a path from the root")
        return self._keep_kv(path) + self._keep_states(path)

    def _keep_kv(self, path: list[int]) -> list[mx.array]:
        """Each KV cache: the path's entries, in path order, right after the prefix; the rest dropped."""
        touched: list[mx.array] = []
        n_keep = len(path)
        moved = path != list(range(n_keep))
        for c in self.cache:
            if isinstance(c, KVCache) and c.keys is not None and c.values is not None:
                if c.offset != self.prefix + self.n:
                    raise RuntimeError(f"a KV cache holds {c.offset} positions after a tree verify of {self.n} nodes "
                                       f"after {self.prefix}")
                if moved:
                    idx = mx.array([self.prefix + i for i in path], dtype=mx.int32)
                    keys, values = c.keys, c.values
                    keys[..., self.prefix:self.prefix + n_keep, :] = mx.take(keys, idx, axis=2)
                    values[..., self.prefix:self.prefix + n_keep, :] = mx.take(values, idx, axis=2)
                    touched += [keys, values]
                c.offset = self.prefix + n_keep
        return touched

    def _keep_states(self, path: list[int]) -> list[mx.array]:
        """Each Gated DeltaNet layer: the conv state along the path and the recurrent state after its last node."""
        touched: list[mx.array] = []
        linear = sorted(gdn_index(self.model, self.cache).items())
        if linear and len(self.states) != len(linear):
            raise RuntimeError("the tree verify ran without its Gated DeltaNet hooks; cannot keep the path's states")
        d, r = self.slot[path[-1]]
        for (i, mod), blocks in zip(linear, self.states):
            c = self.cache[i]
            kernel = mod.conv_kernel_size
            seq = list(range(kernel - 1)) + [kernel - 1 + j for j in path]
            x = self.conv_inputs[id(mod.conv1d)]
            c[0] = mx.take(x, mx.array(seq[-(kernel - 1):], dtype=mx.int32), axis=1)
            c[1] = blocks[d][r:r + 1]
            touched += [c[0], c[1]]
        return touched


def verify_tree(model, cache: list, tree: Tree, forward: TreeForward | None = None) -> tuple[mx.array, TreeForward]:
    """The target's logits at every node [N, vocab] (lazy) and the ``TreeForward`` to ``keep`` the accepted path
    (``forward``: one made for this tree and cache already, e.g. a check's deliberately broken one)."""
    tf = forward if forward is not None else TreeForward(tree, model, cache)
    inputs = mx.array(tree.tokens, dtype=mx.uint32)[None]
    with TREE.open(tf):
        logits = model(inputs, cache=cache)[0]
    return logits, tf
