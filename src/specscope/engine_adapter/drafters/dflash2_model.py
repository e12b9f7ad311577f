"""DFlash2's network: DFlash's block drafter with a convolution around every layer's attention and MLP, sliding-window
attention, and a candidate selector that walks the block position by position.

Written from the method's reference MLX code (``dflash`` 0.1.0 on PyPI, MIT: ``dflash/model_mlx.py``); the format:
``dflash2_format``. What differs from DFlash (``drafters.dflash``):

- **The layer.** ``x' = x + conv_a.finish(attn(conv_a.prepare(norm1(x))))``, then the same with the MLP and
  ``norm2``. ``prepare(u)`` projects ``u`` to two dynamic kernels (``kernel_projection``: per position, per group of
  ``conv_group_size`` channels, ``conv_kernel_size`` taps each), convolves ``u`` causally along the block with the
  first (plus the static ``base_kernel[0]``, per channel) and hands the second to ``finish``, which convolves the
  sublayer's output with it (plus ``base_kernel[1]``). Tap ``j`` reads the position ``j`` back; before the block's
  first position it reads zeros (the convolution never reaches into the context).
- **Attention.** A ``sliding_attention`` layer's query at position ``P + i`` (``P`` context positions before the
  block) sees the context positions within ``sliding_window − 1`` of it (the last ``W − 1 − i``) and the block; a
  causal layer (``DFlash2Spec.causal``) sees only the block positions up to its own. Context keys are cached as
  DFlash's (every position is kept; only the window is read).
- **Logits.** The target's head, times ``output_multiplier``, then ``cap · tanh(logits / cap)`` with
  ``final_logit_softcapping``.
- **The selector** (``CandidateSelector.walk``): the top ``selector_top_k`` logits per position are the candidates;
  from the verified anchor token, position ``i`` scores each candidate ``c`` as
  ``logit(c) + Σ_r A[prev]_r · proj(h_i)_r · B[c]_r`` (``A`` the predecessor codebook, ``B`` the successor codebook,
  ``proj`` the hidden projection of the drafter's normed output at that position) and picks the argmax, or at
  temperature ``T`` a sample from ``q = softmax(score / T)`` over the candidates; ``prev`` becomes the pick. The walk
  is sequential: position ``i`` needs position ``i − 1``'s pick.
"""

from __future__ import annotations

import mlx.core as mx
import mlx.nn as nn
from mlx_lm.models.cache import KVCache
from mlx_lm.models.rope_utils import initialize_rope

from specscope.engine_adapter.drafters.dflash import GatedMLP, DFlashModel
from specscope.engine_adapter.model.dflash2_format import DFlash2Spec
from specscope.errors import SpecscopeError


def _convolve(x: mx.array, dynamic: mx.array, base: mx.array, group: int) -> mx.array:
    """Causal convolution along the block: ``x`` [B, L, H]; ``dynamic`` [B, L, K, groups] (one weight per tap and
    group of ``group`` channels); ``base`` [K, H] (one weight per tap and channel)."""
    B, L, H = x.shape
    groups = H // group
    xs = x.reshape(B, L, groups, group)
    out = mx.zeros_like(xs)
    for j in range(base.shape[0]):
        shifted = xs if j == 0 else mx.concatenate([mx.zeros_like(xs[:, :j]), xs[:, :-j]], axis=1)
        out = out + base[j].reshape(1, 1, groups, group).astype(x.dtype) * shifted
        out = out + dynamic[:, :, j, :, None] * shifted
    return out.reshape(B, L, H)


class DynamicConv(nn.Module):
    def __init__(self, H: int, kernel: int, group: int):
        super().__init__()
        self.kernel, self.group = kernel, group
        self.base_kernel = mx.zeros((2, kernel, H))
        self.kernel_projection = nn.Linear(H, 2 * kernel * (H // group), bias=False)

    def prepare(self, u: mx.array) -> tuple[mx.array, mx.array]:
        """``u`` convolved with the first dynamic kernel, and the second kernel (for ``finish``)."""
        dyn = self.kernel_projection(u).reshape(*u.shape[:-1], 2, self.kernel, u.shape[-1] // self.group)
        return _convolve(u, dyn[..., 0, :, :], self.base_kernel[0], self.group), dyn[..., 1, :, :]

    def finish(self, y: mx.array, dyn: mx.array) -> mx.array:
        return _convolve(y, dyn, self.base_kernel[1], self.group)


class _Attention(nn.Module):
    def __init__(self, s: DFlash2Spec, layer: int):
        super().__init__()
        H, hd, bias = s.hidden_size, s.head_dim, s.attention_bias
        self.n_heads, self.n_kv = s.num_heads, s.num_kv_heads
        self.scale = hd**-0.5
        self.window = s.sliding_window if s.layer_types[layer] == "sliding_attention" else None
        self.causal = s.causal(layer)
        self.q_proj = nn.Linear(H, s.num_heads * hd, bias=bias)
        self.k_proj = nn.Linear(H, s.num_kv_heads * hd, bias=bias)
        self.v_proj = nn.Linear(H, s.num_kv_heads * hd, bias=bias)
        self.o_proj = nn.Linear(s.num_heads * hd, H, bias=bias)
        self.q_norm = nn.RMSNorm(hd, eps=s.rms_norm_eps)
        self.k_norm = nn.RMSNorm(hd, eps=s.rms_norm_eps)
        self.rope = initialize_rope(hd, base=s.rope_theta, traditional=False, scaling_config=s.rope_scaling,
                                    max_position_embeddings=s.max_position_embeddings)

    def _kv(self, h: mx.array, offset: int) -> tuple[mx.array, mx.array]:
        B, n, _ = h.shape
        k = self.k_norm(self.k_proj(h).reshape(B, n, self.n_kv, -1)).transpose(0, 2, 1, 3)
        v = self.v_proj(h).reshape(B, n, self.n_kv, -1).transpose(0, 2, 1, 3)
        return self.rope(k, offset=offset), v

    def _mask(self, L: int, ctx_len: int) -> mx.array | None:
        """Which keys each block query reads: [L, ctx_len + L] (True: read); None: all of them."""
        if self.window is None and not self.causal:
            return None
        q = mx.arange(L)[:, None]
        key = mx.arange(ctx_len + L)[None]
        in_ctx = key < ctx_len
        ctx_ok = in_ctx if self.window is None else in_ctx & (q + ctx_len - key < self.window)
        block_ok = ~in_ctx if not self.causal else (~in_ctx) & (key - ctx_len <= q)
        return ctx_ok | block_ok

    def __call__(self, x: mx.array, ctx: mx.array, cache: KVCache) -> mx.array:
        B, L, _ = x.shape
        S, start = ctx.shape[1], cache.offset
        P = start + S  # context positions before the block
        q = self.rope(self.q_norm(self.q_proj(x).reshape(B, L, self.n_heads, -1)).transpose(0, 2, 1, 3), offset=P)
        keys, values = self._kv(x, P)
        if S > 0:
            ck, cv = cache.update_and_fetch(*self._kv(ctx, start))
        elif start > 0:
            assert cache.keys is not None and cache.values is not None
            ck, cv = cache.keys[..., :start, :], cache.values[..., :start, :]
        else:
            ck = cv = None
        ctx_len = 0
        if ck is not None and cv is not None:
            if self.window is not None:  # only the last W − 1 context positions are within any query's window
                ck, cv = ck[..., max(0, P - self.window + 1):P, :], cv[..., max(0, P - self.window + 1):P, :]
            ctx_len = ck.shape[2]
            keys, values = mx.concatenate([ck, keys], axis=2), mx.concatenate([cv, values], axis=2)
        out = mx.fast.scaled_dot_product_attention(q, keys, values, scale=self.scale, mask=self._mask(L, ctx_len))
        return self.o_proj(out.transpose(0, 2, 1, 3).reshape(B, L, -1))


class _Layer(nn.Module):
    def __init__(self, s: DFlash2Spec, layer: int):
        super().__init__()
        H = s.hidden_size
        self.self_attn = _Attention(s, layer)
        self.mlp = GatedMLP(H, s.intermediate_size)
        self.input_layernorm = nn.RMSNorm(H, eps=s.rms_norm_eps)
        self.post_attention_layernorm = nn.RMSNorm(H, eps=s.rms_norm_eps)
        self.attention_conv = DynamicConv(H, s.conv_kernel_size, s.conv_group_size)
        self.mlp_conv = DynamicConv(H, s.conv_kernel_size, s.conv_group_size)

    def __call__(self, x: mx.array, ctx: mx.array, cache: KVCache) -> mx.array:
        u, dyn = self.attention_conv.prepare(self.input_layernorm(x))
        x = x + self.attention_conv.finish(self.self_attn(u, ctx, cache), dyn)
        u, dyn = self.mlp_conv.prepare(self.post_attention_layernorm(x))
        return x + self.mlp_conv.finish(self.mlp(u), dyn)


class CandidateSelector(nn.Module):
    def __init__(self, s: DFlash2Spec):
        super().__init__()
        self.top_k = s.selector_top_k
        self.hidden_projection = nn.Linear(s.hidden_size, s.selector_rank, bias=False)
        self.predecessor_codebook = mx.zeros((s.vocab_size, s.selector_rank))  # stored without ".weight"
        self.successor_codebook = mx.zeros((s.vocab_size, s.selector_rank))

    def candidates(self, hidden: mx.array, logits: mx.array) -> tuple[mx.array, mx.array, mx.array, mx.array]:
        """The parallel part (lazy): candidates [k, K], their logits [k, K], the projected hidden states [k, rank] and
        the candidates' successor codes [k, K, rank]."""
        # indices: no gradient flows through the choice (a no-op at inference; training differentiates the rest)
        cands = mx.stop_gradient(mx.argpartition(logits, -self.top_k, axis=-1)[..., -self.top_k:])
        unary = mx.take_along_axis(logits, cands, axis=-1)
        return cands, unary, self.hidden_projection(hidden), self.successor_codebook[cands]

    def scores(self, unary: mx.array, proj: mx.array, succ: mx.array, prev: mx.array) -> mx.array:
        """Each candidate's score after ``prev``: ``unary + <A[prev] * proj, B[cand]>``. The walk's one position
        (``unary`` [K], ``proj`` [rank], ``succ`` [K, rank], ``prev`` [1]) or, teacher-forced in training, any
        leading shape (``unary`` [..., K], ``proj`` [..., rank], ``succ`` [..., K, rank], ``prev`` [...]).
        Returns [K] or [..., K]."""
        a = self.predecessor_codebook[prev] * (proj[None] if prev.ndim > proj.ndim - 1 else proj)  # [..., rank]
        edges = (a[..., None, :] * succ).sum(axis=-1)
        return unary + (edges[0] if prev.ndim > proj.ndim - 1 else edges)

    def walk(self, anchor: int, parts: tuple[mx.array, mx.array, mx.array, mx.array], temp: float = 0.0,
             keys: list[mx.array] | None = None, path: list[int] | None = None) -> tuple[mx.array, mx.array | None]:
        """The sequential part (lazy): the picks [k] (uint32) and, at temperature, q [k, K] (float32), the
        distribution each pick was drawn from over its position's candidates. ``keys``: one random key a position.
        ``path``: walk these picks instead (each position's q then given the path's previous pick: a check's)."""
        cands, unary, proj, succ = parts
        prev = mx.array([anchor], dtype=mx.uint32)
        picks, qs = [], []
        for i in range(cands.shape[0]):
            scores = self.scores(unary[i], proj[i], succ[i], prev)  # [K]
            if temp > 0:
                q = mx.softmax(scores.astype(mx.float32) / temp, axis=-1)
                qs.append(q)
            if path is not None:
                prev = mx.array([path[i]], dtype=mx.uint32)
            else:
                if temp > 0:
                    assert keys is not None
                    j = mx.random.categorical(mx.log(qs[-1]), key=keys[i])
                else:
                    j = mx.argmax(scores, axis=-1)
                prev = cands[i][j][None].astype(mx.uint32)
            picks.append(prev)
        return mx.concatenate(picks), (mx.stack(qs) if qs else None)


class DFlash2Model(DFlashModel):
    """The drafter's own layers and its selector (no embedding, no head: the target's are used). Its cache, its
    prefill (``read_context``) and its forward's signature are DFlash's; its layers are DFlash2's."""

    def __init__(self, spec: DFlash2Spec):
        nn.Module.__init__(self)  # not DFlashModel's: its layers are DFlash's
        H = spec.hidden_size
        self.spec = spec
        self.fc = nn.Linear(len(spec.target_layer_ids) * H, H, bias=False)
        self.hidden_norm = nn.RMSNorm(H, eps=spec.rms_norm_eps)
        self.layers = [_Layer(spec, i) for i in range(spec.num_layers)]  # type: ignore[misc]  # DFlash2 layers
        self.norm = nn.RMSNorm(H, eps=spec.rms_norm_eps)
        self.candidate_selector = CandidateSelector(spec)

    def logits(self, head_out: mx.array) -> mx.array:
        """The target head's output scaled and soft-capped as the drafter was trained."""
        s = self.spec
        out = head_out * s.output_multiplier if s.output_multiplier != 1.0 else head_out
        if s.final_logit_softcapping:
            out = mx.tanh(out / s.final_logit_softcapping) * s.final_logit_softcapping
        return out


def load_dflash2_model(spec: DFlash2Spec, dtype: str | None = None) -> DFlash2Model:
    model = DFlash2Model(spec)
    weights: dict[str, mx.array] = {}
    for f in spec.weight_files:
        for k, v in mx.load(str(f)).items():  # type: ignore[union-attr]  # safetensors: a dict
            weights[k[len(spec.prefix):] if spec.prefix and k.startswith(spec.prefix) else k] = v
    try:
        model.load_weights(list(weights.items()), strict=True)
    except ValueError as exc:
        raise SpecscopeError(f"could not load DFlash2 weights from {spec.path}: {exc}") from None
    from specscope.engine_adapter.model.loader import cast_floating

    cast_floating(model, dtype)  # the run's --dtype, as the target's
    mx.eval(model.parameters())
    return model
