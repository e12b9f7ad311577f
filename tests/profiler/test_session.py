"""Folding worker events into a Session; its summary; saving and loading."""

import json

import pytest

from specscope.profiler.session import SCHEMA_VERSION, Session, SessionError


def events(k=2):
    cfg = {"num_draft_tokens": k, "max_tokens": 5, "sampling": {"regime": "greedy"}, "drafter": {"name": "ngram", "what_if": False}}
    case = {"id": "en-01", "category": "en", "prompt": "hi", "prompt_tokens": [1, 2]}
    yield {"event": "run_started", "config": cfg, "environment": {"device": "cpu"}, "model": {"name": "m"}}
    yield {"event": "case_started", "case": case, "phase": "plain"}
    yield {"event": "prefill", "case": "en-01", "mode": "plain", "token": 5, "ms": 30.0, "n_prompt": 2}
    for i, t in enumerate([6, 7, 8, 9]):
        yield {"event": "step", "case": "en-01", "i": i + 1, "token": t, "ms": 10.0}
    yield {"event": "repeat_done", "case": "en-01", "mode": "plain", "tok_s": 100.0}
    yield {"event": "case_started", "case": case, "phase": "spec"}
    yield {"event": "prefill", "case": "en-01", "mode": "spec", "token": 5, "ms": 30.0, "n_prompt": 2}
    yield {"event": "round", "case": "en-01", "drafted": [6, 0], "accepted": 1, "emitted": [6, 7],
           "draft_ms": 2.0, "verify_ms": 16.0, "rollback_ms": 0.1, "ms": 20.0}
    yield {"event": "round", "case": "en-01", "drafted": [8, 9], "accepted": 2, "emitted": [8, 9, 4],
           "draft_ms": 2.0, "verify_ms": 16.0, "rollback_ms": 0.0, "ms": 20.0}
    yield {"event": "repeat_done", "case": "en-01", "mode": "spec", "tok_s": 125.0}
    yield {"event": "case_done", "case": "en-01", "plain_text": "a", "spec_text": "b"}
    yield {"event": "run_done", "status": "complete"}


def folded():
    s = Session()
    for ev in events():
        s.apply(ev)
    return s


def test_fold_and_summary():
    s = folded()
    assert s.status == "complete"
    c = s.cases[0]
    assert c["plain"]["tokens"] == [5, 6, 7, 8, 9]
    assert c["spec"]["tokens"] == [5, 6, 7, 8, 9, 4]
    sm = s.summary()
    assert sm["plain_tok_s"] == pytest.approx(100.0) and sm["t_decode_ms"] == pytest.approx(10.0)
    assert sm["p"] == pytest.approx(3 / 4)
    assert sm["per_position"] == pytest.approx([1.0, 0.5])
    assert sm["tokens_per_round"] == pytest.approx(2.5)
    assert sm["predicted_speedup"] == pytest.approx(2.5 * 10 / 18)
    assert sm["measured_speedup"] == pytest.approx(1.25)
    assert sm["prediction_error"] == pytest.approx((2.5 * 10 / 18 - 1.25) / 1.25)
    assert sm["break_even_verify_ms"] == pytest.approx(23.0)
    assert sm["match_rate"] == pytest.approx(5 / 6) and sm["low_sample"]


def test_roundtrip_and_atomic_save(tmp_path):
    s = folded()
    p = tmp_path / "s.json"
    s.save(p)
    loaded = Session.load(p)
    assert loaded == s
    d = json.loads(p.read_text())
    assert d["schema_version"] == SCHEMA_VERSION and "summary" in d
    for key in ("t_decode_ms", "t_verify_ms", "t_draft_ms", "p", "p_ci95", "tokens_per_round", "predicted_speedup",
                "measured_speedup", "prediction_error", "break_even_verify_ms", "plain_tok_s", "spec_tok_s", "match_rate"):
        assert key in d["summary"]
    assert [x.name for x in tmp_path.iterdir()] == ["s.json"]  # no temp files left


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.update(schema_version=SCHEMA_VERSION + 1), "newer specscope"),
        (lambda d: d.pop("schema"), "not a specscope session"),
        (lambda d: d["cases"][0]["spec"]["rounds"][0].update(accepted=7), "accepts"),
        (lambda d: d["cases"][0]["plain"].update(step_ms=[-1.0]), "non-negative"),
        (lambda d: d["cases"][0]["plain"].update(tokens=["x"]), "token ids"),
    ],
)
def test_bad_sessions_refused(tmp_path, mutate, message):
    d = folded().to_dict()
    mutate(d)
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(d))
    with pytest.raises(SessionError, match=message):
        Session.load(p)


def test_truncated_session(tmp_path):
    p = tmp_path / "t.json"
    p.write_text(folded().to_json()[:200])
    with pytest.raises(SessionError, match="not a complete session"):
        Session.load(p)


def test_zero_cases_session_loads_with_empty_summary():
    s = Session()
    s.apply({"event": "run_started", "config": {"num_draft_tokens": 1}})
    sm = s.summary()
    assert sm["cases_measured"] == 0 and sm["predicted_speedup"] is None and sm["measured_speedup"] is None


def test_worker_death_marks_incomplete():
    s = Session()
    for ev in list(events())[:6]:
        s.apply(ev)
    s.mark_incomplete("worker ended unexpectedly")
    assert s.status == "incomplete" and s.cases[0]["plain"]["tokens"]
