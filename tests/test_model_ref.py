"""Models named the way mlx-lm users name them: a folder, or a repo id from a local Hugging Face cache.

The cache is a real on-disk hub cache layout built in the test (blobs, refs, snapshots); nothing
here touches the network.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from specscope.errors import SpecscopeError
from specscope.model_ref import ref_for_folder, resolve_model

REPO = "testorg/Demo-4bit"
MAIN = "a" * 40
OLD = "b" * 40


def _snapshot(entry: Path, commit: str, model: Path) -> Path:
    """Lay a model into the cache like huggingface_hub does: files in blobs/, symlinks in the snapshot."""
    snap = entry / "snapshots" / commit
    snap.mkdir(parents=True)
    blobs = entry / "blobs"
    blobs.mkdir(exist_ok=True)
    for f in model.iterdir():
        blob = blobs / f"{commit[:8]}-{f.name}"
        shutil.copyfile(f, blob)
        (snap / f.name).symlink_to(os.path.relpath(blob, snap))
    return snap


@pytest.fixture(scope="module")
def hf_home(tmp_path_factory) -> Path:
    from specscope.engine_adapter.model.demo_model import demo_model_path

    home = tmp_path_factory.mktemp("hf-home")
    entry = home / "hub" / ("models--" + REPO.replace("/", "--"))
    model = demo_model_path("draft")
    _snapshot(entry, MAIN, model)
    _snapshot(entry, OLD, model)
    (entry / "refs").mkdir()
    (entry / "refs" / "main").write_text(MAIN)
    (entry / "refs" / "v1").write_text(OLD)
    return home


@pytest.fixture
def cache_env(hf_home, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(hf_home))
    return hf_home


def test_repo_id_resolves_to_refs_main(cache_env):
    ref = resolve_model(REPO)
    assert Path(ref.path).name == MAIN and (Path(ref.path) / "config.json").exists()
    assert (ref.name, ref.revision, ref.source, ref.repo_id) == (REPO, MAIN, "hf-cache", REPO)
    assert ref.label == f"{REPO} @ {MAIN[:7]}"


@pytest.mark.parametrize("rev", ["v1", OLD])
def test_revision_by_branch_or_commit(cache_env, rev):
    ref = resolve_model(f"{REPO}@{rev}")
    assert ref.revision == OLD and ref.name == REPO


def test_hf_hub_cache_wins_over_hf_home(hf_home, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # empty
    monkeypatch.setenv("HF_HUB_CACHE", str(hf_home / "hub"))
    assert resolve_model(REPO).revision == MAIN


def test_cache_entry_and_snapshot_paths_get_the_same_name(cache_env):
    entry = cache_env / "hub" / ("models--" + REPO.replace("/", "--"))
    by_entry = resolve_model(entry)
    by_snapshot = resolve_model(entry / "snapshots" / MAIN)
    assert by_entry.path == by_snapshot.path == resolve_model(REPO).path
    assert by_entry.name == by_snapshot.name == REPO


def test_plain_folder_is_named_by_its_folder(tmp_path):
    d = tmp_path / "my-model"
    d.mkdir()
    (d / "config.json").write_text("{}")
    ref = resolve_model(str(d))
    assert (ref.name, ref.source, ref.revision) == ("my-model", "folder", None)


def test_lmstudio_folder_is_named_publisher_model(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    d = tmp_path / ".lmstudio" / "models" / "pub" / "Model-4bit"
    d.mkdir(parents=True)
    (d / "config.json").write_text("{}")
    ref = ref_for_folder(d)
    assert (ref.name, ref.source) == ("pub/Model-4bit", "lmstudio")


@pytest.mark.parametrize("spec, words", [
    ("testorg/Missing-4bit", ["not found", "--download", "hf download testorg/Missing-4bit"]),
    (f"{REPO}@nosuchbranch", ["revision 'nosuchbranch'", "--download"]),
    ("/no/such/folder", ["model path does not exist"]),
])
def test_missing_model_message_says_what_to_do(cache_env, spec, words):
    with pytest.raises(SpecscopeError) as e:
        resolve_model(spec)
    for w in words:
        assert w in str(e.value)


# -- the command line, as a user runs it -----------------------------------------------------------------------
def cli(*args, env, cwd, timeout=300):
    return subprocess.run([sys.executable, "-m", "specscope", *map(str, args)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def _env(hf_home, **extra):
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_CACHE", "PYTHONPATH")}
    env.update(HF_HOME=str(hf_home), HF_HUB_OFFLINE="1", **extra)
    return env


@pytest.mark.slow  # three CLI processes (~13 s); a repo id's resolution and the app opening on one are tested by default
def test_inspect_run_and_report_call_the_model_by_its_repo_id(hf_home, tmp_path):
    env = _env(hf_home)
    r = cli("inspect", REPO, "--json", env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert (d["name"], d["revision"], d["source"]) == (REPO, MAIN, "hf-cache")
    r = cli("inspect", REPO, env=env, cwd=tmp_path)
    assert r.stdout.startswith(f"{REPO} @ {MAIN[:7]}"), r.stdout

    r = cli("run", "--model", REPO, "--drafter", "ngram", "--cases", "1", "--max-tokens", "4", "--warmup", "0",
            "--no-breakdown", "-o", "s.json", "--quiet", env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"{REPO} @ {MAIN[:7]}" in r.stdout
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["model"]["name"] == REPO and s["model"]["revision"] == MAIN
    assert Path(s["config"]["model_path"]).name == MAIN  # the full path stays in the session
    r = cli("report", "s.json", "-o", "r.html", env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert REPO in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_missing_model_is_a_clear_error_on_the_command_line(hf_home, tmp_path):
    r = cli("run", "--model", "testorg/Missing-4bit", "--cases", "1", env=_env(hf_home), cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "--download" in r.stderr and "testorg/Missing-4bit" in r.stderr


def test_download_refuses_cleanly_when_offline(hf_home, tmp_path):
    r = cli("inspect", "testorg/Missing-4bit", "--download", env=_env(hf_home), cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "offline" in r.stderr


def test_download_failure_is_one_clear_line(hf_home, tmp_path):
    """A hub that cannot be reached (a closed port on this machine): a clear message, no traceback."""
    env = _env(hf_home, HF_ENDPOINT="http://127.0.0.1:9", HF_HUB_ETAG_TIMEOUT="2", HF_HUB_DOWNLOAD_TIMEOUT="2")
    env.pop("HF_HUB_OFFLINE")
    env.pop("TRANSFORMERS_OFFLINE", None)  # huggingface_hub reads either as "offline"
    r = cli("inspect", "testorg/Missing-4bit", "--download", env=env, cwd=tmp_path, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "could not download testorg/Missing-4bit" in r.stderr and "Traceback" not in r.stderr


def test_app_finder_lists_the_cached_model_by_the_same_name(cache_env):
    from specscope.gui.model_finder import find_models

    found = dict((path, label) for label, path in find_models())
    snap = str(resolve_model(REPO).path)
    assert snap in found and found[snap].startswith(f"{REPO} @ {MAIN[:7]}")


def test_a_repo_id_never_touches_the_network(hf_home, tmp_path, no_network):
    """Resolving and loading a cached repo id, with every socket blocked and the offline flags removed."""
    env, net = no_network
    env = {**env, "HF_HOME": str(hf_home)}
    env.pop("HF_HUB_CACHE", None)
    r = cli("inspect", REPO, "--json", env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout)["name"] == REPO
    assert [p for p in net.iterdir() if p.name.startswith("active-")], "the blocker must have been active"
    assert not (net / "attempts").exists(), (net / "attempts").read_text()


def test_app_opens_on_a_cached_repo_id(hf_home, tmp_path):
    """`specscope gui --model org/name --screenshot`: resolved like the CLI, picture taken, app exits."""
    env = _env(hf_home, QT_QPA_PLATFORM="offscreen")
    r = cli("gui", "--model", REPO, "--screenshot", "app.png", env=env, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "app.png").read_bytes()[:4] == b"\x89PNG"
