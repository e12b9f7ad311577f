"""Long context and the sweep: sizes, refusals before the weights load, the sweep's order, sessions with a sweep."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from specscope.errors import SpecscopeError
from specscope.profiler.run import context as ctx
from specscope.profiler.run import context_check
from specscope.profiler.cli.main import main
from specscope.profiler.run.config import RunConfig
from specscope.profiler.session.schema import migrate_names
from specscope.profiler.session.session import Session
from specscope.profiler.analysis.sweep import dominant_effect, format_sweep, sweep_figures, sweep_order
from specscope.profiler.analysis.summary import summarize

FIX = Path(__file__).resolve().parents[2] / "fixtures"


def test_sizes():
    assert ctx.parse_size("4k") == 4096 and ctx.parse_size("0") == 0 and ctx.parse_size("1.5k") == 1536
    assert ctx.parse_contexts("0,1k,4k,16k") == [0, 1024, 4096, 16384]
    for bad in ("", "1k,1k", "ten"):
        with pytest.raises(SpecscopeError):
            ctx.parse_contexts(bad)


def test_sweep_order_is_mirrored():
    assert sweep_order([4096, 0, 1024], 2) == [0, 1024, 4096, 4096, 1024, 0]
    assert sweep_order([0, 64], 3) == [0, 64, 64, 0, 0, 64]


def test_documents_never_repeat_a_passage():
    for kind in ("code", "english", "chinese"):
        text = ctx.document(kind)
        assert len(text) > 20_000
        # no 200-character passage twice (the builder checks 64 tokens with both demo tokenizers)
        seen = set()
        for i in range(0, len(text) - 200, 50):
            assert text[i:i + 200] not in seen, kind
            seen.add(text[i:i + 200])


def test_mixed_context_takes_a_third_of_each():
    enc = lambda s: list(s.encode("utf-8"))  # noqa: E731 (a byte "tokenizer")
    toks = ctx.context_tokens(enc, 30, "mixed")
    assert len(toks) == 30
    assert bytes(toks[:10]) == ctx.document("english").encode()[:10]
    assert bytes(toks[10:20]) == ctx.document("code").encode()[:10]


def test_context_file_too_short_is_refused(tmp_path):
    f = tmp_path / "short.txt"
    f.write_text("a few words")
    with pytest.raises(SpecscopeError, match="has 11 tokens"):
        ctx.context_tokens(lambda s: list(s.encode()), 100, file=str(f))


def test_refused_beyond_the_window_before_loading(tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"text_config": {"max_position_embeddings": 1000, "num_hidden_layers": 4,
                                                                    "full_attention_interval": 4, "num_attention_heads": 4,
                                                                    "num_key_value_heads": 2, "head_dim": 64}}))
    cfg = RunConfig(model=str(model), max_tokens=32)
    with pytest.raises(SpecscopeError, match=r"window is 1,000 tokens"):
        context_check.precheck(cfg, [4096])
    with pytest.raises(SpecscopeError, match=r"this machine has 1\.0 GiB"):
        RunConfig(model=str(model), max_tokens=8)
        (model / "config.json").write_text(json.dumps({"text_config": {"max_position_embeddings": 10**7, "num_hidden_layers": 40,
                                                                        "full_attention_interval": 4, "num_attention_heads": 16,
                                                                        "num_key_value_heads": 2, "head_dim": 256}}))
        context_check.precheck(cfg, [262_144], memory=2**30)
    assert context_check.kv_bytes_per_token({"text_config": {"num_hidden_layers": 40, "full_attention_interval": 4,
                                                   "num_attention_heads": 16, "num_key_value_heads": 2,
                                                   "head_dim": 256}}) == 2 * 10 * 2 * 256 * 2


def test_cli_refuses_a_context_beyond_the_demo_window(capsys):
    rc = main(["run", "--demo", "--context", "300k", "--max-tokens", "8", "--cases", "1"])
    err = capsys.readouterr().err
    assert rc != 0 and "262,144" in err and "Traceback" not in err


def test_cli_refuses_a_list_for_run(capsys):
    assert main(["run", "--demo", "--context", "0,1k"]) != 0
    assert "specscope sweep" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["session_v1_demo.json", "session_demo.json"])
def test_old_sessions_still_load(name):
    s = Session.load(FIX / name)
    assert "sweep" not in s.data and summarize(s)["cases_measured"] >= 1


def _sweep_session() -> Session:
    base = migrate_names(json.loads((FIX / "session_demo.json").read_text()))  # the fixture keeps the old names
    point = {k: v for k, v in base.items() if k not in ("summary", "case_stats")}
    top = Session()
    top.apply({"event": "run_started", "config": {**point["config"], "sweep": [0, 64]}, "environment": point["environment"],
               "model": point["model"], "cases": []})
    top.apply({"event": "sweep_started", "contexts": [0, 64], "order": [0, 64, 64, 0], "passes": 2, "kind": "mixed"})
    top.apply({"event": "context", "context": 64, "tokens": 64, "prefill_ms": 1500.0, "kv_bytes": 1000})
    top.apply({"event": "context", "context": 64, "tokens": 64, "prefill_ms": 1500.0, "kv_bytes": 1000, "reused": True})
    for p in top.data["sweep"]["points"]:
        p["session"]["cases"] = copy.deepcopy(point["cases"])
        p["session"]["probe"] = copy.deepcopy(point.get("probe", []))
        p["complete"], p["visits"] = True, 2
    return top


def test_a_session_with_a_sweep_round_trips(tmp_path):
    s = _sweep_session()
    pts = {p["context"]: p for p in s.data["sweep"]["points"]}
    assert pts[64]["reuses"] == 1 and pts[64]["prefill"]["prefill_ms"] == 1500.0
    s.save(tmp_path / "s.json")
    back = Session.load(tmp_path / "s.json")
    assert back == s
    rows = sweep_figures(back)
    assert [r["context"] for r in rows] == [0, 64]
    assert rows[0]["plain_tok_s"] == pytest.approx(summarize(back)["plain_tok_s"] if back.cases else rows[1]["plain_tok_s"])
    assert rows[1]["prefill_ms"] == 1500.0 and rows[0]["prefill_ms"] is None
    text = format_sweep(rows)
    assert "T_ver/T_dec" in text and "64" in text


def test_sweep_events_fold_into_the_point_of_the_visit():
    s = Session()
    s.apply({"event": "run_started", "config": {"num_draft_tokens": 2}, "environment": {}, "model": {}, "cases": []})
    s.apply({"event": "sweep_started", "contexts": [0, 64], "order": [0, 64], "passes": 1})
    s.apply({"event": "sweep_visit", "context": 64, "visit": 1})
    s.apply({"event": "case_started", "case": {"id": "c1", "content_class": "en", "prompt": "x", "prompt_tokens": [1]},
             "index": 0, "repeat": 0, "phase": "plain"})
    s.apply({"event": "prefill", "case": "c1", "mode": "plain", "token": 5, "ms": 1.0, "n_prompt": 65})
    s.apply({"event": "sweep_visit_done", "context": 64, "visit": 1, "status": "complete", "last": True})
    assert s.cases == []
    p64 = [p for p in s.data["sweep"]["points"] if p["context"] == 64][0]
    assert p64["complete"] and p64["session"]["cases"][0]["plain"]["tokens"] == [5]


def test_a_malformed_sweep_is_refused():
    d = json.loads((FIX / "session_demo.json").read_text())
    d["sweep"] = {"points": [{"context": -1, "session": {}}]}
    from specscope.profiler.session.schema import SessionError

    with pytest.raises(SessionError, match="sweep point"):
        Session.from_dict(d)


def test_dominant_effect_names_the_largest_term():
    a = {"context": 0, "t_decode_ms": 10.0, "t_verify_ms": 15.0, "verify_multiple": 1.5, "t_draft_ms": 1.0,
         "tokens_per_round": 2.0}
    b = {"context": 4096, "t_decode_ms": 12.0, "t_verify_ms": 28.8, "verify_multiple": 2.4, "t_draft_ms": 1.2,
         "tokens_per_round": 1.9}
    assert "dominant: verify cost" in dominant_effect([a, b])
    c = {**b, "t_verify_ms": 18.0, "verify_multiple": 1.5, "tokens_per_round": 1.2}
    assert "dominant: acceptance" in dominant_effect([a, c])
    # the whole round: a rollback that grows with the context is the rest of the round's cost, and can dominate
    d = {**a, "context": 4096, "t_rollback_ms": 30.0}
    assert "dominant: draft, rollback and bookkeeping" in dominant_effect([{**a, "t_rollback_ms": 0.5}, d])


@pytest.mark.slow  # a sweep over two contexts (~10 s); the sweep's order and analysis are tested without MLX by default
def test_a_small_sweep_runs_end_to_end_and_fills_in_a_context_at_a_time(tmp_path):
    """The sweep the app's Context page runs (a RunConfig with ``sweep``, in the worker): each context's figures are
    there as soon as its visits are done, the context prefilled once and timed on its own (never in the case's
    figures), the session holding every point's own cases."""
    from specscope.profiler.run.runner import run_worker

    out = tmp_path / "sweep.json"
    statuses, filled = [], []

    def on_event(ev, session):
        if ev["event"] == "status":
            statuses.append(ev["message"])
        elif ev["event"] == "sweep_visit_done" and ev.get("last"):
            filled.append(len([p for p in sweep_figures(session) if p.get("plain_tok_s")]))

    cfg = RunConfig(demo=True, sweep=[0, 64], sweep_passes=1, cases=1, max_tokens=8)
    assert run_worker(cfg, on_event=on_event, autosave=str(out)).session.status == "complete"
    assert filled == [1, 2]  # it fills in as it goes
    assert any("prefilling the context: 64 tokens" in m for m in statuses)
    s = Session.load(out)
    points = {p["context"]: p for p in sweep_figures(s)}
    assert set(points) == {0, 64}
    assert points[64]["prefill_ms"] > 0 and not points[0].get("prefill_ms")
    for p in points.values():
        assert p["plain_tok_s"] > 0 and p["measured_speedup"] > 0 and p["tokens_per_round"] >= 1
