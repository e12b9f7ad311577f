"""A chunked (parallel within chunks) form of the gated delta rule, for training only.

mlx-lm's CPU path runs the recurrence one position at a time, which makes the backward pass
slow; this form computes the same outputs with batched matmuls (the WY representation, as
in flash-linear-attention's reference ``chunk_gated_delta_rule``). Inference and every
specscope measurement use mlx-lm's own code; ``check()`` compares the two.
"""

from __future__ import annotations

import mlx.core as mx


def _unit_lower_inverse(L: mx.array, n: int) -> mx.array:
    """(I + L)^-1 for strictly lower-triangular L (n x n): (I - L)(I + L^2)(I + L^4)..."""
    eye = mx.eye(n, dtype=L.dtype)
    out = eye - L
    p = L
    m = 2
    while m < n:
        p = p @ p
        out = out @ (eye + p)
        m *= 2
    return out


def chunked_gated_delta(q, k, v, g, beta, chunk: int = 16, log_g=None):
    """q, k: [B, T, Hk, Dk]; v: [B, T, Hv, Dv]; g (decay in (0, 1)), beta: [B, T, Hv]. Returns y [B, T, Hv, Dv].

    ``log_g`` (the decay's log, computed without the exp) avoids log(0) where the decay underflows."""
    B, T, Hk, Dk = q.shape
    Hv, Dv = v.shape[-2:]
    if Hv // Hk > 1:
        q = mx.repeat(q, Hv // Hk, -2)
        k = mx.repeat(k, Hv // Hk, -2)
    pad = (-T) % chunk
    if pad:
        z = lambda x: mx.pad(x, [(0, 0), (0, pad)] + [(0, 0)] * (x.ndim - 2))  # noqa: E731
        q, k, v, beta = z(q), z(k), z(v), z(beta)
        if log_g is not None:
            log_g = mx.pad(log_g, [(0, 0), (0, pad), (0, 0)])
        else:
            g = mx.pad(g, [(0, 0), (0, pad), (0, 0)], constant_values=1.0)
    N, C = (T + pad) // chunk, chunk
    f32 = mx.float32
    tr = lambda x: x.astype(f32).transpose(0, 2, 1, 3).reshape(B, Hv, N, C, x.shape[-1])  # noqa: E731
    q, k, v = tr(q), tr(k), tr(v)
    beta = beta.astype(f32).transpose(0, 2, 1).reshape(B, Hv, N, C)
    lg = (log_g.astype(f32) if log_g is not None else mx.log(g.astype(f32))).transpose(0, 2, 1).reshape(B, Hv, N, C)
    lg = mx.cumsum(lg, axis=-1)
    lower = mx.tril(mx.ones((C, C), dtype=mx.bool_))
    strict = mx.tril(mx.ones((C, C), dtype=mx.bool_), k=-1)
    diff = lg[..., :, None] - lg[..., None, :]
    decay = mx.exp(mx.where(lower, diff, -mx.inf))  # [B,H,N,C,C]
    kb = k * beta[..., None]
    vb = v * beta[..., None]
    L = mx.where(strict, (kb @ k.swapaxes(-1, -2)) * decay, 0.0)
    A = _unit_lower_inverse(L, C)
    u = A @ vb  # [B,H,N,C,Dv]
    w = A @ (kb * mx.exp(lg)[..., None])  # [B,H,N,C,Dk]
    S = mx.zeros((B, Hv, Dk, Dv), dtype=f32)
    outs = []
    for i in range(N):
        qi, ki, ui, wi, lgi = q[:, :, i], k[:, :, i], u[:, :, i], w[:, :, i], lg[:, :, i]
        att = mx.where(lower, (qi @ ki.swapaxes(-1, -2)) * decay[:, :, i], 0.0)
        vnew = ui - wi @ S
        outs.append((qi * mx.exp(lgi)[..., None]) @ S + att @ vnew)
        last = lgi[..., -1:]
        S = S * mx.exp(last)[..., None] + (ki * mx.exp(last - lgi)[..., None]).swapaxes(-1, -2) @ vnew
    y = mx.stack(outs, axis=2).reshape(B, Hv, N * C, Dv)[:, :, :T]
    return y.transpose(0, 2, 1, 3).astype(v.dtype)


def install():
    """Route mlx-lm's qwen3_5 Gated DeltaNet through the chunked form while training (no cache, no mask)."""
    from mlx_lm.models import gated_delta, qwen3_5

    orig = gated_delta.gated_delta_update

    def update(q, k, v, a, b, A_log, dt_bias, state=None, mask=None, *, use_kernel=True, **kw):
        if use_kernel or state is not None or mask is not None or kw:
            return orig(q, k, v, a, b, A_log, dt_bias, state, mask, use_kernel=use_kernel, **kw)
        import mlx.nn as nn

        beta = mx.sigmoid(b)
        log_g = -mx.exp(A_log.astype(mx.float32)) * nn.softplus(a + dt_bias)  # log of compute_g, without the exp
        return chunked_gated_delta(q, k, v, None, beta, log_g=log_g), None

    qwen3_5.gated_delta_update = update


def check(seed: int = 0) -> float:
    """Max abs difference between the chunked form and mlx-lm's sequential ops on random inputs."""
    from mlx_lm.models import gated_delta

    mx.random.seed(seed)
    B, T, Hk, Hv, D = 2, 77, 2, 4, 16
    q = mx.random.normal((B, T, Hk, D)) * 0.3
    k = mx.random.normal((B, T, Hk, D))
    k = k / mx.linalg.norm(k, axis=-1, keepdims=True)
    v = mx.random.normal((B, T, Hv, D))
    g = mx.random.uniform(0.5, 1.0, (B, T, Hv))
    beta = mx.random.uniform(0.0, 1.0, (B, T, Hv))
    ref, _ = gated_delta.gated_delta_ops(q, k, v, g, beta)
    got = chunked_gated_delta(q, k, v, g, beta, chunk=16)
    got2 = chunked_gated_delta(q, k, v, None, beta, chunk=16, log_g=mx.log(g))
    return max(float(mx.abs(ref - got).max()), float(mx.abs(ref - got2).max()))


if __name__ == "__main__":
    print("max abs diff", check())
