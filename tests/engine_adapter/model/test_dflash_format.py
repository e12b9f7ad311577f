"""The DFlash drafter format: reading a folder, refusing a misfit before anything runs, the demo builder's layer map."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import mlx.core as mx
import pytest

from specscope.engine_adapter.model.dflash_format import (build_target_layer_ids, check_fits, is_dflash_folder,
                                                             misfits, read_dflash)
from specscope.engine_adapter.model.dflash_demo import build_dflash_demo, dflash_config, map_layer_ids
from specscope.errors import SpecscopeError

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def text(hybrid):
    return hybrid.checkpoint.text_config


@pytest.fixture(scope="module")
def folder(tmp_path_factory, text):
    return build_dflash_demo(tmp_path_factory.mktemp("dflash") / "d", text, "hybrid", block_size=8)


def edited(folder: Path, tmp_path: Path, config=None, weights=None) -> Path:
    """A copy of the drafter folder with its config and/or weights changed by the given functions."""
    out = tmp_path / "edited"
    shutil.copytree(folder, out)
    if config:
        c = json.loads((out / "config.json").read_text())
        config(c)
        (out / "config.json").write_text(json.dumps(c))
    if weights:
        w = dict(mx.load(str(out / "model.safetensors")))
        weights(w)
        mx.save_safetensors(str(out / "model.safetensors"), w)
    return out


def test_reads_the_written_drafter(folder, model_dirs, text):
    spec = read_dflash(folder)
    assert spec.variant == "dflash" and spec.block_size == 8 and spec.max_draft_tokens == 7
    assert spec.target_layer_ids == (1, 5) and not spec.derived_layer_ids  # the references' rule on 8 layers
    assert spec.mask_token_id == text["vocab_size"] - 1 and spec.num_target_layers == 8
    assert is_dflash_folder(folder) and not is_dflash_folder(model_dirs["hybrid"])
    check_fits(spec, text)  # fits the target it was written for
    assert misfits(spec, text) == []


@pytest.mark.parametrize("change, reason", [
    (lambda t: t.update(hidden_size=256), "hidden size is 512, the target's 256"),
    (lambda t: t.update(vocab_size=8192), "vocabulary is 4096 tokens, the target's 8192"),
    (lambda t: t.update(num_hidden_layers=4), "reads target layer(s) [5], the target has 4 layers"),
    (lambda t: t.update(num_hidden_layers=12), "made for a 8-layer target, this one has 12"),
])
def test_a_drafter_that_does_not_fit_is_refused(folder, text, change, reason):
    t = dict(text)
    change(t)
    spec = read_dflash(folder)
    assert any(reason in m for m in misfits(spec, t)), misfits(spec, t)
    with pytest.raises(SpecscopeError, match="does not fit"):
        check_fits(spec, t, "the target")


def test_mask_token_outside_the_vocabulary_is_refused(folder, tmp_path, text):
    d = edited(folder, tmp_path, config=lambda c: c["dflash_config"].update(mask_token_id=5000))
    assert any("mask token 5000" in m for m in misfits(read_dflash(d), text))


def test_dflash2_is_recognised_and_its_selector_required(folder, tmp_path, text):
    """A DFlash folder relabelled DFlash2 is read as DFlash2 and refused for what DFlash2 adds (test_dflash2_format)."""
    d = edited(folder, tmp_path, config=lambda c: c.update(architectures=["DFlash2DraftModel"]))
    with pytest.raises(SpecscopeError, match="dflash_config has no selector_top_k"):
        read_dflash(d)


@pytest.mark.parametrize("change, message", [
    (lambda c: c["dflash_config"].pop("mask_token_id"), "no mask_token_id"),
    (lambda c: c["dflash_config"].update(block_size=4), "disagree"),
    (lambda c: (c.pop("block_size"), c["dflash_config"].pop("block_size")), "no block_size"),
    (lambda c: c["dflash_config"].update(target_layer_ids="1,5"), "target_layer_ids must be"),
    (lambda c: (c.pop("architectures"), c.pop("dflash_config")), "not a DFlash drafter"),
    (lambda c: c.update(hidden_size=0), "hidden_size must be an integer"),
])
def test_config_refusals(folder, tmp_path, change, message):
    with pytest.raises(SpecscopeError, match=message):
        read_dflash(edited(folder, tmp_path, config=change))


def test_block_size_is_read_from_either_place(folder, tmp_path):
    top = edited(folder, tmp_path, config=lambda c: c["dflash_config"].pop("block_size"))
    assert read_dflash(top).block_size == 8
    (tmp_path / "edited").rename(tmp_path / "top")
    inner = edited(folder, tmp_path, config=lambda c: c.pop("block_size"))
    assert read_dflash(inner).block_size == 8


def test_weights_missing_or_not_matching_the_config_are_refused(folder, tmp_path):
    with pytest.raises(SpecscopeError, match="missing, e.g. layers.1.mlp.up_proj.weight"):
        read_dflash(edited(folder, tmp_path, weights=lambda w: w.pop("layers.1.mlp.up_proj.weight")))
    shutil.rmtree(tmp_path / "edited")
    with pytest.raises(SpecscopeError, match=r"fc.weight \[512, 1024\] \(config says \[512, 1536\]\)"):
        read_dflash(edited(folder, tmp_path, config=lambda c: c["dflash_config"].update(target_layer_ids=[1, 3, 5])))


def test_absent_target_layer_ids_follow_the_references_rule(folder, tmp_path):
    spec = read_dflash(edited(folder, tmp_path, config=lambda c: c["dflash_config"].pop("target_layer_ids")))
    assert spec.derived_layer_ids and spec.target_layer_ids == tuple(build_target_layer_ids(8, 2)) == (1, 5)


def test_the_references_layer_rule():
    assert build_target_layer_ids(40, 5) == [1, 10, 19, 28, 37]
    assert build_target_layer_ids(36, 1) == [18]


def test_layer_ids_map_onto_a_shape_slice():
    from specscope.engine_adapter.model.real_shape import text_config

    assert map_layer_ids([1, 10, 19, 28, 37], 40, 8) == [0, 2, 3, 5, 7]  # the same relative depth, last onto last
    assert map_layer_ids([1, 1], 4, 4) == [1, 3]  # merged indices are spread instead
    for n in range(4, 41):
        ids = map_layer_ids(build_target_layer_ids(40, 2), 40, n)
        assert len(ids) == 2 and len(set(ids)) == 2 and all(0 <= i < n for i in ids), (n, ids)
    c = dflash_config(text_config("qwen3.5-35b-a3b", 4), 40)
    assert c["dflash_config"]["target_layer_ids"] == [0, 3] and c["num_target_layers"] == 4
    assert c["hidden_size"] == 2048 and c["vocab_size"] == 248320


def specscope(*args):
    return subprocess.run([sys.executable, "-m", "specscope.profiler.cli.main", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.slow  # ~11 s of CLI processes; each refusal it shows is tested by default above
def test_cli_demo_model_inspect_and_a_refused_run(tmp_path, model_dirs):
    """``demo-model --dflash --random`` writes a drafter for the random demo; ``inspect`` says what it fits; a run
    against a target it does not fit exits 2 with the reason, before measuring anything, without a traceback."""
    r = specscope("demo-model", str(tmp_path / "d"), "--dflash", "--random", "--block-size", "4")
    assert r.returncode == 0, r.stderr
    r = specscope("inspect", str(tmp_path / "d"), "--target", str(model_dirs["hybrid"]))
    assert r.returncode == 0, r.stderr
    assert "block             4 (last token + 3 masks)" in r.stdout and "fits hybrid" in r.stdout
    r = specscope("inspect", str(tmp_path / "d"), "--target", str(model_dirs["draft"]))
    assert "not for draft: it reads target layer(s) [5], the target has 2 layers (0..1)" in r.stdout, r.stdout
    r = specscope("check", str(model_dirs["draft"]), "--drafter", "dflash", "--draft-model", str(tmp_path / "d"))
    assert r.returncode == 2 and "does not fit draft" in r.stderr and "Traceback" not in r.stderr, r.stderr
    r = specscope("run", "--model", str(model_dirs["hybrid"]), "--drafter", "dflash", "--draft-model", str(tmp_path / "d"),
                  "-k", "5", "--cases", "1", "--max-tokens", "8")
    assert r.returncode == 2 and "block size 4 drafts at most 3" in r.stderr and "Traceback" not in r.stderr, r.stderr
