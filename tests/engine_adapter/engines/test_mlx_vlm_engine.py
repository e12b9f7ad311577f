"""mlx-vlm's speculative loop behind the seam (the ``vlm`` extra): refused with the install command where it is absent
(the first test runs everywhere); where it is installed, its MTP loop on the trained hybrid demo and its DFlash loop
with a drafter in this project's DFlash format, each token-identical to plain decoding, its rounds read from its own
counters, its verify opened by block, and its sampling at temperature audited against plain decoding."""

from __future__ import annotations

import json

import pytest

from specscope.engine_adapter.engine import Engine
from specscope.engine_adapter.engines import mlx_vlm_loop
from specscope.engine_adapter.params import EngineParams
from specscope.errors import SpecscopeError

K = 2


def test_without_mlx_vlm_the_engine_is_refused_with_the_install_command_before_any_weights_load(monkeypatch):
    from importlib import metadata

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    refusal = mlx_vlm_loop._refusal()
    assert refusal is not None and "pip install 'specscope[vlm]'" in refusal and "0.7.10" in refusal
    monkeypatch.setattr(mlx_vlm_loop.MlxVlmLoop, "refusal", refusal)
    loaded: list[str] = []
    with pytest.raises(SpecscopeError, match=r"engine mlx-vlm is not installed: pip install 'specscope\[vlm\]'"):
        Engine.open(EngineParams(demo=True, engine="mlx-vlm"), status=loaded.append)
    assert not any("loading" in m for m in loaded)  # said before the weights


def _installed():
    pytest.importorskip("mlx_vlm", reason="the vlm extra (pip install 'specscope[vlm]') is not installed")


def test_mlx_vlm_is_refused_as_absent_exactly_when_it_is_absent():
    from importlib.util import find_spec

    assert (mlx_vlm_loop.MlxVlmLoop.refusal is None) == (find_spec("mlx_vlm") is not None)


@pytest.fixture(scope="module")
def mtp_engine():
    _installed()
    return Engine.open(EngineParams(demo=True, engine="mlx-vlm", num_draft_tokens=K))


@pytest.fixture(scope="module")
def demo_prompt(mtp_engine):
    return mtp_engine.encode("Explain why a verification pass over several tokens can cost as much as decoding.")


def _tokens(records):
    return [t for r in records for t in ([r["token"]] if r["event"] == "prefill" else r["emitted"])]


def test_its_mtp_loop_on_the_trained_demo_matches_plain_decoding_round_by_round(mtp_engine, demo_prompt):
    assert mtp_engine.drafter_name == "mtp" and mtp_engine.foreign.kind == "mtp"
    assert mtp_engine.foreign.describe() == {"name": "mlx-vlm", "version": "0.7.10", "reports": ["ms"],
                                             "not_reported": ["draft_ms", "rollback_ms", "verify_ms"]}
    recs = list(mtp_engine.speculative(demo_prompt, [], 20))
    plain = [r["token"] for r in mtp_engine.plain(demo_prompt, 20)]
    assert _tokens(recs) == plain  # greedy parity with specscope's plain decoding of its own copy of the weights
    rounds = recs[1:]
    assert all(r["event"] == "round" and r["ms"] > 0 and r["verify_ms"] is None for r in rounds)
    for r in rounds[:-1]:  # each round: k drafts, the accepted ones first, then the target's own token
        assert len(r["drafted"]) == K and len(r["emitted"]) == r["accepted"] + 1
        assert r["drafted"][:r["accepted"]] == r["emitted"][:r["accepted"]]
    assert sum(r["accepted"] for r in rounds) > 0  # the trained head's drafts are kept


def test_its_verify_is_opened_by_block_at_its_own_verifier(mtp_engine, demo_prompt):
    from specscope.engine_adapter.engines.opened import opened_pass

    model = mtp_engine.foreign.forward_model()
    op = opened_pass(mtp_engine.foreign, demo_prompt, 14, mtp_engine.sampling, passes=1)
    assert op["instrumented"] and op["same_tokens"] and op["tokens"] == 14
    assert "_gated_delta" not in vars(mtp_engine.foreign.block_sites()[0][0])  # its methods are back
    assert type(model).__name__ == "LanguageModel"
    (v,) = [p for p in op["verify"] if p["positions"] == K + 1]
    # the blocks are read by mlx-vlm's exact verifier, not called: without its call sites they were all "uncalled"
    assert all(v["blocks"][c] > 0 for c in ("linear_attention", "full_attention", "moe"))
    assert v["instrumented_ms"] >= v["block_sum_ms"] > 0
    # the greedy target token is an argmax from the hidden state outside the forward: the head is in no verify, and
    # it is left out of the figures (not 0 ms, which a comparison would read as "cheaper there")
    assert op["uncalled_blocks"] == ["lm_head (output_head)"] and "output_head" not in v["blocks"]


@pytest.mark.slow  # 40 draws of plain decoding, the engine and the known-wrong rule: ~15 s here
def test_its_sampling_at_temperature_is_audited_against_plain_decoding():
    _installed()
    from specscope.engine_adapter.engines.audit import sampling_audit

    eng = Engine.open(EngineParams(demo=True, engine="mlx-vlm", num_draft_tokens=K, temp=0.7, top_p=0.9))
    prompt = eng.encode("Explain why a verification pass over several tokens can cost as much as decoding.")
    rep = sampling_audit(eng, prompt, draws=40, temp=0.7, top_p=0.9)
    assert rep["verdict"] == "consistent", rep["text"]  # and the test had the power to say otherwise


def _hybrid_dflash(model_dirs, tmp_path):
    from specscope.engine_adapter.model.dflash_demo import build_dflash_demo

    text = json.loads((model_dirs["hybrid"] / "config.json").read_text())
    return build_dflash_demo(tmp_path / "dfl", text.get("text_config", text), "the hybrid demo")


@pytest.mark.slow  # a protocol run (plain, speculative, divergence check) of the random hybrid demo: ~40 s here
def test_its_dflash_loop_reads_this_projects_drafter_format_and_the_run_checks_parity(model_dirs, tmp_path):
    _installed()
    from specscope.profiler.run import protocol
    from specscope.profiler.run.config import RunConfig
    from specscope.profiler.session.session import Session

    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps({"name": "short", "cases": [{"id": "en-01", "content_class": "en",
                                                              "prompt": "Why is the sky blue?"}]}))
    cfg = RunConfig(model=str(model_dirs["hybrid"]), drafter="dflash", draft_model=str(_hybrid_dflash(model_dirs, tmp_path)),
                    engine="mlx-vlm", num_draft_tokens=3, cases=1, max_tokens=16, warmup=0, repeats=1, breakdown=False,
                    component_reps=1, ignore_preflight=True, suite=str(suite))
    s = Session()
    s.apply({"event": "run_done", "status": protocol.run_protocol(cfg, s.apply)})
    assert s.status == "complete"
    (c,) = s.cases
    assert c["spec"]["tokens"] == c["plain"]["tokens"]  # greedy parity, checked by the run
    assert s.config["engine"]["name"] == "mlx-vlm"
    rounds = c["spec"]["rounds"]
    assert 1 + sum(len(r["emitted"]) for r in rounds) == 16
    made = 1
    for r in rounds:  # a block of k + 1 = 4 positions a cycle, no longer than the tokens still to make
        assert len(r["drafted"]) == min(3, 16 - made)
        made += len(r["emitted"])


def test_its_dflash_is_refused_on_a_target_that_returns_no_hidden_states(model_dirs, tmp_path):
    _installed()
    from specscope.engine_adapter.model.dflash_demo import build_dflash_demo

    text = json.loads((model_dirs["dense"] / "config.json").read_text())
    drafter = build_dflash_demo(tmp_path / "d", text.get("text_config", text), "the dense demo")
    with pytest.raises(SpecscopeError, match="does not return the hidden states a DFlash drafter reads"):
        Engine.open(EngineParams(model=str(model_dirs["dense"]), drafter="dflash", draft_model=str(drafter),
                                 engine="mlx-vlm"))


def test_a_draft_model_is_not_an_mlx_vlm_drafter(model_dirs):
    _installed()
    with pytest.raises(SpecscopeError, match="no draft-model kind"):
        Engine.open(EngineParams(model=str(model_dirs["dense"]), draft_model=str(model_dirs["draft"]),
                                 engine="mlx-vlm"))
