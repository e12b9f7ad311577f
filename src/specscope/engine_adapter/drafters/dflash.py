"""DFlash: a block-diffusion drafter (arXiv 2602.06036) that proposes a whole block in one forward.

The model (written here from the paper and the reference code, z-lab ``dflash/model.py`` and ``model_mlx.py``;
the format and where implementations differ: ``dflash_format``):

- context: the target's hidden states at ``target_layer_ids`` (each layer's output), side by side,
  ``c = hidden_norm(fc(concat))``. Every drafter layer turns ``c`` into keys and values with its own ``k_proj`` /
  ``v_proj`` (keys ``k_norm``-ed, no input norm: as the reference), stored in that layer's KV cache at the context's
  positions;
- queries: the block ``[last token, mask × (B−1)]`` embedded with the *target's* embedding, at the positions that
  follow the context; the block attends to the whole context and to itself, without a causal mask; block keys and
  values are used for this forward only, never cached;
- a Qwen3-style layer (RMSNorm, attention with q/k norms and RoPE, SiLU-gated MLP), then ``norm`` and the *target's*
  output head. Block position ``i >= 1`` gives draft ``i``; position 0 (the known last token) is not read.

The round (``Drafter`` contract): ``begin`` reads the prompt's features into the caches (all but the last position:
the drafter's own prefill); ``draft`` feeds the features not yet read (the prompt's last, then the previous round's
verified positions) into the caches and proposes ``k`` tokens from a block
of ``k + 1`` (the references shrink the block the same way when fewer drafts are wanted); ``update`` keeps the verify
forward's features for the ``accepted + 1`` positions the target verified (the last token and the accepted drafts)
for the next draft. Rejected drafts never reach the drafter's caches, so a rejection needs no rollback of them: the
only provisional state is the block, which is never stored.

Because the block attends to itself in both directions, the first k drafts of a block of B are not the drafts of a
block of k+1: DFlash drafts are not chained across k as the other drafters' are. An acceptance trace recorded at
K_max (``tune``) therefore reads E(k < K_max) from the K_max block, an approximation for DFlash; the confirmation runs
and ``run`` at a given k use the block of that k.

Greedy: drafts are the argmax. At temperature the drafts are drawn from the drafter's own distribution under the
run's sampling (temperature, top-p) and handed to the verify as ``Draft.probs``, so the standard rejection rule
(``Sampling.verify``) judges them against the distribution they were drawn from. (The z-lab reference instead drafts
greedily and accepts a draft when the target's own sample equals it; also exact, with lower acceptance.)
"""

from __future__ import annotations

from typing import Any

import mlx.core as mx
import mlx.nn as nn
from mlx_lm.models.cache import KVCache
from mlx_lm.models.rope_utils import initialize_rope

from specscope.engine_adapter.cache.hidden import install_tap, trunk_parts
from specscope.engine_adapter.model.dflash_format import DFlashSpec, check_fits, read_dflash
from specscope.engine_adapter.drafters.drafter import Draft, Drafter
from specscope.errors import SpecscopeError

PREFILL_STEP = 2048  # context positions the drafter reads per forward in its own prefill


class _Attention(nn.Module):
    def __init__(self, s: DFlashSpec):
        super().__init__()
        H, hd, bias = s.hidden_size, s.head_dim, s.attention_bias
        self.n_heads, self.n_kv, self.head_dim = s.num_heads, s.num_kv_heads, hd
        self.scale = hd**-0.5
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

    def __call__(self, x: mx.array, ctx: mx.array, cache: KVCache) -> mx.array:
        B, L, _ = x.shape
        S, start = ctx.shape[1], cache.offset
        q = self.q_norm(self.q_proj(x).reshape(B, L, self.n_heads, -1)).transpose(0, 2, 1, 3)
        q = self.rope(q, offset=start + S)
        block_k, block_v = self._kv(x, start + S)
        if S > 0:
            keys, values = cache.update_and_fetch(*self._kv(ctx, start))
        elif start > 0:
            assert cache.keys is not None and cache.values is not None
            keys, values = cache.keys[..., :start, :], cache.values[..., :start, :]
        else:
            keys = values = None
        if keys is not None and values is not None:
            block_k = mx.concatenate([keys, block_k], axis=2)
            block_v = mx.concatenate([values, block_v], axis=2)
        out = mx.fast.scaled_dot_product_attention(q, block_k, block_v, scale=self.scale, mask=None)
        return self.o_proj(out.transpose(0, 2, 1, 3).reshape(B, L, -1))


class GatedMLP(nn.Module):
    def __init__(self, H: int, inner: int):
        super().__init__()
        self.gate_proj = nn.Linear(H, inner, bias=False)
        self.up_proj = nn.Linear(H, inner, bias=False)
        self.down_proj = nn.Linear(inner, H, bias=False)

    def __call__(self, x: mx.array) -> mx.array:
        return self.down_proj(nn.silu(self.gate_proj(x)) * self.up_proj(x))


class _Layer(nn.Module):
    def __init__(self, s: DFlashSpec):
        super().__init__()
        self.self_attn = _Attention(s)
        self.mlp = GatedMLP(s.hidden_size, s.intermediate_size)
        self.input_layernorm = nn.RMSNorm(s.hidden_size, eps=s.rms_norm_eps)
        self.post_attention_layernorm = nn.RMSNorm(s.hidden_size, eps=s.rms_norm_eps)

    def __call__(self, x: mx.array, ctx: mx.array, cache: KVCache) -> mx.array:
        h = x + self.self_attn(self.input_layernorm(x), ctx, cache)
        return h + self.mlp(self.post_attention_layernorm(h))


class DFlashModel(nn.Module):
    """The drafter's own layers (no embedding, no head: the target's are used)."""

    def __init__(self, spec: DFlashSpec):
        super().__init__()
        H = spec.hidden_size
        self.fc = nn.Linear(len(spec.target_layer_ids) * H, H, bias=False)
        self.hidden_norm = nn.RMSNorm(H, eps=spec.rms_norm_eps)
        self.layers = [_Layer(spec) for _ in range(spec.num_layers)]
        self.norm = nn.RMSNorm(H, eps=spec.rms_norm_eps)

    def make_cache(self) -> list[KVCache]:
        return [KVCache() for _ in self.layers]

    def read_context(self, features: mx.array, cache: list[KVCache]) -> None:
        """Append context positions to every layer's cache without a block (every layer reads the same projected
        context, so no layer needs another's output): the drafter's own prefill. ``features`` [1, S, n·H]."""
        ctx = self.hidden_norm(self.fc(features))
        for layer, c in zip(self.layers, cache):
            c.update_and_fetch(*layer.self_attn._kv(ctx, c.offset))

    def __call__(self, block_embedded: mx.array, features: mx.array, cache: list[KVCache]) -> mx.array:
        """``block_embedded`` [1, L, H]; ``features`` [1, S, n·H] (S may be 0): the normed block output [1, L, H]."""
        ctx = self.hidden_norm(self.fc(features)) if features.shape[1] else features[..., : block_embedded.shape[-1]]
        h = block_embedded
        for layer, c in zip(self.layers, cache):
            h = layer(h, ctx, c)
        return self.norm(h)


def load_dflash_model(spec: DFlashSpec, dtype: str | None = None) -> DFlashModel:
    model = DFlashModel(spec)
    weights: dict[str, mx.array] = {}
    for f in spec.weight_files:
        for k, v in mx.load(str(f)).items():  # type: ignore[union-attr]  # safetensors: a dict
            weights[k[len(spec.prefix):] if spec.prefix and k.startswith(spec.prefix) else k] = v
    try:
        model.load_weights(list(weights.items()), strict=True)
    except ValueError as exc:
        raise SpecscopeError(f"could not load DFlash weights from {spec.path}: {exc}") from None
    from specscope.engine_adapter.model.loader import cast_floating

    cast_floating(model, dtype)  # the run's --dtype, as the target's
    mx.eval(model.parameters())
    return model


class DFlashDrafter(Drafter):
    kind = "dflash"
    needs_hidden = True
    lazy_drafts = True
    drafts_to_the_end = True  # the reference's last blocks: min(B, tokens left + 1), the bonus cut
    chained = False  # the block attends both ways: the first k drafts of a block of B are not a block of k+1's
    drafts_trees = True  # per-position distributions from one block forward (``tree_drafts``)

    def __init__(self, target, model: DFlashModel, spec: DFlashSpec, sampling: Any = None):
        self.target_model = target.model
        self.model, self.spec = model, spec
        self.sampling = sampling  # the run's decode.sampling.Sampling; None: greedy
        install_tap(self.target_model, layers=spec.target_layer_ids)  # the verify forward records these layers
        self.hidden_mode: tuple[int, ...] = tuple(spec.target_layer_ids)  # Tap.hidden(mode): their outputs side by side
        parts = trunk_parts(self.target_model)
        self.embed, self.head = parts["embed"], parts["head"]
        self.cache: list[KVCache] = []
        self.pending: mx.array | None = None  # features of positions the drafter has not read yet [S, n·H]
        self.draws = 0

    @property
    def block_size(self) -> int:
        return self.spec.block_size

    def begin(self, prompt, first_token, hidden=None):
        if hidden is None:
            raise RuntimeError("the DFlash drafter needs the target's hidden states")
        if hidden.shape[0] != len(prompt):
            raise RuntimeError(f"the target's hidden states cover {hidden.shape[0]} of {len(prompt)} prompt positions")
        self.cache = self.model.make_cache()
        self.draws = 0
        # The drafter's own prefill, here (timed with the target's prefill, as the MTP head's): every prompt position
        # but the last goes into its caches now, so the first round reads one new position like a round that accepted
        # nothing, and its draft time does not hold the whole prompt.
        for i in range(0, hidden.shape[0] - 1, PREFILL_STEP):
            self.model.read_context(hidden[i:min(i + PREFILL_STEP, hidden.shape[0] - 1)][None], self.cache)
            mx.eval([c.state for c in self.cache])
        self.pending = hidden[-1:]

    def read_positions(self) -> int:
        """Context positions in the drafter's caches (every verified position before the last token, after a draft)."""
        return self.cache[0].offset if self.cache else 0

    def draft(self, last_token, k, lazy=False):
        if k == 0:
            return Draft([])
        if k > self.spec.max_draft_tokens:
            raise SpecscopeError(f"DFlash drafts at most block size − 1 = {self.spec.max_draft_tokens} tokens a round "
                                 f"(asked for {k})")
        logits = self.block_logits(last_token, k)
        probs = None
        if self.sampling is None or self.sampling.greedy:
            toks = mx.argmax(logits, axis=-1).astype(mx.uint32)
        else:
            probs = self.sampling.probs(logits)
            key = mx.random.key(self.sampling.seed * 1_000_003 + 500_009 + self.draws)
            toks = mx.random.categorical(mx.log(probs), key=key).astype(mx.uint32)
        self.draws += 1
        extra = {"block": k + 1}
        if lazy:
            return Draft(None, probs=probs, array=toks, extra=extra)
        mx.eval(toks, *([probs] if probs is not None else []))
        return Draft(toks.tolist(), probs=probs, extra=extra)  # type: ignore[arg-type]  # a list of ints

    def draft_tree(self, last_token, depth, budget):
        from specscope.engine_adapter.drafters.tree_drafts import dflash_tree

        return dflash_tree(self, last_token, depth, budget)

    def position_candidates(self, last_token, depth, b):
        from specscope.engine_adapter.drafters.tree_drafts import dflash_candidates

        return dflash_candidates(self, last_token, depth, b)

    def block_logits(self, last_token: int, k: int) -> mx.array:
        """One drafter forward over the block ``[last_token, mask × k]`` after reading the pending context: the
        logits of block positions 1..k, [k, vocab] (lazy)."""
        block = mx.array([last_token] + [self.spec.mask_token_id] * k, dtype=mx.uint32)
        feats = self.pending if self.pending is not None else mx.zeros((0, self.model.fc.weight.shape[1]))
        self.pending = None
        out = self.model(self.embed(block[None]), feats[None], self.cache)
        return self.head(out[0, 1:])

    def update(self, accepted, draft, emitted, hidden=None):
        if hidden is None:
            raise RuntimeError("the DFlash drafter needs the verify forward's hidden states")
        new = hidden[: accepted + 1]  # the last token and the accepted drafts: verified positions
        if self.pending is not None:  # nothing was drafted this round: keep accumulating
            new = mx.concatenate([self.pending, new], axis=0)
        self.pending = new

    def describe(self):
        s = self.spec
        return {**super().describe(), "weights": str(s.path), "variant": s.variant, "block_size": s.block_size,
                "target_layer_ids": list(s.target_layer_ids), "mask_token_id": s.mask_token_id,
                "drafts": "greedy" if self.sampling is None or self.sampling.greedy else "sampled from the drafter (rejection sampling)"}


def load_dflash_drafter(target, path, sampling: Any = None) -> DFlashDrafter:
    """Read, check against ``target`` (refusing a misfit before anything runs) and load a DFlash drafter folder."""
    spec = read_dflash(path)
    check_fits(spec, target.checkpoint.text_config, target.path.name)
    return DFlashDrafter(target, load_dflash_model(spec, dtype=getattr(target, "compute_dtype", None)), spec, sampling)
