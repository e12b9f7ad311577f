"""A saved session's models are found by what they are, never by a path recorded on another machine; what cannot be
found or reproduced is a clear message with exit 2."""

import json
from pathlib import Path

import pytest

from specscope.engine_adapter.model import demo_model as dm
from specscope.errors import SpecscopeError
from specscope.profiler.cli.main import main
from specscope.profiler.run.session_models import reopen_params

FIX = Path(__file__).resolve().parents[2] / "fixtures"


def demo_session(**model) -> dict:
    d = json.loads((FIX / "session_demo.json").read_text())
    d["config"]["model_path"] = d["model"]["path"] = "/nonexistent/elsewhere/demo-hybrid-v3"
    d["model"].update(model)
    return d


def test_the_bundled_fixture_is_a_session_of_the_random_demo_this_version_builds():
    d = json.loads((FIX / "session_demo.json").read_text())
    assert d["config"]["demo"] and d["model"]["demo"] == {"kind": "hybrid", "seed": dm.DEMO_SEED,
                                                          "format_version": dm.DEMO_FORMAT_VERSION}


def test_a_random_demo_session_reopens_the_random_demo_from_the_cache_not_its_recorded_path():
    said = []
    p = reopen_params(demo_session(), say=said.append)
    assert Path(p.model) == dm.demo_model_path("hybrid") and (Path(p.model) / "config.json").exists()
    assert Path(p.model) != dm.trained_demo_path("hybrid")  # demo: true is not the trained demo
    assert p.drafter == "mtp" and p.num_draft_tokens == 2


def test_a_trained_demo_session_reopens_the_shipped_demo_and_its_draft_model():
    shipped = dm.trained_demo_path("hybrid")
    ours = json.loads((shipped / "config.json").read_text())["specscope_demo"]
    d = demo_session(demo=dict(ours))
    d["config"]["drafter"] = {"name": "draft", "kind": "draft"}
    p = reopen_params(d)
    assert Path(p.model) == shipped and Path(p.draft_model) == dm.trained_demo_path("draft")
    other = dict(ours, steps=ours["steps"] + 1)  # another training of the demo
    with pytest.raises(SpecscopeError, match="does not ship"):
        reopen_params(demo_session(demo=other))


def test_a_dflash_session_reopens_its_drafter_folder_as_a_draft_session_reopens_its_draft_model(tmp_path):
    """A DFlash (or DFlash2) drafter is a folder the session names: the trained demo's own, the recorded path, or
    --draft-model; the random demo's is not kept, so it must be named (it was never reopened before: trace of a
    DFlash session stopped at "--drafter dflash needs --draft-model")."""
    ours = json.loads((dm.trained_demo_path("hybrid") / "config.json").read_text())["specscope_demo"]
    d = demo_session(demo=dict(ours))
    d["config"]["drafter"] = {"name": "dflash", "kind": "dflash"}
    assert Path(reopen_params(d).draft_model) == dm.trained_demo_path("dflash")
    (tmp_path / "d2").mkdir()
    (tmp_path / "d2" / "config.json").write_text("{}")
    d["config"]["draft_model"] = str(tmp_path / "d2")
    assert reopen_params(d).draft_model == str(tmp_path / "d2")
    random = demo_session()
    random["config"]["drafter"] = {"name": "dflash", "kind": "dflash"}
    with pytest.raises(SpecscopeError, match="--draft-model DIR"):
        reopen_params(random)
    assert reopen_params(random, draft_model=str(tmp_path / "d2")).draft_model == str(tmp_path / "d2")


def test_a_demo_format_no_longer_built_is_refused():
    with pytest.raises(SpecscopeError, match=f"format 2; this version builds format {dm.DEMO_FORMAT_VERSION}"):
        reopen_params(demo_session(demo={"kind": "hybrid", "seed": 0, "format_version": 2}))


def test_a_shape_slice_is_found_by_shape_and_layers_or_named_with_the_command_that_builds_it(tmp_path):
    shape = {"kind": "shape", "shape": "qwen3.5-35b-a3b", "layers": 4, "seed": 0, "format_version": 1}
    with pytest.raises(SpecscopeError, match="--shape qwen3.5-35b-a3b --layers 4.*--model DIR"):
        reopen_params(demo_session(demo=shape))
    folder = tmp_path / "rs4"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"specscope_demo": dict(shape, layers=8)}))
    with pytest.raises(SpecscopeError, match="is not the qwen3.5-35b-a3b slice"):
        reopen_params(demo_session(demo=shape), model=str(folder))
    (folder / "config.json").write_text(json.dumps({"specscope_demo": shape}))
    assert reopen_params(demo_session(demo=shape), model=str(folder)).model == str(folder)


def user_session(path: str) -> dict:
    d = demo_session()
    d["config"].update(demo=False, model=path, model_path=path)
    d["model"].update(path=path, name=Path(path).name, source="folder", demo=None)
    return d


def test_a_user_model_missing_here_exits_2_naming_the_path_and_the_option(tmp_path, capsys):
    src = tmp_path / "s.json"
    src.write_text(json.dumps(user_session("/nonexistent/models/Qwen3.5-35B-A3B-4bit")))
    assert main(["trace", str(src), "-o", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("specscope: error:") and "/nonexistent/models/Qwen3.5-35B-A3B-4bit" in err
    assert "--model DIR" in err and "Traceback" not in err


def test_a_user_model_is_found_in_the_hub_cache_by_repo_id_and_revision(tmp_path, monkeypatch):
    rev = "0123456789abcdef0123456789abcdef01234567"
    snap = tmp_path / "hub" / "models--org--m" / "snapshots" / rev
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    (tmp_path / "hub" / "models--org--m" / "refs").mkdir()
    (tmp_path / "hub" / "models--org--m" / "refs" / "main").write_text(rev)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    d = user_session("/elsewhere/hub/models--org--m/snapshots/" + rev)
    d["model"].update(source="hf-cache", name="org/m", revision=rev)
    assert Path(reopen_params(d).model) == snap
    d["model"]["revision"] = "f" * 40
    with pytest.raises(SpecscopeError, match="org/m@f+, is neither at"):
        reopen_params(d)


def test_trace_with_the_model_given_uses_it(tmp_path):
    d = user_session("/nonexistent/models/mine")
    p = reopen_params(d, model=str(dm.demo_model_path("hybrid")))
    assert Path(p.model) == dm.demo_model_path("hybrid")
