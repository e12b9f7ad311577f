"""Gated DeltaNet states after ``n`` accepted positions, rebuilt from a captured verify's recurrences.

The recurrence alone runs again over the accepted positions (no weights read, no forward re-run), all
layers of one shape stacked on the batch axis into one call (``states_after``).
"""

from __future__ import annotations

import sys

import mlx.core as mx
import mlx.nn as nn


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


def states_after(recurrences: list[tuple[tuple, dict]], n: int, mods: list[nn.Module],
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
