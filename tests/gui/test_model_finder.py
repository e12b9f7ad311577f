"""The app's model list (gui/model_finder.py): recent folders first, then the Hugging Face cache and
LM Studio, each named by the same resolver as the command line. A private HOME and hub cache, no Qt."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from specscope.gui.model_finder import find_models, label_for, looks_like_model

COMMIT = "c" * 40


def _model(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    return folder


def _cached(hub: Path, repo: str, commit: str = COMMIT) -> Path:
    """A hub cache entry laid out like huggingface_hub does: a blob, a snapshot symlinking it, refs/main."""
    entry = hub / ("models--" + repo.replace("/", "--"))
    (entry / "blobs").mkdir(parents=True)
    blob = entry / "blobs" / "0123abcd"
    blob.write_text("{}")
    snap = entry / "snapshots" / commit
    snap.mkdir(parents=True)
    (snap / "config.json").symlink_to(os.path.relpath(blob, snap))
    (entry / "refs").mkdir()
    (entry / "refs" / "main").write_text(commit)
    return snap


@pytest.fixture
def disk(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    return {
        "folder": _model(tmp_path / "work" / "my-model"),
        "lms_recent": _model(home / ".lmstudio" / "models" / "pub" / "Model-4bit"),
        "lms_other": _model(home / ".cache" / "lm-studio" / "models" / "other" / "Small-8bit"),
        "cached": _cached(tmp_path / "hub", "testorg/Cached-4bit"),
        "missing": tmp_path / "gone",
    }


def test_recent_first_then_cache_then_lmstudio(disk):
    recent = [str(disk["folder"]), str(disk["missing"]), "", str(disk["folder"]), str(disk["lms_recent"])]
    found = find_models(recent)
    assert found == [
        ("my-model  (recent)", str(disk["folder"])),
        ("pub/Model-4bit  (recent)", str(disk["lms_recent"])),  # listed once, as recent
        (f"testorg/Cached-4bit @ {COMMIT[:7]}  (Hugging Face cache)", str(disk["cached"])),
        ("other/Small-8bit  (LM Studio)", str(disk["lms_other"])),
    ]


def test_nothing_on_disk_is_an_empty_list(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "no-hub"))
    assert find_models() == [] and find_models([str(tmp_path / "gone")]) == []


def test_a_cache_snapshot_given_as_a_folder_is_named_by_its_repo_id(disk):
    assert label_for(str(disk["cached"])) == f"testorg/Cached-4bit @ {COMMIT[:7]}  (Hugging Face cache)"
    assert label_for(str(disk["cached"]), recent=True) == f"testorg/Cached-4bit @ {COMMIT[:7]}  (recent)"
    assert label_for(str(disk["folder"])) == "my-model  (folder)"


def test_looks_like_model(disk, tmp_path):
    assert looks_like_model(str(disk["folder"])) and looks_like_model(str(disk["cached"]))
    (tmp_path / "empty").mkdir()
    assert not looks_like_model(str(tmp_path / "empty"))
    assert not looks_like_model(str(disk["folder"] / "config.json"))  # a file, not a folder
    assert not looks_like_model(str(disk["missing"]))
