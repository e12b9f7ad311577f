"""Static checks on the checkout's own source: ruff (configured in pyproject.toml) must be clean.

They read files, not the installed package, so they need the checkout: CI runs them from its clone.
"""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "specscope"

pytestmark = pytest.mark.skipif(not SRC.is_dir(), reason="needs the checkout's src/")


def ruff(*paths: str, config: Path = ROOT / "pyproject.toml") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(config), *paths],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_ruff_is_clean():
    r = ruff("src", "tests")
    assert r.returncode == 0, r.stdout + r.stderr


def test_ruff_would_catch_an_unused_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n")
    r = ruff(str(bad))
    assert r.returncode == 1 and "F401" in r.stdout, r.stdout + r.stderr
