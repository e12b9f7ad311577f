"""MTPLX cannot run behind the seam on this machine: it is named by --engine, and the run stops before any weights load
with the reason found (engines.refused), a non-zero exit and no traceback. (mlx-vlm runs: test_mlx_vlm_engine.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

from specscope.engine_adapter.engine import Engine
from specscope.engine_adapter.engines import registry
from specscope.engine_adapter.params import EngineParams
from specscope.errors import SpecscopeError

REASONS = [("mtplx", "macOS-only")]


@pytest.mark.parametrize("name, says", REASONS)
def test_a_refused_engine_says_why_before_any_weights_load(name, says):
    assert name in registry.available()
    loaded = []
    with pytest.raises(SpecscopeError, match=f"engine {name} \\(") as err:
        Engine.open(EngineParams(demo=True, engine=name), status=loaded.append)
    assert says in str(err.value)
    assert not any("loading" in m for m in loaded)  # refused before the weights


@pytest.mark.slow  # the CLI end to end (its pre-flight first: ~30 s on a busy machine)
def test_the_cli_exits_non_zero_with_the_reason_and_no_traceback(tmp_path):
    r = subprocess.run([sys.executable, "-m", "specscope", "run", "--demo", "--engine", "mtplx", "--cases", "1",
                        "-o", str(tmp_path / "s.json")], capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert "specscope: error: engine mtplx (" in r.stderr and "macOS-only" in r.stderr
    assert "Traceback" not in r.stderr + r.stdout
