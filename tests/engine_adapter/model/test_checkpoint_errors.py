"""Bad model folders get a clear SpecscopeError, before (or instead of) a traceback."""

import json
import shutil
import struct

import pytest

from specscope.engine_adapter.model.checkpoint import open_checkpoint
from specscope.errors import SpecscopeError
from specscope.engine_adapter.model.loader import check_same_vocabulary, load_model


def copy_model(src, dst):
    shutil.copytree(src, dst)
    return dst


def test_missing_path(tmp_path):
    with pytest.raises(SpecscopeError, match="does not exist"):
        open_checkpoint(tmp_path / "nope")


def test_not_a_directory(tmp_path):
    f = tmp_path / "file.txt"
    f.write_text("x")
    with pytest.raises(SpecscopeError, match="not a directory"):
        open_checkpoint(f)


def test_missing_config(tmp_path):
    with pytest.raises(SpecscopeError, match="no config.json"):
        open_checkpoint(tmp_path)


def test_malformed_config(tmp_path, model_dirs):
    d = copy_model(model_dirs["draft"], tmp_path / "m")
    (d / "config.json").write_text("{not json")
    with pytest.raises(SpecscopeError, match="not valid JSON"):
        open_checkpoint(d)


def test_unknown_architecture(tmp_path, model_dirs):
    d = copy_model(model_dirs["draft"], tmp_path / "m")
    cfg = json.loads((d / "config.json").read_text())
    cfg["model_type"] = "no_such_arch"
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(SpecscopeError, match="unknown architecture"):
        open_checkpoint(d)


def test_remote_code_refused(tmp_path, model_dirs):
    d = copy_model(model_dirs["draft"], tmp_path / "m")
    cfg = json.loads((d / "config.json").read_text())
    cfg["model_file"] = "evil.py"
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(SpecscopeError, match="never runs remote code"):
        open_checkpoint(d)


def test_missing_weights_and_pickles(tmp_path, model_dirs):
    d = copy_model(model_dirs["draft"], tmp_path / "m")
    for f in d.glob("*.safetensors"):
        f.unlink()
    with pytest.raises(SpecscopeError, match="no .safetensors"):
        open_checkpoint(d)
    (d / "pytorch_model.bin").write_bytes(b"\x80\x04pickle")
    with pytest.raises(SpecscopeError, match="safetensors only"):
        open_checkpoint(d)


def test_truncated_weights(tmp_path, model_dirs):
    d = copy_model(model_dirs["draft"], tmp_path / "m")
    f = d / "model.safetensors"
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])
    with pytest.raises(SpecscopeError, match="truncated"):
        open_checkpoint(d)


def test_wrong_shapes(tmp_path, model_dirs):
    import mlx.core as mx

    d = copy_model(model_dirs["draft"], tmp_path / "m")
    w = mx.load(str(d / "model.safetensors"))
    name = next(k for k in w if k.endswith("o_proj.weight"))
    w[name] = mx.zeros((3, 3), dtype=w[name].dtype)
    mx.save_safetensors(str(d / "model.safetensors"), w)
    with pytest.raises(SpecscopeError, match="could not load weights"):
        load_model(d)


def test_missing_tokenizer(tmp_path, model_dirs):
    d = copy_model(model_dirs["draft"], tmp_path / "m")
    (d / "tokenizer.json").unlink()
    with pytest.raises(SpecscopeError, match="no tokenizer"):
        open_checkpoint(d)


def test_not_safetensors(tmp_path, model_dirs):
    d = copy_model(model_dirs["draft"], tmp_path / "m")
    (d / "model.safetensors").write_bytes(struct.pack("<Q", 10) + b"not json!!" + b"\0" * 32)
    with pytest.raises(SpecscopeError, match="not a valid safetensors"):
        open_checkpoint(d)


def test_hf_cache_entry_is_resolved(tmp_path, model_dirs):
    entry = tmp_path / "models--org--demo"
    snap = entry / "snapshots" / "abc123"
    shutil.copytree(model_dirs["draft"], snap)
    (entry / "refs").mkdir()
    (entry / "refs" / "main").write_text("abc123")
    assert open_checkpoint(entry).path == snap


def test_vocabulary_mismatch_refused(tmp_path, model_dirs, hybrid):
    d = copy_model(model_dirs["draft"], tmp_path / "m")
    tok = json.loads((d / "tokenizer.json").read_text())
    vocab = tok["model"]["vocab"]
    a, b = sorted(vocab, key=vocab.get)[300:302]
    vocab[a], vocab[b] = vocab[b], vocab[a]  # same size, different mapping
    (d / "tokenizer.json").write_text(json.dumps(tok))
    other = load_model(d)
    with pytest.raises(SpecscopeError, match="different vocabulary"):
        check_same_vocabulary(hybrid, other)
    check_same_vocabulary(hybrid, load_model(model_dirs["draft"]))  # the real pair is fine


def test_oversize_model_refused(monkeypatch, model_dirs):
    import specscope.engine_adapter.model.loader as loader

    monkeypatch.setattr(loader, "system_memory_bytes", lambda: 1024)
    with pytest.raises(SpecscopeError, match="--allow-oversize"):
        load_model(model_dirs["draft"])
    assert load_model(model_dirs["draft"], allow_oversize=True).model is not None
