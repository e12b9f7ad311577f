"""The DFlash2 drafter format: reading a folder in the published layout, refusing (with the reason) a drafter for another
target, a missing selector tensor, a wrong selector_top_k and the other fields the reference would build a broken model
from; ``inspect`` names it; ``check`` covers it."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import mlx.core as mx
import pytest

from specscope.engine_adapter.model.dflash2_format import DFlash2Spec
from specscope.engine_adapter.model.dflash2_demo import build_dflash2_demo
from specscope.engine_adapter.model.dflash_format import check_fits, format_spec, is_dflash_folder, misfits, read_dflash
from specscope.errors import SpecscopeError

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def text(hybrid):
    return hybrid.checkpoint.text_config


@pytest.fixture(scope="module")
def folder(tmp_path_factory, text):
    return build_dflash2_demo(tmp_path_factory.mktemp("dflash2") / "d", text, "hybrid", block_size=8)


def edited(folder: Path, tmp_path: Path, config=None, weights=None) -> Path:
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


def test_reads_the_published_layout(folder, text):
    """The fixture's layout (z-lab/dflash tests/fixtures/dflash2-*): sliding layers, the convolutions' tensors, the
    selector's codebooks stored without .weight; it fits the target it was written for."""
    spec = read_dflash(folder)
    assert isinstance(spec, DFlash2Spec) and spec.variant == "dflash2" and is_dflash_folder(folder)
    assert spec.block_size == 8 and spec.selector_top_k == 8 and spec.selector_rank == 32
    assert spec.layer_types == ("sliding_attention",) * spec.num_layers and spec.sliding_window == 64
    assert spec.is_causal is False and not spec.causal(0) and spec.final_logit_softcapping == 30.0
    assert spec.tensor_shapes["candidate_selector.predecessor_codebook"] == [text["vocab_size"], 32]
    assert spec.tensor_shapes["layers.0.attention_conv.kernel_projection.weight"] == [2 * 2 * 512 // 16, 512]
    assert spec.tensor_shapes["layers.1.mlp_conv.base_kernel"] == [2, 2, 512]
    check_fits(spec, text)
    d = spec.describe()
    assert d["kind"] == "dflash2" and d["selector_top_k"] == 8 and d["parameters"] > 0


def test_a_drafter_for_another_target_is_refused_with_the_reason(folder, text):
    t = {**text, "hidden_size": 256}
    spec = read_dflash(folder)
    assert any("hidden size is 512, the target's 256" in m for m in misfits(spec, t))
    with pytest.raises(SpecscopeError, match="DFlash2 drafter d does not fit the other: its hidden size is 512"):
        check_fits(spec, t, "the other")


@pytest.mark.parametrize("name", ["candidate_selector.hidden_projection.weight", "candidate_selector.predecessor_codebook",
                                  "candidate_selector.successor_codebook", "layers.1.mlp_conv.base_kernel"])
def test_a_missing_selector_or_convolution_tensor_is_refused(folder, tmp_path, name):
    with pytest.raises(SpecscopeError, match=f"missing, e.g. {name}"):
        read_dflash(edited(folder, tmp_path, weights=lambda w: w.pop(name)))


def test_a_codebook_stored_with_a_weight_suffix_is_not_the_format(folder, tmp_path):
    def rename(w):
        w["candidate_selector.successor_codebook.weight"] = w.pop("candidate_selector.successor_codebook")

    with pytest.raises(SpecscopeError, match="missing, e.g. candidate_selector.successor_codebook"):
        read_dflash(edited(folder, tmp_path, weights=rename))


@pytest.mark.parametrize("change, message", [
    (lambda c: c["dflash_config"].pop("selector_top_k"), "no selector_top_k"),
    (lambda c: c["dflash_config"].update(selector_top_k=0), r"selector_top_k must be an integer >= 1 and <= 4096 \(got 0\)"),
    (lambda c: c["dflash_config"].update(selector_top_k=5000), r"selector_top_k must be .* \(got 5000\)"),
    (lambda c: c["dflash_config"].update(selector_top_k="8"), r"selector_top_k must be .* \(got '8'\)"),
    (lambda c: c["dflash_config"].update(selector_rank=16), r"candidate_selector.hidden_projection.weight \[32, 512\] "
                                                            r"\(config says \[16, 512\]\)"),
    (lambda c: c["dflash_config"].pop("conv_kernel_size"), "no conv_kernel_size"),
    (lambda c: c["dflash_config"].update(conv_group_size=24), "conv_group_size 24 does not divide hidden_size 512"),
    (lambda c: c.pop("sliding_window"), "sliding_attention layers need sliding_window"),
    (lambda c: c.update(layer_types=["sliding_attention"]), "layer_types must list"),
    (lambda c: c.update(is_causal="no"), "is_causal must be true or false"),
])
def test_config_refusals(folder, tmp_path, change, message):
    with pytest.raises(SpecscopeError, match=message):
        read_dflash(edited(folder, tmp_path, config=change))


def test_a_dflash_folder_relabelled_dflash2_is_refused_for_what_it_lacks(tmp_path, text):
    from specscope.engine_adapter.model.dflash_demo import build_dflash_demo

    d = build_dflash_demo(tmp_path / "d1", text, "hybrid", block_size=8)
    c = json.loads((d / "config.json").read_text())
    c["architectures"] = ["DFlash2DraftModel"]
    (d / "config.json").write_text(json.dumps(c))
    with pytest.raises(SpecscopeError, match="no selector_top_k"):
        read_dflash(d)


def test_inspect_names_it(folder, text):
    out = format_spec(read_dflash(folder), [("hybrid", [])])
    assert "DFlash2 drafter (candidate selector)" in out
    assert "selector          top 8 candidates a position, rank 32" in out
    assert "2 of 2 sliding attention, window 64; block attends both ways" in out and "fits hybrid" in out


def specscope(*args):
    return subprocess.run([sys.executable, "-m", "specscope.profiler.cli.main", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=900)


@pytest.mark.slow  # CLI processes and the check at every accepted length (~60 s)
def test_cli_inspect_and_check_with_a_dflash2_drafter(folder, model_dirs, tmp_path):
    """``inspect`` says what it is and what it fits; ``check --drafter dflash`` checks its context after every
    accepted count 0..B−1 and passes; against a target it does not fit it exits 2 with the reason, no traceback."""
    r = specscope("inspect", str(folder), "--target", str(model_dirs["hybrid"]))
    assert r.returncode == 0 and "DFlash2 drafter (candidate selector)" in r.stdout and "fits hybrid" in r.stdout, r
    # the check itself on the small qwen3 target with a drafter built for it (block 4, k = 1 and 3): the random
    # hybrid's took 47 s of the slow set
    from specscope.engine_adapter.model.checkpoint import open_checkpoint

    small = build_dflash2_demo(tmp_path / "small", open_checkpoint(model_dirs["draft"]).text_config, "draft",
                               block_size=4)
    r = specscope("check", str(model_dirs["draft"]), "--drafter", "dflash", "--draft-model", str(small), "--max-k", "1")
    assert r.returncode == 0, r.stderr
    assert "DFlash2 drafter" in r.stdout and "context after 0..3 accepted exact" in r.stdout, r.stdout
    r = specscope("check", str(model_dirs["draft"]), "--drafter", "dflash", "--draft-model", str(folder))
    assert r.returncode == 2 and "DFlash2 drafter d does not fit" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_every_field_the_dflash2_config_writes_is_in_the_records(text):
    """As test_config_json's: the records name every field a generated DFlash2 config holds (its dflash_config too)."""
    from specscope.engine_adapter.model.config_json import DFlashBlock, ModelConfig
    from specscope.engine_adapter.model.dflash2_demo import dflash2_config

    c = dflash2_config(text, 8)
    assert set(c) - set(ModelConfig.__optional_keys__) == set()
    assert set(c["dflash_config"]) - set(DFlashBlock.__optional_keys__) == set()
