"""DFlash from the command line: a run end to end (k defaults to block size − 1, greedy output equal to plain) and
``check --drafter dflash`` (rollback at k = B−1, the drafter's context at every accepted length)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def specscope(*args):
    return subprocess.run([sys.executable, "-m", "specscope.profiler.cli.main", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.slow  # ~20 s end to end; DFlash decoding (greedy = plain, k = B - 1) is tested by default in test_dflash.py
def test_run_demo_with_a_dflash_drafter_folder(tmp_path):
    r = specscope("demo-model", str(tmp_path / "d"), "--dflash")  # for the shipped trained demo, block 16
    assert r.returncode == 0, r.stderr
    out = tmp_path / "s.json"
    r = specscope("run", "--demo", "--drafter", "dflash", "--draft-model", str(tmp_path / "d"), "--cases", "1",
                  "--max-tokens", "20", "--warmup", "0", "--repeats", "1", "--no-breakdown", "--component-reps", "2",
                  "-o", str(out), "--json")  # components at k = 15: 16 accepted counts x 6 reps were 90% of the run
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["match_rate"] == 1.0  # greedy: speculative output equals plain
    d = json.loads(out.read_text())
    assert d["config"]["num_draft_tokens"] == 15  # block size - 1 by default
    drafter = d["config"]["drafter"]
    assert drafter["name"] == "dflash" and drafter["block_size"] == 16 and drafter["weights"] == str(tmp_path / "d")
    assert all(len(r["drafted"]) <= 15 for c in d["cases"] for r in c["spec"]["rounds"])


@pytest.mark.slow  # check on built folders (~10 s); `check --demo` with the shipped drafter stays in the default run
def test_check_with_a_dflash_drafter(tmp_path):
    from specscope.engine_adapter.model.demo_model import demo_model_path

    target = demo_model_path("draft")  # a small qwen3 (2 layers)
    r = specscope("demo-model", str(tmp_path / "d"), "--dflash", "--random", "--block-size", "4")
    assert r.returncode == 0, r.stderr
    r = specscope("check", str(target), "--drafter", "dflash", "--draft-model",
                  str(tmp_path / "d"), "--max-k", "1", "--json")
    assert r.returncode == 2 and "does not fit" in r.stderr  # written for the 8-layer random demo, not this one
    from specscope.engine_adapter.model.dflash_demo import build_dflash_demo
    from specscope.engine_adapter.model.checkpoint import open_checkpoint

    build_dflash_demo(tmp_path / "fits", open_checkpoint(target).text_config, "draft", block_size=4)
    r = specscope("check", str(target), "--drafter", "dflash", "--draft-model", str(tmp_path / "fits"), "--max-k", "1",
                  "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert sorted({row["k"] for row in rep["exactness"]["rows"]}) == [1, 3]  # --max-k and block size - 1
    ctx = rep["dflash"]["context"]
    assert ctx["exact"] and [row["accepted"] for row in ctx["rows"]] == [0, 1, 2, 3]
    r = specscope("check", str(target), "--drafter", "dflash", "--draft-model", str(tmp_path / "fits"), "--max-k", "1")
    assert "DFlash drafter" in r.stdout and "its context after 0..3 accepted exact" in r.stdout, r.stdout


def test_run_config_refuses_dflash_with_several_ranks_or_without_a_folder(tmp_path):
    import pytest

    from specscope.engine_adapter.model.dflash_demo import build_dflash_demo, dflash_config
    from specscope.errors import SpecscopeError
    from specscope.profiler.run.config import RunConfig

    text = {"hidden_size": 64, "vocab_size": 256, "num_hidden_layers": 4, "max_position_embeddings": 4096}
    assert dflash_config(text, 4)["dflash_config"]["target_layer_ids"] == [1, 3]
    folder = build_dflash_demo(tmp_path / "d", text, "tiny", block_size=4)
    with pytest.raises(SpecscopeError, match="needs --draft-model"):
        RunConfig(model="m", drafter="dflash").validate()
    for drafter in ("dflash", "auto"):
        with pytest.raises(SpecscopeError, match="not supported with several ranks"):
            RunConfig(model="m", drafter=drafter, draft_model=str(folder), ranks=2).validate()
    RunConfig(model="m", drafter="dflash", draft_model=str(folder), num_draft_tokens=3).validate()


@pytest.mark.slow  # `check --demo --drafter dflash` as a process (~9 s); the context check it prints runs by default in
# tests/engine_adapter/drafters/test_dflash.py, and `check --demo` through its worker in tests/profiler/cli/test_progress.py
def test_check_demo_with_its_own_dflash_drafter():
    r = specscope("check", "--demo", "--drafter", "dflash", "--max-k", "1")
    assert r.returncode == 0, r.stderr
    assert "k = 1, 15, every accepted count" in r.stdout and "its context after 0..15 accepted exact" in r.stdout, r.stdout


def test_demo_model_writes_a_random_dflash2_drafter_that_inspect_names(tmp_path, capsys):
    from specscope.profiler.cli.main import main

    assert main(["demo-model", str(tmp_path / "d2"), "--dflash2", "--random", "--block-size", "4"]) == 0
    assert "DFlash2 drafter (candidate selector) (block 4" in capsys.readouterr().out
    config = json.loads((tmp_path / "d2" / "config.json").read_text())
    assert config["architectures"] == ["DFlash2DraftModel"] and config["dflash_config"]["block_size"] == 4
    assert main(["inspect", str(tmp_path / "d2")]) == 0
    out = capsys.readouterr().out
    assert "DFlash2 drafter" in out and "selector" in out
    assert main(["demo-model", str(tmp_path / "one"), "--dflash2", "--random", "--block-size", "1"]) == 2
    assert "--block-size must be at least 2" in capsys.readouterr().err and not (tmp_path / "one").exists()


def test_drafter_dflash2_is_dflash_with_a_dflash2_folder_and_refuses_anything_else(tmp_path, monkeypatch):
    from specscope.engine_adapter.model import shipped as dm
    from specscope.errors import SpecscopeError
    from specscope.profiler.run.config import resolve_drafter_alias

    assert main_quiet(["demo-model", str(tmp_path / "d2"), "--dflash2", "--random", "--block-size", "4"]) == 0
    assert main_quiet(["demo-model", str(tmp_path / "d1"), "--dflash", "--random", "--block-size", "4"]) == 0
    assert resolve_drafter_alias("dflash2", str(tmp_path / "d2"), False) == ("dflash", str(tmp_path / "d2"))
    with pytest.raises(SpecscopeError, match="is a DFlash drafter, not DFlash2"):
        resolve_drafter_alias("dflash2", str(tmp_path / "d1"), False)
    with pytest.raises(SpecscopeError, match="needs --draft-model"):
        resolve_drafter_alias("dflash2", None, False)
    assert resolve_drafter_alias("mtp", None, True) == ("mtp", None)  # not an alias: as given
    monkeypatch.setattr(dm, "trained_demo_path", lambda kind="hybrid": tmp_path / "d2" if kind == "dflash2" else None)
    assert resolve_drafter_alias("dflash2", None, True) == ("dflash", str(tmp_path / "d2"))  # the demo's own
    monkeypatch.setattr(dm, "trained_demo_path", lambda kind="hybrid": None)
    with pytest.raises(SpecscopeError, match="ships no trained DFlash2"):
        resolve_drafter_alias("dflash2", None, True)


def main_quiet(argv):
    from specscope.profiler.cli.main import main

    return main(argv)
