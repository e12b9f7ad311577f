"""MTP heads in every naming that exists, on tiny models built from mlx-lm's own classes.

- ``qwen3_next``: an original (Hugging Face naming) checkpoint with ``mtp.*`` tensors, 1+w norms;
- ``deepseek_v3``: MLA attention, first layer dense, routed + shared experts; the MTP layer is
  ``model.layers.3.*`` (3 trunk layers: the loader drops MTP layers at any depth, mlx-lm only at 61) in an extra file listed in the index;
- ``glm4_moe``: a 4-bit mlx-lm conversion (attention biases) plus the original ``model.layers.{N}.*``
  MTP tensors in an extra file, as one would add them to an mlx-community download.

Every check that matters: inspect reports the head truthfully, it builds, and speculative decoding
with it gives exactly the plain greedy tokens.
"""

import contextlib
import json
import shutil
import sys

import mlx.core as mx
import pytest
from mlx.utils import tree_flatten, tree_unflatten

from specscope.engine_adapter.model.checkpoint import is_mtp_key, mtp_naming, open_checkpoint
from specscope.engine_adapter.decode.decoding import plain_generate, speculative_generate
from specscope.engine_adapter.model.demo_tokenizer import build_tokenizer
from specscope.errors import SpecscopeError
from specscope.engine_adapter.model.inspect_model import describe, mtp_status
from specscope.engine_adapter.model.loader import load_model
from specscope.engine_adapter.drafters.mtp import load_mtp_drafter
from specscope.engine_adapter.drafters.mtp_head import DeepSeekMTPHead, QwenMTPHead
from specscope.engine_adapter.decode.records import tokens_of

N_TOKENS = 16
H = 64
GAIN = 0.1  # residual branches scaled down: the token's own embedding stays visible, so heads agree sometimes
PROMPT = "Explain why a verification pass over several tokens can cost as much as decoding."

COMMON = {"hidden_size": H, "rms_norm_eps": 1e-6, "max_position_embeddings": 2048, "tie_word_embeddings": False,
          "eos_token_id": 0, "rope_theta": 10000.0}
CONFIGS = {
    "qwen3_next": {
        **COMMON, "model_type": "qwen3_next", "architectures": ["Qwen3NextForCausalLM"],
        "num_hidden_layers": 4, "full_attention_interval": 4, "intermediate_size": 128,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "partial_rotary_factor": 0.25,
        "linear_num_value_heads": 4, "linear_num_key_heads": 2, "linear_key_head_dim": 16,
        "linear_value_head_dim": 16, "linear_conv_kernel_dim": 4,
        "num_experts": 4, "num_experts_per_tok": 2, "decoder_sparse_step": 1, "mlp_only_layers": [],
        "moe_intermediate_size": 32, "shared_expert_intermediate_size": 64, "norm_topk_prob": True,
    },
    "deepseek_v3": {
        **COMMON, "model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"],
        "num_hidden_layers": 3, "first_k_dense_replace": 1, "moe_layer_freq": 1, "intermediate_size": 128,
        "num_attention_heads": 4, "num_key_value_heads": 4, "q_lora_rank": 48, "kv_lora_rank": 32,
        "qk_rope_head_dim": 8, "qk_nope_head_dim": 16, "v_head_dim": 16, "rope_scaling": None,
        "n_routed_experts": 4, "n_shared_experts": 1, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
        "routed_scaling_factor": 1.0, "n_group": 1, "topk_group": 1, "topk_method": "noaux_tc",
        "scoring_func": "sigmoid", "norm_topk_prob": True, "num_nextn_predict_layers": 1,
    },
    "glm4_moe": {
        **COMMON, "model_type": "glm4_moe", "architectures": ["Glm4MoeForCausalLM"],
        "num_hidden_layers": 3, "first_k_dense_replace": 1, "intermediate_size": 128,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "partial_rotary_factor": 0.5,
        "attention_bias": True, "use_qk_norm": False, "rope_scaling": None,
        "n_routed_experts": 4, "n_shared_experts": 1, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
        "routed_scaling_factor": 1.0, "n_group": 1, "topk_group": 1, "norm_topk_prob": True,
        "num_nextn_predict_layers": 1,
    },
}
STYLE = {"qwen3_next": "qwen3_next", "deepseek_v3": "deepseek_v3", "glm4_moe": "deepseek_v3"}
REFERENCE: dict[str, dict] = {}  # the MTP decoder layer's weights in mlx-lm's naming, before conversion


# ------------------------------------------------------------------------------------------- builders


def _random(tree_params, seed: int) -> dict:
    """Seeded weights for mlx-lm parameter names (plain norms: ones, or near one with ``jitter``)."""
    out = {}
    for i, (name, v) in enumerate(sorted(tree_params)):
        key = mx.random.key(seed * 1009 + i)
        shape = v.shape
        if "norm" in name.split(".")[-2] and v.ndim == 1:
            w = mx.ones(shape)
        elif name.endswith("e_score_correction_bias"):
            w = mx.zeros(shape)
        elif name.endswith("A_log"):
            w = mx.log(mx.random.uniform(1.0, 16.0, shape, key=key))
        elif name.endswith("dt_bias"):
            w = mx.ones(shape)
        elif name.endswith("conv1d.weight"):
            w = mx.random.normal(shape, key=key) * 0.3
        elif name.endswith("embed_tokens.weight"):
            w = mx.random.normal(shape, key=key)
        elif name.endswith(".bias"):
            w = mx.random.normal(shape, key=key) * 0.02
        else:
            w = mx.random.normal(shape, key=key) * shape[-1] ** -0.5
            if name.endswith(("o_proj.weight", "out_proj.weight", "down_proj.weight")):
                w = w * GAIN
        out[name] = w.astype(mx.float32)
    return out


def _unstack_experts(w: dict) -> dict:
    """mlx-lm's stacked ``switch_mlp`` → the original per-expert tensors."""
    out = {}
    for k, v in w.items():
        if ".switch_mlp." in k:
            pre, rest = k.split(".switch_mlp.")
            for e in range(v.shape[0]):
                out[f"{pre}.experts.{e}.{rest}"] = v[e]
        else:
            out[k] = v
    return out


def _mla_to_original(w: dict, cfg: dict) -> dict:
    """mlx-lm's MLA embed_q / unembed_out → the original ``kv_b_proj`` (the inverse of deepseek_v3.sanitize)."""
    out = {}
    for k, v in w.items():
        if k.endswith("self_attn.embed_q.weight"):
            wk = v.swapaxes(-1, -2)  # [heads, nope, kv_lora]
            wv = w[k.replace("embed_q", "unembed_out")]  # [heads, v_head, kv_lora]
            kv_b = mx.concatenate([wk, wv], axis=1).reshape(-1, cfg["kv_lora_rank"])
            out[k.replace("embed_q.weight", "kv_b_proj.weight")] = kv_b
        elif not k.endswith("self_attn.unembed_out.weight"):
            out[k] = v
    return out


def _qwen_next_to_original(w: dict) -> dict:
    """An mlx-lm qwen3_next parameter set in the original checkpoint's form (what its sanitize undoes)."""
    out = {}
    for k, v in _unstack_experts(w).items():
        if k.endswith((".input_layernorm.weight", ".post_attention_layernorm.weight", "model.norm.weight",
                       ".q_norm.weight", ".k_norm.weight")):
            v = v - 1.0
        elif k.endswith("conv1d.weight"):
            v = v.moveaxis(2, 1)
        out[k] = v
    return out


def _head_proj(seed: int) -> mx.array:
    # Mostly the next token's embedding, a little hidden state (as the demo model's head).
    eye = mx.eye(H)
    return mx.concatenate([eye, 0.1 * eye], axis=1) + 0.002 * mx.random.normal((H, 2 * H), key=mx.random.key(seed))


def _norm_weights(seed: int) -> mx.array:
    """Not all ones, so that a wrong 1+w convention shows."""
    return 1.0 + 0.1 * mx.random.normal((H,), key=mx.random.key(seed))


def _mtp_tensors(kind: str, model, cfg: dict, seed: int) -> dict:
    """The MTP head's tensors in the original checkpoint's naming and norm convention."""
    from mlx_lm.utils import _get_classes

    module = sys.modules[type(model).__module__]
    layer_cls = type(model.layers[-1])  # a full-attention MoE layer of the trunk
    args = _get_classes(cfg)[1].from_dict(cfg)
    if kind == "qwen3_next":
        layer = layer_cls(args, cfg["full_attention_interval"] - 1)
        w = _random(tree_flatten(layer.parameters()), seed)
        REFERENCE[kind] = w
        w = {k: (v - 1.0 if v.ndim == 1 and "norm" in k else v) for k, v in _unstack_experts(w).items()}
        out = {f"mtp.layers.0.{k}": v for k, v in w.items()}
        out["mtp.fc.weight"] = _head_proj(seed)
        for i, n in enumerate(("pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm")):
            out[f"mtp.{n}.weight"] = _norm_weights(seed + 1 + i) - 1.0  # 1+w on disk
        return out
    n = cfg["num_hidden_layers"]
    assert module.__name__.endswith(kind)
    layer = layer_cls(args, n)
    REFERENCE[kind] = _random(tree_flatten(layer.parameters()), seed)
    w = _unstack_experts(REFERENCE[kind])
    if kind == "deepseek_v3":
        w = _mla_to_original(w, cfg)
    trunk = dict(tree_flatten(model.parameters()))
    w.update({
        "eh_proj.weight": _head_proj(seed),
        "enorm.weight": _norm_weights(seed + 1),
        "hnorm.weight": _norm_weights(seed + 2),
        "shared_head.norm.weight": _norm_weights(seed + 3),
        "shared_head.head.weight": trunk["lm_head.weight"],  # copies, as the real checkpoints carry
        "embed_tokens.weight": trunk["model.embed_tokens.weight"],
    })
    return {f"model.layers.{n}.{k}": v for k, v in w.items()}


def build_tiny(path, kind: str, seed: int = 1):
    """A model folder as it would be downloaded, with the MTP head in the original naming."""
    from mlx_lm.utils import _get_classes, quantize_model, save_config, save_model

    path.mkdir(parents=True)
    vocab = build_tokenizer(path, 512)
    cfg = {**CONFIGS[kind], "vocab_size": vocab}
    model_class, args_class = _get_classes(cfg)
    model = model_class(args_class.from_dict(cfg))
    model.update(tree_unflatten(list(_random(tree_flatten(model.parameters()), seed).items())))
    mx.eval(model.parameters())
    mtp = _mtp_tensors(kind, model, cfg, seed + 100)
    mtp = {k: v.astype(mx.bfloat16) if k.endswith("weight") else v for k, v in mtp.items()}
    if kind == "qwen3_next":  # an original checkpoint: Hugging Face names, MTP tensors in the second shard
        trunk = _qwen_next_to_original(dict(tree_flatten(model.parameters())))
        files = {"model-00001-of-00002.safetensors": trunk, "model-00002-of-00002.safetensors": mtp}
        for f, w in files.items():
            mx.save_safetensors(str(path / f), w, metadata={"format": "pt"})
        index = {"metadata": {}, "weight_map": {k: f for f, w in files.items() for k in w}}
    else:
        if kind == "glm4_moe":  # an mlx-lm 4-bit conversion
            with contextlib.redirect_stdout(sys.stderr):
                model, cfg = quantize_model(model, cfg, group_size=32, bits=4)
        save_model(path, model)
        mx.save_safetensors(str(path / "model-mtp.safetensors"), mtp, metadata={"format": "pt"})
        index = json.loads((path / "model.safetensors.index.json").read_text())
        index["weight_map"].update({k: "model-mtp.safetensors" for k in mtp})
    (path / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    save_config(cfg, path / "config.json")
    return path, mtp


# ------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("mtp-namings")
    return {kind: build_tiny(root / kind, kind) for kind in CONFIGS}


@pytest.fixture(scope="module")
def loaded(tiny):
    return {kind: load_model(path) for kind, (path, _) in tiny.items()}


@pytest.fixture(scope="module")
def plain(loaded):
    return {kind: tokens_of(list(plain_generate(lm.model, lm.encode(PROMPT), N_TOKENS))) for kind, lm in loaded.items()}


# ------------------------------------------------------------------------------------------- tests


def test_mtp_key_helpers():
    assert is_mtp_key("mtp.fc.weight") and is_mtp_key("model.mtp.layers.0.mlp.gate.weight")
    assert is_mtp_key("model.layers.61.eh_proj.weight", 61) and is_mtp_key("model.layers.62.enorm.weight", 61)
    assert not is_mtp_key("model.layers.61.eh_proj.weight")  # without the trunk's layer count: unknowable
    assert not is_mtp_key("model.layers.60.mlp.gate.weight", 61) and not is_mtp_key("lm_head.weight", 61)
    assert not is_mtp_key("model.layers.61", 61)
    assert mtp_naming(["mtp.fc.weight"], "qwen3_5_moe") == "qwen3_5"
    assert mtp_naming(["mtp.fc.weight"], "qwen3_next") == "qwen3_next"
    assert mtp_naming(["model.layers.3.eh_proj.weight"], "glm4_moe") == "deepseek_v3"
    assert mtp_naming([], "qwen3_next") is None


@pytest.mark.parametrize("kind", list(CONFIGS))
def test_inspect_reports_the_head_and_its_naming(kind, tiny, loaded):
    path, mtp = tiny[kind]
    status = describe(loaded[kind])["mtp"]
    assert status["available"] and status["style"] == STYLE[kind]
    assert status["tensors"] == len(mtp) and status["layers"] == 1 and status["missing"] == []
    assert "mtp" in describe(loaded[kind])["drafters"]
    assert set(open_checkpoint(path).mtp_keys()) == set(mtp)  # exactly the MTP tensors, no trunk layer


@pytest.mark.parametrize("kind", list(CONFIGS))
def test_head_builds_from_the_trunks_own_layer_classes(kind, tiny, loaded):
    lm = loaded[kind]
    drafter = load_mtp_drafter(lm)
    head = drafter.head
    layer = head.layers[0] if kind == "qwen3_next" else head.mtp_block
    trunk_layer = lm.model.layers[-1]
    assert type(layer) is type(trunk_layer) and not getattr(layer, "is_linear", False)
    assert type(layer.mlp) is type(trunk_layer.mlp)  # the MoE block, like the trunk's last layer
    assert drafter.describe()["style"] == STYLE[kind]
    _, mtp = tiny[kind]
    if kind == "qwen3_next":
        assert isinstance(head, QwenMTPHead)
        # 1+w on disk: the loaded norm is the stored weight plus one
        stored = mtp["mtp.pre_fc_norm_embedding.weight"].astype(mx.float32)
        assert mx.allclose(head.pre_fc_norm_embedding.weight, stored + 1.0, atol=1e-2)
    else:
        n = CONFIGS[kind]["num_hidden_layers"]
        assert isinstance(head, DeepSeekMTPHead) and head.info.layer == n
        assert "shared_head.head.weight" in drafter.describe()["not_loaded"]
        # plain RMSNorm: loaded as stored, no +1
        assert mx.array_equal(head.enorm.weight, mtp[f"model.layers.{n}.enorm.weight"].astype(head.enorm.weight.dtype))
        assert mx.array_equal(head.shared_head.norm.weight,
                              mtp[f"model.layers.{n}.shared_head.norm.weight"].astype(head.enorm.weight.dtype))
    if kind != "glm4_moe":  # unquantized: every decoder-layer weight is the reference one (bf16 on disk)
        got = dict(tree_flatten(layer.parameters()))
        ref = REFERENCE[kind]
        assert set(got) == set(ref)
        for k, v in ref.items():
            want = v.astype(mx.bfloat16).astype(got[k].dtype)
            if kind == "qwen3_next" and v.ndim == 1 and "norm" in k:
                want = (v - 1.0).astype(mx.bfloat16).astype(got[k].dtype) + 1.0
            if k.endswith("e_score_correction_bias"):
                want = v  # stored fp32 (bias tensors are not ".weight"), kept fp32 by the cast predicate
            assert mx.allclose(got[k], want, atol=1e-6), k
    else:  # the 4-bit trunk's head is quantized like it
        assert hasattr(head.mtp_block.self_attn.q_proj, "scales") and head.mtp_block.self_attn.q_proj.bias is not None


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("kind", list(CONFIGS))
def test_mtp_greedy_equals_plain(kind, k, loaded, plain):
    lm = loaded[kind]
    drafter = load_mtp_drafter(lm)
    ev = list(speculative_generate(lm.model, lm.encode(PROMPT), drafter, k, N_TOKENS))
    assert tokens_of(ev) == plain[kind]
    assert sum(r["accepted"] for r in ev[1:]) > 0  # the head is wired right: it agrees with the trunk part of the time


def test_deepseek_naming_from_another_directory(tmp_path, tiny, plain):
    """A conversion without MTP tensors plus --mtp-weights: the layer index comes from the target's config."""
    path, _ = tiny["glm4_moe"]
    converted = tmp_path / "converted"
    shutil.copytree(path, converted)
    original = tmp_path / "original"
    original.mkdir()
    shutil.move(converted / "model-mtp.safetensors", original / "model-00093-of-00093.safetensors")
    target = load_model(converted)
    status = describe(target)["mtp"]
    assert not status["available"] and status["style"] is None and status["tensors"] == 0
    assert "mtp" not in describe(target)["drafters"]
    with pytest.raises(SpecscopeError, match="no mtp"):
        load_mtp_drafter(target)
    drafter = load_mtp_drafter(target, weights_path=str(original))
    ev = list(speculative_generate(target.model, target.encode(PROMPT), drafter, 2, N_TOKENS))
    assert tokens_of(ev) == plain["glm4_moe"]


def test_incomplete_deepseek_naming_is_not_available(tmp_path, tiny):
    path, mtp = tiny["glm4_moe"]
    n = CONFIGS["glm4_moe"]["num_hidden_layers"]
    broken = tmp_path / "broken"
    shutil.copytree(path, broken)
    w = {k: v for k, v in mtp.items() if not k.endswith("eh_proj.weight")}
    mx.save_safetensors(str(broken / "model-mtp.safetensors"), w, metadata={"format": "pt"})
    status = mtp_status(open_checkpoint(broken))
    assert not status["available"] and status["style"] == "deepseek_v3"
    assert status["missing"] == [f"layers.{n}.eh_proj.weight"]


def test_model_without_mtp_weights(tmp_path, tiny):
    path, _ = tiny["qwen3_next"]
    bare = tmp_path / "bare"
    shutil.copytree(path, bare)
    (bare / "model-00002-of-00002.safetensors").unlink()  # the shard with the mtp.* tensors
    status = mtp_status(open_checkpoint(bare))
    assert status == {**status, "available": False, "tensors": 0, "style": None, "layers": 0}


def test_deepseek_naming_pre_norm_hidden(loaded, plain):
    lm = loaded["glm4_moe"]
    drafter = load_mtp_drafter(lm, hidden="pre-norm")
    ev = list(speculative_generate(lm.model, lm.encode(PROMPT), drafter, 3, N_TOKENS))
    assert tokens_of(ev) == plain["glm4_moe"]
