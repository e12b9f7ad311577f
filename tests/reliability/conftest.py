"""Shared helpers for the reliability suite: the real CLI, the cached demo models, process scans.

The demo models come from the user cache (or $SPECSCOPE_HOME), built once; tests
that need a variant copy the small draft model (a flat ``qwen3`` without an MTP
head, 4 MB) into a temp folder and edit its config or tokenizer.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "session_demo.json"


def specscope(*args, timeout=300, env=None, **kw):
    """Run the real CLI in a subprocess (as a user would)."""
    return subprocess.run([sys.executable, "-m", "specscope.profiler.cli", *map(str, args)], cwd=ROOT, capture_output=True,
                           text=True, timeout=timeout, env=env, **kw)


def assert_clear_failure(r, *needles, code=2):
    """Non-zero exit with the expected code, the message on stderr, and no traceback."""
    assert r.returncode == code, (r.returncode, r.stdout[-2000:], r.stderr[-4000:])
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout, r.stderr
    assert r.stderr.startswith("specscope: error: ") or "\nspecscope: error: " in r.stderr, r.stderr
    for n in needles:
        assert n in r.stderr, (n, r.stderr)


@pytest.fixture(scope="session")
def demo_draft_dir() -> Path:
    from specscope.engine_adapter.demo_model import demo_model_path

    return demo_model_path("draft")


@pytest.fixture(scope="session")
def demo_hybrid_dir() -> Path:
    from specscope.engine_adapter.demo_model import demo_model_path

    return demo_model_path("hybrid")


@pytest.fixture(scope="session")
def small_context_model(demo_draft_dir, tmp_path_factory) -> Path:
    """The draft demo model (flat qwen3 config) with a 64-token context window."""
    d = tmp_path_factory.mktemp("ctx") / "small-ctx"
    shutil.copytree(demo_draft_dir, d)
    cfg = json.loads((d / "config.json").read_text())
    cfg["max_position_embeddings"] = 64
    (d / "config.json").write_text(json.dumps(cfg, indent=1))
    return d


def worker_pids(marker: str) -> list[int]:
    """Live ``profiler.worker`` processes whose command line contains ``marker`` (Linux /proc scan)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            state = next((ln for ln in (entry / "status").read_text().splitlines() if ln.startswith("State:")), "")
        except OSError:
            continue
        if "specscope.profiler.worker" in cmd and marker in cmd and "zombie" not in state:
            out.append(int(entry.name))
    return out


def wait_until(pred, timeout: float, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    return pred()


needs_proc = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="process and fd scans use Linux /proc")


def unique_suite(tmp_path: Path) -> Path:
    """A copy of the default suite at a unique path: the path appears in the worker's command line,
    so a /proc scan finds exactly this test's workers."""
    from specscope.assets import read_text

    doc = json.loads(read_text("default_suite.json"))
    p = tmp_path / f"suite-{os.getpid()}-{time.monotonic_ns()}.json"
    p.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return p
