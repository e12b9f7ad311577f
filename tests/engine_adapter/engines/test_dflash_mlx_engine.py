"""dflash-mlx's loop behind the seam (the ``dflash`` extra; skipped where it is not installed): on a dense target
with a random DFlash drafter in the published format, beside specscope's own DFlash drafter on the same checkpoint,
both token-identical to plain decoding; the hybrid target is refused on the CPU backend with the reason."""

from __future__ import annotations

import json

import pytest

from specscope.engine_adapter.model.dflash_demo import build_dflash_demo
from specscope.errors import SpecscopeError
from specscope.profiler.run import protocol
from specscope.profiler.run.config import RunConfig
from specscope.profiler.session.session import Session

pytest.importorskip("dflash_mlx", reason="the dflash extra (pip install 'specscope[dflash]') is not installed")


@pytest.fixture(scope="module")
def dense_drafter(model_dirs, tmp_path_factory):
    text = json.loads((model_dirs["dense"] / "config.json").read_text())
    return build_dflash_demo(tmp_path_factory.mktemp("dfl") / "drafter", text.get("text_config", text), "the dense demo")


def _run(model, drafter, engine: str, **kw) -> Session:
    cfg = RunConfig(model=str(model), drafter="dflash", draft_model=str(drafter), engine=engine, num_draft_tokens=7,
                    cases=1, max_tokens=24, warmup=0, repeats=1, breakdown=False, component_reps=1, ignore_preflight=True,
                    **kw)
    s = Session()
    s.apply({"event": "run_done", "status": protocol.run_protocol(cfg, s.apply)})
    return s


@pytest.mark.slow  # two runs of the random dense demo at k = 7: about 60 s of the default suite (pytest -m slow)
def test_dflash_mlx_beside_specscopes_own_dflash_drafter_on_one_checkpoint(model_dirs, dense_drafter, tmp_path):
    # a short prompt: the dense demo is quantized, and MLX's quantized matmul on the CPU costs ~14 ms a token, so the
    # default suite's first prompt cost ~2.5 s a prefill, and each run prefills it four times (plain, speculative, the
    # components' prompt and their round); what is checked here (parity, the engine, the rounds) does not depend on it
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps({"name": "short", "cases": [{"id": "en-01", "content_class": "en",
                                                              "prompt": "Why is the sky blue?"}]}))
    ours, theirs = (_run(model_dirs["dense"], dense_drafter, e, suite=str(suite)) for e in ("specscope", "dflash-mlx"))
    for s in (ours, theirs):
        assert s.status == "complete"
        (c,) = s.cases
        assert c["spec"]["tokens"] == c["plain"]["tokens"]  # greedy parity, both engines
    eng = theirs.config["engine"]
    assert eng["name"] == "dflash-mlx" and eng["version"] == "0.1.8" and eng["reports"] == ["ms"]
    rounds = theirs.cases[0]["spec"]["rounds"]
    assert 1 + sum(len(r["emitted"]) for r in rounds) == 24 and all(r["verify_ms"] is None for r in rounds)
    assert all(len(r["drafted"]) == 7 for r in rounds[:-1])  # a block of k + 1 = 8 positions a cycle


def test_dflash_mlx_refuses_a_hybrid_target_on_the_cpu_backend(model_dirs, tmp_path):
    import mlx.core as mx

    if mx.metal.is_available():
        pytest.skip("the refusal is for the CPU backend")
    text = json.loads((model_dirs["hybrid"] / "config.json").read_text())
    drafter = build_dflash_demo(tmp_path / "d", text.get("text_config", text), "the hybrid demo")
    with pytest.raises(SpecscopeError, match="cannot verify a Gated DeltaNet hybrid on the CPU backend"):
        _run(model_dirs["hybrid"], drafter, "dflash-mlx")
