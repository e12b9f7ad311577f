"""Helpers for the reliability suite (plain functions; the fixtures are in ``conftest.py``).

The real CLI in a subprocess, clear-failure checks, /proc process scans, a unique suite path per test,
and the settings of a small demo run in the app.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "session_demo.json"
RUN_TIMEOUT_MS = 240_000  # a small demo run in the app, on a loaded 2-core machine


def specscope(*args, timeout=300, env=None, **kw):
    """Run the real CLI in a subprocess (as a user would)."""
    return subprocess.run([sys.executable, "-m", "specscope.profiler.cli.main", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env=env, **kw)


def assert_clear_failure(r, *needles, code=2):
    """Non-zero exit with the expected code, the message on stderr, and no traceback."""
    assert r.returncode == code, (r.returncode, r.stdout[-2000:], r.stderr[-4000:])
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout, r.stderr
    assert r.stderr.startswith("specscope: error: ") or "\nspecscope: error: " in r.stderr, r.stderr
    for n in needles:
        assert n in r.stderr, (n, r.stderr)


def worker_pids(marker: str) -> list[int]:
    """Live ``profiler.run.worker`` processes whose command line contains ``marker`` (Linux /proc scan)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            state = next((ln for ln in (entry / "status").read_text().splitlines() if ln.startswith("State:")), "")
        except OSError:
            continue
        if "specscope.profiler.run.worker" in cmd and marker in cmd and "zombie" not in state:
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
