"""``--dtype``: the floating parameters cast on load, packed 4-bit weights untouched, greedy output still the
model's own, and the cast recorded and said wherever the session is read."""

import json
import subprocess
import sys
from pathlib import Path

import mlx.core as mx
import pytest

from specscope.engine_adapter.mlx_types import flat
from specscope.engine_adapter.model.demo_model import default_demo_path
from specscope.engine_adapter.model.loader import cast_floating, load_model
from specscope.errors import SpecscopeError

ROOT = Path(__file__).resolve().parents[3]


def _dtypes(model) -> dict[str, mx.Dtype]:
    return {k: v.dtype for k, v in flat(model.parameters())}


def test_a_cast_reaches_every_floating_parameter_and_leaves_packed_weights_alone():
    path = default_demo_path("hybrid")
    own = load_model(path)
    cast = load_model(path, dtype="bfloat16")
    before, after = _dtypes(own.model), _dtypes(cast.model)
    assert before.keys() == after.keys()
    floating = [k for k, d in before.items() if mx.issubdtype(d, mx.floating)]
    packed = [k for k, d in before.items() if not mx.issubdtype(d, mx.floating)]
    assert packed, "the demo is quantized: its packed weights are integers"
    assert any(before[k] != mx.bfloat16 for k in floating), "the demo stores its floating parameters in float32"
    assert all(after[k] == mx.bfloat16 for k in floating)
    assert all(after[k] == before[k] for k in packed)
    assert (own.compute_dtype, cast.compute_dtype) == (None, "bfloat16")


def test_an_unknown_dtype_is_refused():
    lm = load_model(default_demo_path("hybrid"))
    with pytest.raises(SpecscopeError, match="unknown dtype"):
        cast_floating(lm.model, "float8")


@pytest.mark.slow  # ~11 s end to end; the cast itself is tested by default above
def test_a_run_with_dtype_is_greedy_exact_and_says_so(tmp_path):
    out = tmp_path / "s.json"
    r = subprocess.run([sys.executable, "-m", "specscope.profiler.cli.main", "run", "--demo", "--dtype", "float32",
                        "--cases", "1", "--max-tokens", "16", "--repeats", "1", "--warmup", "0", "--no-breakdown",
                        "-o", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "compute dtype float32" in r.stdout
    d = json.loads(out.read_text())
    assert d["config"]["dtype"] == "float32" and d["model"]["compute_dtype"] == "float32"
    assert d["summary"]["match_rate"] == 1.0
    # the negative control: without --dtype nothing is cast, and nothing is said
    r = subprocess.run([sys.executable, "-m", "specscope.profiler.cli.main", "run", "--demo", "--cases", "1",
                        "--max-tokens", "8", "--repeats", "1", "--warmup", "0", "--no-breakdown", "-o",
                        str(tmp_path / "t.json")], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "compute dtype" not in r.stdout
    assert json.loads((tmp_path / "t.json").read_text())["model"]["compute_dtype"] is None
