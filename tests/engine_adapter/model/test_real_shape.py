"""``demo-model --shape``: the released layout, written a part at a time, loadable by mlx-lm's own loader.

The real dimensions take minutes and 2.4 GiB for 4 layers, so the build is tested at toy sizes through the
same code (``overrides``); the real text config is checked against DESIGN §6's figures."""

from __future__ import annotations

import json

import pytest

from specscope.engine_adapter.model.real_shape import build_real_shape_model, text_config
from specscope.errors import SpecscopeError

TOY = {"hidden_size": 128, "vocab_size": 4096, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 64,
       "linear_num_key_heads": 1, "linear_num_value_heads": 2, "linear_key_head_dim": 64,
       "linear_value_head_dim": 64, "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 64,
       "shared_expert_intermediate_size": 64}


def test_released_dimensions():
    t = text_config("qwen3.5-35b-a3b", 40)
    assert (t["vocab_size"], t["hidden_size"], t["num_hidden_layers"], t["full_attention_interval"]) == (248320, 2048, 40, 4)
    assert (t["num_attention_heads"], t["num_key_value_heads"], t["head_dim"]) == (16, 2, 256)
    assert (t["linear_num_key_heads"], t["linear_num_value_heads"], t["linear_key_head_dim"], t["linear_value_head_dim"]) == (16, 32, 128, 128)
    assert (t["num_experts"], t["num_experts_per_tok"], t["moe_intermediate_size"], t["shared_expert_intermediate_size"]) == (256, 8, 512, 512)
    assert t["rope_parameters"]["partial_rotary_factor"] == 0.25
    with pytest.raises(SpecscopeError, match="4..40"):
        text_config("qwen3.5-35b-a3b", 41)
    with pytest.raises(SpecscopeError, match="at least one"):
        text_config("qwen3.5-35b-a3b", 3)  # no full-attention layer: mlx-lm could not run it
    with pytest.raises(SpecscopeError, match="unknown --shape"):
        text_config("llama-7b", 2)


def test_built_a_part_at_a_time_and_loaded_by_mlx_lm(tmp_path):
    import mlx.core as mx
    from mlx_lm.utils import load

    parts = []
    path = build_real_shape_model(tmp_path / "m", layers=4, overrides=TOY, progress=lambda d, t, w: parts.append((d, t, w)))
    # embedding, 4 layers, final norm, head: one shard each, reported in order
    assert [w for _, _, w in parts] == ["embed_tokens", "layers.0", "layers.1", "layers.2", "layers.3", "norm", "lm_head", "done"]
    assert len(list(path.glob("model-*-of-00007.safetensors"))) == 7
    cfg = json.loads((path / "config.json").read_text())
    assert cfg["specscope_demo"]["kind"] == "shape" and cfg["quantization"]["bits"] == 4
    assert cfg["quantization"]["language_model.model.layers.0.mlp.gate"] == {"group_size": 64, "bits": 8}
    index = json.loads((path / "model.safetensors.index.json").read_text())["weight_map"]
    assert "language_model.model.layers.0.mlp.switch_mlp.gate_proj.scales" in index
    assert "language_model.model.layers.3.self_attn.q_proj.weight" in index  # the fourth layer is full attention
    model, tok = load(str(path))
    assert sum(1 for lay in model.layers if lay.is_linear) == 3
    logits = model(mx.array([tok.encode("hello world")]))
    mx.eval(logits)
    assert logits.shape[-1] == 4096 and bool(mx.all(mx.isfinite(logits)).item())


def test_cli_refuses_bad_shape_arguments(tmp_path, capsys):
    from specscope.profiler.cli.main import main

    assert main(["demo-model", str(tmp_path / "a"), "--layers", "2"]) == 2
    assert "--layers needs --shape" in capsys.readouterr().err
    assert main(["demo-model", str(tmp_path / "b"), "--shape", "nope"]) == 2
    assert "unknown --shape 'nope'" in capsys.readouterr().err
    assert main(["demo-model", str(tmp_path / "c"), "--shape", "qwen3.5-35b-a3b", "--layers", "0"]) == 2
    assert "--layers must be 4..40" in capsys.readouterr().err
    assert main(["demo-model", str(tmp_path / "d"), "--shape", "qwen3.5-35b-a3b", "--dense"]) == 2
    assert not (tmp_path / "a").exists() and not (tmp_path / "c").exists()
