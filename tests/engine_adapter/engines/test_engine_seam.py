"""Another engine on the same model, behind the seam: mlx-lm's own loop runs end to end beside specscope's plain
decoding, says what it does not report, and an engine whose rollback is wrong is caught by the parity check."""

from __future__ import annotations

import pytest

from specscope.engine_adapter.engines import registry
from specscope.engine_adapter.engines.mlx_lm_loop import MlxLmLoop
from specscope.engine_adapter.engines.seam import UNKNOWN_TOKEN
from specscope.errors import SpecscopeError
from specscope.profiler.analysis.summary import summarize
from specscope.profiler.run import protocol
from specscope.profiler.run.config import RunConfig
from specscope.profiler.session.session import Session


def _run(cfg: RunConfig) -> Session:
    s = Session()
    status = protocol.run_protocol(cfg, s.apply)
    s.apply({"event": "run_done", "status": status})
    return s


def _cfg(model_dirs, engine: str, **kw) -> RunConfig:
    base = dict(model=str(model_dirs["dense"]), draft_model=str(model_dirs["draft"]), drafter="draft", engine=engine,
                cases=1, max_tokens=24, warmup=0, breakdown=False, component_reps=1, ignore_preflight=True, repeats=1)
    base.update(kw)
    return RunConfig(**base)


@pytest.mark.slow  # mlx-lm's loop end to end (~15 s); `check --engine mlx-lm` runs it in the default run
def test_mlx_lms_loop_runs_end_to_end_and_says_what_it_does_not_report(model_dirs):
    s = _run(_cfg(model_dirs, "mlx-lm"))
    assert s.status == "complete"
    eng = s.config["engine"]
    assert eng["name"] == "mlx-lm" and eng["reports"] == ["ms"]
    assert set(eng["not_reported"]) == {"draft_ms", "verify_ms", "rollback_ms"}
    assert s.config["round_kinds"] == "end_to_end"  # no ledger pass: the engine runs its own loop
    (c,) = s.cases
    rounds = c["spec"]["rounds"]
    assert rounds and all(r["draft_ms"] is None and r["verify_ms"] is None and r["ms"] > 0 for r in rounds)
    # greedy: token parity with plain decoding from the same weights, and the cycles account for every token
    assert c["spec"]["tokens"] == c["plain"]["tokens"] and len(c["plain"]["tokens"]) == 24
    assert 1 + sum(len(r["emitted"]) for r in rounds) == 24
    for r in rounds:  # the drafts it accepted are known, the ones it rejected are not
        assert r["drafted"][:r["accepted"]] == r["emitted"][:r["accepted"]]
        assert all(t == UNKNOWN_TOKEN for t in r["drafted"][r["accepted"]:])
    sm = summarize(s)
    assert sm["all_match"] and sm["measured_speedup"] > 0
    assert sm["prediction_source"] == "components"  # specscope's components timed apart predict its rounds
    assert sm["ledger_speedup"] is None  # nothing timed apart by the engine: no ledger


class WrongRollback(MlxLmLoop):
    """mlx-lm's loop that never trims its caches: after a rejection the target keeps the rejected drafts."""

    name = "wrong-rollback"

    def speculative(self, prompt, max_tokens, sampling):
        import sys

        g = sys.modules["mlx_lm.generate"]  # the module (mlx_lm's package exports a function of the same name)
        trim = g.trim_prompt_cache
        g.trim_prompt_cache = lambda cache, n: 0
        try:
            yield from super().speculative(prompt, max_tokens, sampling)
        finally:
            g.trim_prompt_cache = trim


@pytest.fixture(scope="module")
def confident_pair(tmp_path_factory):
    """A target with confident logits (the shipped trained qwen3, dense, trimmable: random weights' logits tie within
    a thousandth, too close to tell a fault from rounding) and a drafter that disagrees with it (a copy whose final
    norm is perturbed), so rounds reject and a rollback matters."""
    import shutil

    import mlx.core as mx
    import numpy as np

    from specscope.engine_adapter.model.demo_model import default_demo_path

    src = default_demo_path("draft", "trained")
    dst = tmp_path_factory.mktemp("perturbed") / "drafter"
    shutil.copytree(src, dst)
    w = mx.load(str(dst / "model.safetensors"))
    noise = np.random.default_rng(0).standard_normal(w["model.norm.weight"].shape).astype(np.float32)
    w["model.norm.weight"] = w["model.norm.weight"] * mx.array(1 + 0.8 * noise)
    mx.save_safetensors(str(dst / "model.safetensors"), w, metadata={"format": "mlx"})
    return {"dense": str(src), "draft": str(dst)}


def test_an_engine_whose_rollback_is_wrong_is_caught_by_the_parity_check(confident_pair, monkeypatch):
    monkeypatch.setitem(registry.BUILT_IN, "wrong-rollback", f"{__name__}:WrongRollback")
    s = _run(_cfg(confident_pair, "wrong-rollback", max_tokens=48))
    (c,) = s.cases
    assert c["spec"]["tokens"] != c["plain"]["tokens"]
    div = c["divergence"]
    assert div["verdict"] == "engine_fault" and s.status == "failed"  # a clear margin: not rounding
    assert 0 < div["position"] < 48 and div["plain_margin"] > 0.1  # where, and by how much the plain token led
    assert any("engine fault" in e and f"position {div['position']}" in e for e in s.data["errors"])
    # the same pair through mlx-lm's own loop (which trims): parity holds
    monkeypatch.undo()
    ok = _run(_cfg(confident_pair, "mlx-lm", max_tokens=48))
    assert ok.status == "complete" and ok.cases[0]["spec"]["tokens"] == ok.cases[0]["plain"]["tokens"]


def test_unknown_engines_and_impossible_settings_are_refused(model_dirs):
    with pytest.raises(SpecscopeError, match="unknown engine 'nope'.*mlx-lm"):
        registry.engine_class("nope")
    with pytest.raises(SpecscopeError, match="round-kinds instrumented"):
        _cfg(model_dirs, "mlx-lm", round_kinds="instrumented").validate()
    with pytest.raises(SpecscopeError, match="trimmable cache"):
        _run(_cfg(model_dirs, "mlx-lm", model=str(model_dirs["hybrid"])))


def test_an_engine_that_hangs_is_stopped_and_says_so():
    """The watchdog around another engine's loop: records that come in time pass through; one that does not come
    ends the process with exit code 3 and a message (a hang inside native code cannot be interrupted otherwise)."""
    import subprocess
    import sys

    code = ("import sys, time\n"
            "from specscope.engine_adapter.engines.seam import watched\n"
            "def loop():\n"
            "    yield 1\n"
            "    yield 2\n"
            "    time.sleep(30)\n"
            "    yield 3\n"
            "for r in watched(loop(), 1.0, 'stuck'):\n"
            "    print('record', r, flush=True)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 3
    assert r.stdout.split() == ["record", "1", "record", "2"]  # what came before the hang is out
    assert "engine stuck produced nothing for 1 s: stopped" in r.stderr
    from specscope.engine_adapter.engines.seam import watched

    assert list(watched(iter([1, 2, 3]), 5.0, "quick")) == [1, 2, 3]
