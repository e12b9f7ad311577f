"""Bytes and FLOPs per block (``model_cost``), against counts worked out by hand from each config.

The tiny family models are float32 (4 bytes an element), the demo model 4-bit with float32 scales and
biases in groups of 64. Every expected number below is computed from the config values, never from
the model or the classifier.
"""

from __future__ import annotations

import mlx.core as mx
import pytest
from mlx_lm.models.cache import make_prompt_cache

from families import FAMILIES, family_dir
from specscope.engine_adapter.decode.decoding import prefill
from specscope.engine_adapter.model.loader import load_model
from specscope.engine_adapter.measure.model_cost import checkpoint_weight_bytes, model_cost, weight_bytes_total

F32 = 4
V = 4096  # every family's vocabulary
CTX = 10  # cached positions before the forward
N = 3  # positions in the forward


def _cost(name, root, context=CTX):
    lm = load_model(family_dir(name, root))
    cache = make_prompt_cache(lm.model)
    mx.eval(prefill(lm.model, cache, list(range(1, context + 1))))
    return lm, model_cost(lm.model, cache)


def test_dense_tied_qwen3_by_hand(families_root):
    """qwen3, H=64, 3 layers, MLP 128, 4 query heads and 2 KV heads of 16, tied embeddings."""
    lm, mc = _cost("qwen3_tied", families_root)
    f = mc.forward(N, CTX)
    H, L, I, hd = 64, 3, 128, 16
    attn = H * 64 + 2 * (H * 32) + 64 * H  # q (4 heads x 16), k and v (2 x 16), o
    norms_qk = 2 * hd
    assert f["full_attention"]["weight_bytes"] == L * (attn + norms_qk) * F32
    kv = 2 * 2 * hd  # K and V, 2 heads of 16, per token
    assert f["full_attention"]["other_bytes"] == L * (CTX + N + N) * kv * F32  # read the context + the new keys, write N
    scores = 2 * 4 * (hd + hd)  # per position per context token: QK^T and AV over 4 query heads
    assert f["full_attention"]["flops"] == L * (2 * N * attn + N * (CTX + N) * scores)
    mlp = 3 * H * I
    assert f["dense_mlp"]["weight_bytes"] == L * mlp * F32
    assert f["dense_mlp"]["flops"] == L * 2 * N * mlp
    # tied head: the whole embedding is read by the head; the embedding itself reads N rows
    assert f["output_head"]["weight_bytes"] == V * H * F32
    assert f["output_head"]["other_bytes"] == N * V * F32  # logits written
    assert f["output_head"]["flops"] == 2 * N * V * H
    assert f["other"]["weight_bytes"] == N * H * F32 + (2 * L + 1) * H * F32  # N embedding rows + every norm
    assert all(c["distinct_experts"] is None for c in f.values())


def test_moe_routed_union_by_hand(families_root):
    """qwen3_moe: 8 experts of intermediate 32, top-2, router 8 x 64, no shared expert."""
    lm, mc = _cost("qwen3_moe", families_root)
    H, L, E, k, I = 64, 3, 8, 2, 32
    expert = 3 * H * I * F32
    router = E * H * F32
    paths = [b.path for b in mc.blocks if b.block_name == "moe"]
    assert len(paths) == L
    routed = {p: [d] for p, d in zip(paths, (2, 5, 6))}  # distinct experts each layer's router picked
    f = mc.forward(N, CTX, routed)["moe"]
    assert f["weight_bytes"] == L * router + (2 + 5 + 6) * expert
    assert f["distinct_experts"] == pytest.approx(13 / 3)
    assert f["distinct_experts_per_layer"] == [2, 5, 6]
    assert f["routed_slots"] == N * k and f["experts"] == E and f["distinct_source"] == "recorded"
    assert f["flops"] == L * N * (2 * E * H + k * 2 * 3 * H * I)
    # without a recording: the uniform-routing expectation E(1 - (1 - k/E)^n)
    est = mc.forward(1, CTX)["moe"]
    assert est["distinct_experts"] == pytest.approx(E * (1 - (1 - k / E)))
    assert est["distinct_source"] == "uniform-routing estimate"


def test_sliding_window_reads_at_most_its_window(families_root):
    """gemma3_text: 4 layers, every other one a sliding window of 8; 2 KV heads of 16."""
    lm, mc = _cost("gemma3_text", families_root, context=20)
    kv = 2 * 2 * 16
    f = mc.forward(N, 20)["full_attention"]
    full_layers, sliding_layers = 2, 2
    assert f["other_bytes"] == (full_layers * (20 + N + N) + sliding_layers * (8 + N)) * kv * F32


def test_mla_caches_the_latent(families_root):
    """deepseek_v3: MLA keeps kv_lora_rank 32 + qk_rope_head_dim 8 = 40 elements per token."""
    tc = FAMILIES["deepseek_v3"]
    per_token = tc["kv_lora_rank"] + tc["qk_rope_head_dim"]
    lm, mc = _cost("deepseek_v3", families_root)
    f = mc.forward(N, CTX)["full_attention"]
    assert f["other_bytes"] == tc["num_hidden_layers"] * (CTX + N + N) * per_token * F32


def test_recurrent_state_read_and_written_once(families_root):
    """qwen3_5_moe: 3 Gated DeltaNet layers, 4 value heads of 16, 2 key heads of 32, conv kernel 4."""
    tc = FAMILIES["qwen3_5_moe"]["text_config"]
    hv, dv, hk, dk, K = (tc["linear_num_value_heads"], tc["linear_value_head_dim"], tc["linear_num_key_heads"],
                         tc["linear_key_head_dim"], tc["linear_conv_kernel_dim"])
    state = hv * dv * dk  # the delta-rule state
    conv = (K - 1) * (2 * hk * dk + hv * dv)  # the conv window over q, k and v
    lm, mc = _cost("qwen3_5_moe", families_root)
    for n in (1, N):  # independent of n
        assert mc.forward(n, CTX)["linear_attention"]["other_bytes"] == 3 * 2 * (state + conv) * F32


def test_quantized_weights_count_scales_and_biases(hybrid):
    """The demo: 4-bit, groups of 64, float32 scales and biases; experts of 512 -> 256 -> 512."""
    mc = model_cost(hybrid.model)
    moe = next(b for b in mc.blocks if b.block_name == "moe")

    def q4(out, inp):  # packed weights (half a byte each) + a scale and a bias per group of 64
        return out * inp // 2 + 2 * out * (inp // 64) * F32

    assert moe.experts == 16 and moe.top_k == 4
    assert moe.expert_bytes == q4(256, 512) * 2 + q4(512, 256)
    head = next(b for b in mc.blocks if b.block_name == "output_head")
    assert head.weight_bytes == q4(V, 512)
    assert head.flops_per_position == 2 * V * 512  # FLOPs count the unpacked weights
    assert mc.act_dtype == "float32"


@pytest.mark.parametrize("family", ["qwen3_tied", "qwen3_moe", "deepseek_v3", "qwen3_5_moe", "gpt_oss", "mamba2"])
def test_weight_bytes_match_the_checkpoint(family, families_root):
    path = family_dir(family, families_root)
    mc = model_cost(load_model(path).model)
    assert mc.total_weight_bytes() == checkpoint_weight_bytes(path)


def test_demo_weight_bytes_match_its_safetensors(hybrid, model_dirs):
    """Every block's bytes add up to the checkpoint's tensors (MTP tensors left out: mlx-lm does not load them)."""
    total = checkpoint_weight_bytes(model_dirs["hybrid"])
    assert model_cost(hybrid.model).total_weight_bytes() == weight_bytes_total(hybrid.model) == total
    assert total < sum(f.stat().st_size for f in model_dirs["hybrid"].glob("*.safetensors"))  # headers + MTP excluded
