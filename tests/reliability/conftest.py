"""Fixtures of the reliability suite: the cached demo models and a small-context variant.

The demo models come from the user cache (or $SPECSCOPE_HOME), built once; tests
that need a variant copy the small draft model (a flat ``qwen3`` without an MTP
head, 4 MB) into a temp folder and edit its config or tokenizer. Plain helpers
(the CLI in a subprocess, process scans) are in ``helpers.py``; the app's
``window`` fixture is in the root ``tests/conftest.py``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def demo_draft_dir() -> Path:
    from specscope.engine_adapter.model.demo_model import demo_model_path

    return demo_model_path("draft")


@pytest.fixture(scope="session")
def small_context_model(demo_draft_dir, tmp_path_factory) -> Path:
    """The draft demo model (flat qwen3 config) with a 64-token context window."""
    d = tmp_path_factory.mktemp("ctx") / "small-ctx"
    shutil.copytree(demo_draft_dir, d)
    cfg = json.loads((d / "config.json").read_text())
    cfg["max_position_embeddings"] = 64
    (d / "config.json").write_text(json.dumps(cfg, indent=1))
    return d
