"""Breakdown and inspect from each layer's own structure, on every family in ``families.FAMILIES``.

- every parameter of the model sits in exactly one timed block (nothing silently untimed);
- the measured breakdown runs, reports every block the structure has, and each block is
  entered by a timed forward (blocks + inter-block overhead = whole graph, by construction);
- inspect's layer mix, experts, top-k, shared expert, active parameters and KV-cache estimate
  equal what each family's config says, derived here independently of the classifier.
"""

from __future__ import annotations

import mlx.core as mx
import mlx.nn as nn
import pytest
from mlx.utils import tree_flatten

from families import FAMILIES, family_dir
from specscope.engine_adapter.measure.breakdown import measure_breakdown
from specscope.engine_adapter.model.block_names import BLOCK_NAMES
from specscope.engine_adapter.model.inspect_model import describe, format_description
from specscope.engine_adapter.model.loader import load_model
from specscope.engine_adapter.model.structure import classify

PROMPT = "Why can verifying several tokens cost as much as one?"
CTX = 4096  # describe's memory_estimate_context


def _load(family, root):
    return load_model(family_dir(family, root))


def _owners(structure, path):
    return [b for b in structure.blocks if b.path == "" or path == b.path or path.startswith(b.path + ".")]


def _assert_covered(model, structure, nested: bool = False):
    """Each parameter is timed in exactly one block: the innermost that holds it.

    Blocks only nest inside an unclassified container with parameters of its own, which is timed by
    exclusive time (its wall minus the blocks inside), so a parameter's time still lands once.
    """
    for path, _ in tree_flatten(model.parameters()):
        owners = sorted(_owners(structure, path), key=lambda b: len(b.path))
        assert owners, f"{path}: in no timed block"
        if not nested:
            assert len(owners) == 1, f"{path}: timed by {[o.path for o in owners]}"
        assert all(o.block_name == "unclassified" for o in owners[:-1]), [(o.path, o.block_name) for o in owners]


# --- what each family's config says, without the classifier -------------------------------------


def _text(cfg):
    return {**cfg, **cfg.get("text_config", {})}


def expected_mix(name: str) -> dict:
    tc = _text(FAMILIES[name])
    n = tc.get("num_hidden_layers")
    lin = full = sliding = mla = moe = dense = 0
    if name in ("mamba", "mamba2"):
        lin = n
    elif name == "nemotron_h":
        pat = tc["hybrid_override_pattern"]
        n = len(pat)
        lin, full, moe, dense = pat.count("M"), pat.count("*"), pat.count("E"), pat.count("-")
    elif name in ("granitemoehybrid", "lfm2", "olmo_hybrid"):
        full = sum(t in ("attention", "full_attention") for t in tc["layer_types"])
        lin = n - full
        moe, dense = (n, 0) if tc.get("num_local_experts") else (0, n)
    elif name == "falcon_h1":  # attention and Mamba side by side in every layer
        lin = full = dense = n
    elif name == "kimi_linear":
        la = tc["linear_attn_config"]
        lin, full = len(la["kda_layers"]), len(la["full_attn_layers"])
        mla = full
        dense = tc["first_k_dense_replace"]
        moe = n - dense
    elif name == "jamba":
        full = sum(i % tc["attn_layer_period"] == tc["attn_layer_offset"] for i in range(n))
        moe = sum(i % tc["expert_layer_period"] == tc["expert_layer_offset"] for i in range(n))
        lin, dense = n - full, n - moe
    elif name == "gpt_oss":
        full, moe = n, n
        sliding = tc["layer_types"].count("sliding_attention")
    elif name == "gemma3_text":
        full, dense = n, n
        sliding = sum((i + 1) % tc["sliding_window_pattern"] != 0 for i in range(n))
    elif name in ("qwen3_tied", "llama_tied"):
        full, dense = n, n
    elif name in ("qwen3_next", "qwen3_5_moe"):
        full = sum((i + 1) % tc["full_attention_interval"] == 0 for i in range(n))
        lin = n - full
        assert tc["decoder_sparse_step"] == 1 and not tc.get("mlp_only_layers")
        moe = n
    elif name == "qwen3_moe":
        full, moe = n, n
    elif name in ("deepseek_v3", "glm4_moe"):
        full = n
        mla = n if "kv_lora_rank" in tc else 0
        dense = tc["first_k_dense_replace"]
        moe = n - dense
    elif name == "plamo2":
        step = tc["mamba_step"]
        lin = sum(i % step != step // 2 for i in range(n))
        full, dense = n - lin, n
    elif name == "recurrent_gemma":
        types = [tc["block_types"][i % len(tc["block_types"])] for i in range(n)]
        lin, full, dense = types.count("recurrent"), types.count("attention"), n
        sliding = full if tc["attention_window_size"] < CTX else 0
    elif name == "bailing_hybrid":
        full = sum((i + 1) % tc["layer_group_size"] == 0 for i in range(n))
        lin, mla = n - full, full
        dense = tc["first_k_dense_replace"]
        moe = n - dense
    else:  # a new family must say what its config means here
        raise AssertionError(f"no expected layer mix for {name}")
    return {"layers": n, "linear": lin, "full": full, "sliding": sliding, "mla": mla, "moe": moe, "dense": dense}


def expected_experts(name: str) -> tuple[int, int, bool]:
    tc = _text(FAMILIES[name])
    experts = tc.get("num_experts") or tc.get("num_local_experts") or tc.get("n_routed_experts") or 0
    top_k = tc.get("num_experts_per_tok") or tc.get("num_experts_per_token") or 0
    shared = any(tc.get(k) for k in ("n_shared_experts", "num_shared_experts", "shared_expert_intermediate_size",
                                      "shared_intermediate_size", "moe_shared_expert_intermediate_size"))
    return (experts, top_k, shared) if experts else (0, 0, False)


def expected_kv_bytes(name: str, mix: dict) -> int:
    """float32 caches: GQA 2 × kv heads × head dim, MLA latent + rope key, sliding layers min(ctx, window)."""
    tc = _text(FAMILIES[name])
    if not mix["full"]:
        return 0
    if mix["mla"]:
        per_token = tc["kv_lora_rank"] + tc["qk_rope_head_dim"]
    else:
        head_dim = tc.get("head_dim") or tc.get("hidden_size_per_head") or tc["hidden_size"] // tc["num_attention_heads"]
        per_token = 2 * (tc.get("num_key_value_heads") or tc["num_attention_heads"]) * head_dim
    window = tc.get("sliding_window") or tc.get("attention_window_size") or CTX
    tokens = (mix["full"] - mix["sliding"]) * CTX + mix["sliding"] * min(CTX, window)
    return per_token * tokens * 4


# --- tests ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_structure_breakdown_and_inspect(family, families_root):
    lm = _load(family, families_root)
    model = lm.model
    s = classify(model)

    # Every parameter belongs to exactly one timed block; every block has a known block name.
    _assert_covered(model, s)
    assert {b.block_name for b in s.blocks} <= set(BLOCK_NAMES)
    assert "unclassified" not in s.block_names(), [b.path for b in s.blocks if b.block_name == "unclassified"]
    assert "output_head" in s.block_names() and "other" in s.block_names()
    # tied: the config says so and mlx-lm did not give the model its own head (gemma3_text copies the embedding)
    own_head = any(p.endswith("lm_head.weight") for p, _ in tree_flatten(model.parameters()))
    assert s.tied_head == (bool(_text(FAMILIES[family]).get("tie_word_embeddings")) and not own_head)

    # The measured breakdown: every block present, every block entered, the two rulers consistent.
    prompt = lm.encode(PROMPT)
    bd = measure_breakdown(model, prompt, prompt[:3], k=2, reps=1, skip=False)
    for side in ("decode", "verify"):
        d = bd[side]
        assert list(d["blocks"]) == s.block_names()
        assert all(v > 0 for v in d["blocks"].values()), d["blocks"]
        assert d["uncalled_blocks"] == []
        assert d["block_sum_ms"] + d["inter_block_ms"] == pytest.approx(d["whole_ms"])
    assert bd["verify"]["positions"] == 3
    assert set(bd["labels"]) <= set(s.block_names())

    # inspect: the same structure, checked against the config.
    mix = expected_mix(family)
    d = describe(lm)
    got = {"layers": d["layers"], "linear": d["linear_attention_layers"], "full": d["full_attention_layers"],
           "sliding": d["sliding_window_layers"], "mla": d["mla_layers"], "moe": d["moe_layers"],
           "dense": d["dense_mlp_layers"]}
    assert got == mix
    assert (d["experts"], d["experts_per_token"], d["shared_expert"]) == expected_experts(family)
    assert d["kv_cache_bytes"] == expected_kv_bytes(family, mix)

    params = dict(tree_flatten(model.parameters()))
    total = sum(v.size for v in params.values())
    routed = sum(v.size for p, v in params.items() if ".switch_mlp." in p or ".experts." in p)
    experts, top_k, _ = expected_experts(family)
    assert d["parameters"] == total
    assert d["active_parameters"] == round(total - routed * (1 - top_k / experts) if experts else total)
    assert f"{d['layers']}: " in format_description(d)


def test_nemotron_mixer_is_classified_per_block(families_root):
    """One child name (``mixer``) holds Mamba, attention, MoE or a dense MLP: each goes to its own block."""
    s = classify(_load("nemotron_h", families_root).model)
    want = {"M": "linear_attention", "*": "full_attention", "E": "moe", "-": "dense_mlp"}
    for i, c in enumerate(FAMILIES["nemotron_h"]["hybrid_override_pattern"]):
        mixer = [b for b in s.in_layer(i) if b.path.endswith(f"layers.{i}.mixer")]
        assert [b.block_name for b in mixer] == [want[c]]
    assert [b.kind for b in s.in_layer(0) if b.block_name == "linear_attention"] == ["Mamba2 SSM"]
    assert s.labels()["moe"] == "MoE (8 experts, top-2 + shared)"


def test_sub_kinds_and_labels(families_root):
    g = classify(_load("gemma3_text", families_root).model)
    assert [b.kind for b in g.blocks if b.block_name == "full_attention"] == ["sliding window 8", "full"] * 2
    d = classify(_load("deepseek_v3", families_root).model)
    assert {b.kind for b in d.blocks if b.block_name == "full_attention"} == {"MLA"}
    assert [b.block_name for b in d.in_layer(0) if b.block_name in ("moe", "dense_mlp")] == ["dense_mlp"]
    assert d.labels()["dense_mlp"] == "Dense MLP"
    gr = classify(_load("granitemoehybrid", families_root).model)  # shared_mlp beside the MoE is its shared expert
    assert {b.kind for b in gr.in_layer(0) if b.block_name == "moe"} == {"shared expert", "routed experts + shared expert"}
    assert gr.labels()["output_head"] == "Output head (tied embedding)"
    kinds = {f: classify(_load(f, families_root).model).kinds("linear_attention")
             for f in ("lfm2", "recurrent_gemma", "bailing_hybrid", "kimi_linear", "mamba")}
    assert kinds == {"lfm2": {"short conv": 2}, "recurrent_gemma": {"RG-LRU": 2}, "bailing_hybrid": {"decay": 2},
                     "kimi_linear": {"delta rule": 3}, "mamba": {"Mamba SSM": 3}}


class Mystery(nn.Module):
    """A block no rule knows: one bare weight matrix."""

    def __init__(self, dims):
        super().__init__()
        self.w = mx.eye(dims) * 0.5

    def __call__(self, x):
        return x @ self.w


def test_unknown_parts_are_timed_as_unclassified(families_root):
    lm = _load("llama_tied", families_root)
    model = lm.model
    hidden = model.layers[0].mlp.gate_proj.weight.shape[1]
    model.layers[0].mlp = Mystery(hidden)
    model.layers[1].layer_scale = mx.ones((hidden,))  # a layer's own parameter: the layer is timed too
    s = classify(model)
    _assert_covered(model, s, nested=True)  # the layer owns only its own scale: blocks inside it keep theirs
    un = {b.path: b.kind for b in s.blocks if b.block_name == "unclassified"}
    assert un == {"model.layers.0.mlp": "Mystery", "model.layers.1": "layer's own parameters"}
    bd = measure_breakdown(model, lm.encode(PROMPT), [5, 6, 7], k=2, reps=1, skip=False)
    dec = bd["decode"]
    assert "unclassified" in dec["blocks"] and dec["blocks"]["unclassified"] > 0 and dec["uncalled_blocks"] == []
    # exclusive time: the layer's own row is its wall minus the blocks inside, so blocks never double count
    assert dec["block_sum_ms"] <= dec["instrumented_ms"]
    assert bd["labels"]["unclassified"].startswith("Unclassified (")
    d = describe(lm)
    assert d["unclassified_layers"] == 2 and "unclassified" in format_description(d)


def test_quantized_weights_classify_the_same(families_root):
    lm = _load("qwen3_moe", families_root)
    model = lm.model
    before = [(b.path, b.block_name, b.kind, b.experts, b.top_k) for b in classify(model).blocks]
    d0 = describe(lm)
    nn.quantize(model, group_size=32, bits=4, class_predicate=lambda _, m: hasattr(m, "to_quantized") and m.weight.shape[-1] % 32 == 0)
    assert any(hasattr(m, "bits") for _, m in model.named_modules())
    s = classify(model)
    _assert_covered(model, s)
    assert [(b.path, b.block_name, b.kind, b.experts, b.top_k) for b in s.blocks] == before
    d1 = describe(lm)
    assert (d1["parameters"], d1["active_parameters"]) == (d0["parameters"], d0["active_parameters"])


@pytest.mark.parametrize("family", ["falcon_h1", "plamo2"])
def test_skip_estimates_with_inputs_passed_by_keyword(family, families_root):
    """Falcon-H1 and PLaMo 2 pass the hidden state by keyword: it is evaluated before the clock and zeroed when skipped."""
    lm = _load(family, families_root)
    prompt = lm.encode(PROMPT)
    bd = measure_breakdown(lm.model, prompt, prompt[:3], k=2, reps=1, skip=True)
    assert set(bd["decode"]["skip_estimates"]) == {"linear_attention", "full_attention", "dense_mlp", "output_head"}
