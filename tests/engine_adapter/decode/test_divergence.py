"""The margin at a greedy divergence, and a forced engine fault that must fail the session."""

from __future__ import annotations

import mlx.core as mx
import pytest

from specscope.engine_adapter.decode import divergence as dv
from specscope.engine_adapter.model.demo_model import demo_model_path
from specscope.profiler.analysis.summary import summarize

pytestmark = pytest.mark.timeout(600)


def _top2(row: mx.array) -> tuple[int, int, float]:
    """Independently: the two best tokens of a row and their logit margin (numpy-free, a full sort)."""
    order = mx.argsort(row.astype(mx.float32)).tolist()
    t1, t2 = order[-1], order[-2]
    return t1, t2, row[t1].item() - row[t2].item()


@pytest.mark.parametrize("kind, width", [("draft", 1), ("draft", 3), ("hybrid", 3)])
def test_margin_equals_top1_minus_top2_of_a_plain_forward(kind, width, request):
    lm = request.getfixturevalue(kind)  # hybrid: the verify row runs with per-position state capture
    m = lm.model
    prompt = lm.encode("Explain why a verification pass over several tokens")
    prefix = lm.encode(" can cost as much as decoding")
    # one forward over the whole sequence, no cache: an independent plain computation
    row = m(mx.array(prompt + prefix, dtype=mx.uint32)[None])[0, -1]
    t1, t2, margin = _top2(row)
    out = dv.divergence_margins(m, prompt, prefix, plain_token=t1, spec_token=t2, width=width)
    for side in ("plain", "verify"):  # the plain step and the batched verify row
        r = out[side]
        assert (r["top1"], r["top2"]) == (t1, t2), side
        assert r["margin"] == pytest.approx(margin, abs=1e-4), side
        assert r["margin"] == pytest.approx(r["top1_logit"] - r["top2_logit"])
        assert r["plain_logit"] == pytest.approx(row[t1].item(), abs=1e-4)
        assert r["spec_logit"] == pytest.approx(row[t2].item(), abs=1e-4)
        assert r["lead"] == pytest.approx(margin, abs=1e-4)
    assert out["verify"]["width"] == width and out["verify"]["row"] == width - 1
    assert out["dtype"] == "float32" and out["tolerance"] == pytest.approx(1e-3)
    # a clear margin between the two best tokens is not rounding
    assert out["verdict"] == ("engine_fault" if margin > 1e-3 else "rounding")


def test_tolerance_and_classification():
    assert dv.near_tie_tolerance("float32", 3.0) == pytest.approx(1e-3)
    assert dv.near_tie_tolerance("float32", 40.0) == pytest.approx(4e-3)
    assert dv.near_tie_tolerance("bfloat16", 2.0) == pytest.approx(0.25)
    assert dv.near_tie_tolerance("bfloat16", 24.0) == pytest.approx(0.75)  # 4 ulps of bf16 at the top of [16, 32)
    assert dv.near_tie_tolerance("float16", 24.0) == pytest.approx(24 / 256)
    assert dv.classify(5e-4, -2e-4, 1e-3) == "rounding"
    assert dv.classify(5e-4, -0.4, 1e-3) == "engine_fault"  # the batched row disagrees clearly
    assert dv.classify(0.2, None, 1e-3) == "engine_fault"
    assert dv.classify(None, None, 1e-3) == "engine_fault"
    assert dv.first_divergence([1, 2, 3], [1, 2, 3]) is None
    assert dv.first_divergence([1, 2, 3], [1, 5, 3]) == 1
    assert dv.first_divergence([1, 2], [1, 2, 3]) == 2


def test_margin_failure_is_never_rounding(draft, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(dv, "divergence_margins", boom)
    ev = dv.divergence_event(draft.model, "c", [1, 2], [3, 4], [3, 5], 3)
    assert ev["position"] == 1 and ev["verdict"] == "engine_fault" and "out of memory" in ev["reason"]


def test_event_at_first_divergence(draft):
    prompt = draft.encode("Hello there")
    row = draft.model(mx.array(prompt, dtype=mx.uint32)[None])[0, -1]
    t1, t2, _ = _top2(row)
    assert dv.divergence_event(draft.model, "c", prompt, [t1, 5], [t1, 5], 3) is None
    ev = dv.divergence_event(draft.model, "c", prompt, [t2, 5], [t1, 5], 3)  # "plain" picked the runner-up
    assert ev["event"] == "divergence" and ev["position"] == 0
    assert ev["plain_token"] == t2 and ev["spec_token"] == t1
    assert ev["plain_lead"] < 0 and ev["plain_top"] == [t1, t2]


def _run(cfg):
    from specscope.profiler.run.protocol import run_protocol
    from specscope.profiler.session.session import Session

    s, evs = Session(), []

    def emit(ev):
        evs.append(ev)
        s.apply(ev)

    status = run_protocol(cfg, emit)
    s.apply({"event": "run_done", "status": status})
    return status, s, evs


# The demo model leans on each token's own embedding, so stale context changes its argmax only now and
# then: these prompts are ones where a rollback that keeps rejected drafts diverges early (position < 48).
PROMPTS = ["The quick brown fox jumps over the lazy dog.",
           "写一段关于秋天的短文，描述北京街头银杏叶变黄的景象，以及人们在周末出门散步时的心情。",
           "请列出学习一门新的编程语言时最重要的五个步骤，并为每个步骤给出一句简短的建议。"]


def _cfg(tmp_path):
    import json

    from specscope.profiler.run.config import RunConfig

    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps({"name": "divergence", "cases": [{"id": f"c{i}", "prompt": p} for i, p in enumerate(PROMPTS)]}),
                     encoding="utf-8")
    # one end-to-end pass per case and one component rep: what is checked is the divergence, not the timings
    return RunConfig(model=str(demo_model_path("draft")), drafter="oracle", oracle_p=0.5, num_draft_tokens=3,
                     max_tokens=48, suite=str(suite), warmup=0, breakdown=False, round_kinds="end_to_end",
                     component_reps=1, repeats=1)


@pytest.mark.slow  # a whole run with a broken rollback (~15 s); the CLI's engine-fault exit stays in the default run
def test_broken_rollback_is_an_engine_fault_that_fails_the_session(monkeypatch, tmp_path):
    from specscope.engine_adapter.decode import decoding
    from specscope.profiler.analysis.summary_text import format_summary
    from specscope.profiler.analysis.verdict import verdict

    # control: the real engine reproduces plain decoding exactly, with no divergence event
    status, s, evs = _run(_cfg(tmp_path))
    assert status == "complete" and s.status == "complete" and not s.data["errors"]
    assert not [e for e in evs if e["event"] == "divergence"]
    assert summarize(s)["all_match"]

    # a rollback that keeps rejected drafts in the KV cache: later verifies see the wrong context
    monkeypatch.setattr(decoding.VerifyRollback, "rollback", lambda self, accepted: [])
    status, s, evs = _run(_cfg(tmp_path))
    div = [e for e in evs if e["event"] == "divergence"]
    assert div and all(d["verdict"] == "engine_fault" for d in div)
    for d in div:  # the fresh recomputation prefers the plain token by a clear margin
        assert d["plain_lead"] > d["tolerance"] and d["plain_top"][0] == d["plain_token"]
        # the divergence event arrives before its case is done, and names the first differing token
        c = next(c for c in s.cases if c["id"] == d["case"])
        assert c["plain"]["tokens"][:d["position"]] == c["spec"]["tokens"][:d["position"]]
        assert c["plain"]["tokens"][d["position"]] != c["spec"]["tokens"][d["position"]]
    assert status == "failed" and s.status == "failed"
    first = div[0]
    assert s.data["errors"][0].startswith(f"engine fault: speculative output diverged from plain decoding at case {first['case']} "
                                          f"position {first['position']} with a clear margin")
    sm = summarize(s)
    assert [d["case"] for d in sm["engine_faults"]] == [d["case"] for d in div]
    assert verdict(sm).startswith(f"Engine fault: speculative output diverged from plain decoding at case {first['case']}")
    text = format_summary(s)
    assert "status failed" in text and "kernel rounding" not in text


BROKEN_ROLLBACK = """
from specscope.engine_adapter.cache import rollback
rollback.VerifyRollback.rollback = lambda self, accepted: []
"""


def test_cli_run_exits_nonzero_on_an_engine_fault(tmp_path, monkeypatch, capsys):
    """The worker process gets the broken rollback (a sitecustomize on its path); `specscope run` fails loudly."""
    import json

    from specscope.profiler.cli import main as cli
    from specscope.profiler.session.session import Session

    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BROKEN_ROLLBACK)
    monkeypatch.setenv("PYTHONPATH", str(site))
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps({"name": "d", "cases": [{"id": "fox", "prompt": PROMPTS[0]}]}), encoding="utf-8")
    out = tmp_path / "s.json"
    rc = cli.main(["run", "--model", str(demo_model_path("draft")), "--drafter", "oracle", "--oracle-p", "0.5",
                   "-k", "3", "--max-tokens", "24", "--suite", str(suite), "--warmup", "0", "--no-breakdown",
                   "--component-reps", "1", "-o", str(out)])
    err = capsys.readouterr().err
    assert rc != 0
    assert "engine fault: speculative output diverged from plain decoding at case fox position" in err
    saved = Session.load(out)
    assert saved.status == "failed" and saved.cases[0]["divergence"]["verdict"] == "engine_fault"
