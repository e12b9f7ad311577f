import hashlib
import json

import pytest

from specscope.engine_adapter.model.checkpoint import open_checkpoint
from specscope.engine_adapter.model.demo_model import build_demo_model, demo_model_path
from specscope.errors import SpecscopeError
from specscope.engine_adapter.model.inspect_model import describe, format_description


def _digest(path):
    h = hashlib.sha256()
    for f in sorted(p for p in path.iterdir() if p.is_file()):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def test_demo_model_is_deterministic(tmp_path, model_dirs):
    again = build_demo_model(tmp_path / "again", "draft")
    assert _digest(again) == _digest(model_dirs["draft"])
    other = build_demo_model(tmp_path / "other", "draft", seed=1)
    assert _digest(other) != _digest(model_dirs["draft"])


def test_hybrid_demo_layout_on_disk(model_dirs):
    ck = open_checkpoint(model_dirs["hybrid"])
    cfg = ck.config
    assert cfg["model_type"] == "qwen3_5_moe"
    assert cfg["quantization"]["bits"] == 4
    tc = cfg["text_config"]
    assert tc["full_attention_interval"] == 4 and tc["num_hidden_layers"] % 4 == 0
    assert tc["num_experts"] > tc["num_experts_per_tok"] > 0 and tc["shared_expert_intermediate_size"] > 0
    # MTP head in the original checkpoint's naming, unquantized, listed in the index
    mtp = ck.mtp_keys()
    assert "mtp.fc.weight" in mtp and "mtp.layers.0.mlp.experts.0.gate_proj.weight" in mtp
    assert ck.tensor_shapes["mtp.fc.weight"] == [tc["hidden_size"], 2 * tc["hidden_size"]]
    index = json.loads((model_dirs["hybrid"] / "model.safetensors.index.json").read_text())
    assert set(mtp) <= set(index["weight_map"])
    for f in ("tokenizer.json", "tokenizer_config.json", "config.json"):
        assert (model_dirs["hybrid"] / f).exists()


def test_inspect_hybrid_and_dense(hybrid, dense):
    h = describe(hybrid)
    assert (h["linear_attention_layers"], h["full_attention_layers"]) == (6, 2)
    assert h["hybrid"] and h["moe_layers"] == 8 and h["experts"] == 16 and h["experts_per_token"] == 4
    assert h["active_parameters"] < h["parameters"]
    assert h["mtp"]["available"] and "mtp" in h["drafters"]
    assert h["quantization"]["bits"] == 4
    d = describe(dense)
    assert (d["linear_attention_layers"], d["full_attention_layers"], d["moe_layers"]) == (0, 6, 0)
    assert d["active_parameters"] == d["parameters"] and not d["mtp"]["available"]
    assert "mtp" not in d["drafters"]
    text = format_description(h)
    assert "6 linear-attention, 2 full-attention" in text and "MTP head          yes" in text


def test_demo_cache_respects_specscope_home(tmp_path, monkeypatch, model_dirs):
    import specscope.engine_adapter.model.demo_model as demo_model

    monkeypatch.setenv("SPECSCOPE_HOME", str(tmp_path / "home"))
    p = demo_model_path("draft")
    assert p.parent == tmp_path / "home" and (p / "config.json").exists()
    assert _digest(p) == _digest(model_dirs["draft"])

    def no_rebuild(*a, **k):
        raise AssertionError("the cached demo model was built again")

    monkeypatch.setattr(demo_model, "build_demo_model", no_rebuild)
    assert demo_model_path("draft") == p  # built once, reused


def test_demo_model_refuses_nonempty_dir(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "file").write_text("keep me")
    with pytest.raises(SpecscopeError, match="not empty"):
        build_demo_model(tmp_path / "x", "draft")
    assert (tmp_path / "x" / "file").read_text() == "keep me"


def test_concurrent_first_use_builds_once(tmp_path):
    """The app's inspector and a worker may both ask for the demo model first: both get one good folder."""
    import subprocess
    import sys

    code = "from specscope.engine_adapter.model.demo_model import demo_model_path; print(demo_model_path('draft'))"
    env = {**__import__("os").environ, "SPECSCOPE_HOME": str(tmp_path / "home")}
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-500:] for o in outs]
    assert outs[0][0] == outs[1][0]
    built = [p for p in (tmp_path / "home").iterdir() if p.is_dir()]
    assert len(built) == 1 and (built[0] / "config.json").exists()
