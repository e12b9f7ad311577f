"""The documentation's "plugging in your own engine" block (docs/engines.md), run as written: registered under a name, it decodes the dense
demo with the draft model, its output equals plain decoding, and the session says what it reports."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

from specscope.engine_adapter.engines import registry
from specscope.profiler.run import protocol
from specscope.profiler.run.config import RunConfig
from specscope.profiler.session.session import Session

PAGE = Path(__file__).resolve().parents[3] / "docs" / "engines.md"  # "Another engine on the same model"


@pytest.mark.slow  # the documented engine example run whole (~20 s); the seam's own tests stay in the default run
@pytest.mark.skipif(not PAGE.is_file(), reason="needs the checkout's docs/engines.md")
def test_the_readmes_engine_runs_and_matches_plain_decoding(model_dirs, monkeypatch):
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("**Plugging in your own engine**"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    module = types.ModuleType("readme_engine")
    exec(compile(code, "docs/engines.md", "exec"), module.__dict__)
    monkeypatch.setitem(sys.modules, "readme_engine", module)
    monkeypatch.setitem(registry.BUILT_IN, "my-engine", "readme_engine:MyEngine")
    cfg = RunConfig(model=str(model_dirs["dense"]), draft_model=str(model_dirs["draft"]), drafter="draft",
                    engine="my-engine", cases=2, max_tokens=24, warmup=0, breakdown=False, component_reps=1,
                    ignore_preflight=True, repeats=1)
    s = Session()
    s.apply({"event": "run_done", "status": protocol.run_protocol(cfg, s.apply)})
    assert s.status == "complete"
    assert s.config["engine"]["name"] == "my-engine" and s.config["engine"]["reports"] == ["draft_ms", "ms"]
    for c in s.cases:
        assert c["spec"]["tokens"] == c["plain"]["tokens"]
        assert all(r["draft_ms"] is not None and r["verify_ms"] is None for r in c["spec"]["rounds"])
