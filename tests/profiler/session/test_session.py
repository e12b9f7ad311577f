"""Folding worker events into a Session; its summary; saving and loading."""

import json

import pytest

from specscope.profiler.session.schema import SCHEMA_VERSION, SessionError
from specscope.profiler.session.session import Session
from specscope.profiler.analysis.session_file import save_session, session_dict
from specscope.profiler.analysis.summary import summarize


def events(k=2):
    cfg = {"num_draft_tokens": k, "max_tokens": 5, "sampling": {"regime": "greedy"}, "drafter": {"name": "ngram", "what_if": False}}
    case = {"id": "en-01", "content_class": "en", "prompt": "hi", "prompt_tokens": [1, 2]}
    yield {"event": "run_started", "config": cfg, "environment": {"device": "cpu"}, "model": {"name": "m"}}
    yield {"event": "case_started", "case": case, "phase": "plain"}
    yield {"event": "prefill", "case": "en-01", "mode": "plain", "token": 5, "ms": 30.0, "n_prompt": 2}
    for i, t in enumerate([6, 7, 8, 9]):
        yield {"event": "step", "case": "en-01", "index": i + 1, "token": t, "ms": 10.0}
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
    sm = summarize(s)
    assert sm["plain_tok_s"] == pytest.approx(100.0) and sm["t_decode_ms"] == pytest.approx(10.0)
    assert sm["p"] == pytest.approx(3 / 4)
    assert sm["per_position"] == pytest.approx([1.0, 0.5])
    assert sm["tokens_per_round"] == pytest.approx(2.5)
    # no components timed apart in these events: the same-round figure is the ledger, and there is no prediction
    assert sm["ledger_speedup"] == pytest.approx(2.5 * 10 / 18) and sm["predicted_speedup"] is None
    assert sm["measured_speedup"] == pytest.approx(1.25)
    assert sm["ledger_error"] == pytest.approx((2.5 * 10 / 18 - 1.25) / 1.25)
    assert sm["break_even_verify_ms"] == pytest.approx(23.0)
    assert sm["match_rate"] == pytest.approx(5 / 6) and sm["low_sample"]


def test_roundtrip_and_atomic_save(tmp_path):
    s = folded()
    p = tmp_path / "s.json"
    save_session(s, p)
    loaded = Session.load(p)
    assert loaded == s
    d = json.loads(p.read_text())
    assert d["schema_version"] == SCHEMA_VERSION and "summary" in d
    for key in ("t_decode_ms", "t_verify_ms", "t_draft_ms", "p", "p_ci95", "tokens_per_round", "predicted_speedup",
                "measured_speedup", "prediction_error", "break_even_verify_ms", "plain_tok_s", "spec_tok_s", "match_rate"):
        assert key in d["summary"]
    assert [x.name for x in tmp_path.iterdir()] == ["s.json"]  # no temp files left
    s.save(tmp_path / "data.json")  # the Session alone writes its data: no figures, still a session file
    assert "summary" not in json.loads((tmp_path / "data.json").read_text()) and Session.load(tmp_path / "data.json") == s


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
    sm = summarize(s)
    assert sm["cases_measured"] == 0 and sm["predicted_speedup"] is None and sm["measured_speedup"] is None


def test_worker_death_marks_incomplete():
    s = Session()
    for ev in list(events())[:6]:
        s.apply(ev)
    s.mark_incomplete("worker ended unexpectedly")
    assert s.status == "incomplete" and s.cases[0]["plain"]["tokens"]


# -- greedy divergence: an engine fault fails the run; a near-tie is kernel rounding --------------------

def _divergence(verdict_lead=1.3, verify_lead=1.29, tol=1e-3):
    return {"event": "divergence", "case": "en-01", "position": 5, "plain_token": 4, "spec_token": 0,
            "plain_margin": 0.2, "verify_margin": 0.2, "plain_lead": verdict_lead, "verify_lead": verify_lead,
            "plain_top": [4, 9], "verify_top": [4, 9], "plain_logits": {"plain": 3.1, "spec": 3.1 - verdict_lead},
            "verify_logits": {"plain": 3.1, "spec": 3.1 - verify_lead}, "verify_row": 2, "verify_width": 3,
            "dtype": "float32", "tolerance": tol, "verdict": "engine_fault" if abs(verdict_lead) > tol else "rounding"}


def folded_with(extra: dict, regime="greedy"):
    s = Session()
    for ev in events():
        if ev["event"] == "run_started":
            ev["config"]["sampling"] = {"regime": regime}
        if ev["event"] == "case_done":  # the protocol emits the divergence before case_done
            s.apply(extra)
        s.apply(ev)
    return s


def test_engine_fault_fails_the_session_loudly():
    from specscope.profiler.analysis.summary_text import format_summary
    from specscope.profiler.analysis.verdict import verdict

    s = folded_with(_divergence())
    assert s.status == "failed"  # run_done "complete" does not undo the fault
    msg = s.data["errors"][-1]
    assert msg.startswith("engine fault: speculative output diverged from plain decoding at case en-01 position 5 with a clear margin")
    assert "1.3 logits" in msg and "tolerance 0.001" in msg
    sm = summarize(s)
    assert [d["case"] for d in sm["engine_faults"]] == ["en-01"]
    assert verdict(sm).startswith("Engine fault: speculative output diverged from plain decoding at case en-01 position 5")
    text = format_summary(s)
    assert "status failed" in text and "kernel rounding" not in text
    assert "  divergence        engine fault: speculative output diverged" in text
    # saved and loaded, it stays failed, with its record
    back = Session.from_dict(json.loads(s.to_json()))
    assert back.status == "failed" and back.cases[0]["divergence"]["position"] == 5
    assert summarize(back)["engine_faults"]


def test_near_tie_is_rounding_and_the_run_completes():
    from specscope.profiler.analysis.summary_text import format_summary
    from specscope.profiler.analysis.verdict import verdict

    s = folded_with(_divergence(verdict_lead=2e-5, verify_lead=-1e-5))
    assert s.status == "complete" and not s.data["errors"]
    sm = summarize(s)
    assert not sm["engine_faults"] and sm["divergences"][0]["verdict"] == "rounding"
    assert verdict(sm).startswith("Speculation")
    text = format_summary(s)
    assert ("  divergence        speculative output diverged from plain decoding at case en-01 position 5 "
            "at a near-tie (kernel rounding") in text
    assert "engine fault" not in text


def test_verdict_is_recomputed_not_trusted():
    """A record that calls a clear margin "rounding" (hand edit, other writer) still fails the run."""
    ev = {**_divergence(verdict_lead=0.5, verify_lead=0.5), "verdict": "rounding"}
    s = folded_with(ev)
    assert s.status == "failed" and summarize(s)["engine_faults"]
    # both leads must be near-ties: a batched row that disagrees by a clear margin is a fault too
    s = folded_with(_divergence(verdict_lead=1e-4, verify_lead=-0.4))
    assert s.status == "failed"
    # no margin at all (outputs of different lengths) is never rounding
    s = folded_with({"event": "divergence", "case": "en-01", "position": 5, "plain_token": None, "spec_token": 4,
                     "verdict": "engine_fault", "reason": "the outputs have different lengths (5 vs 6 tokens)"})
    assert s.status == "failed" and "different lengths" in s.data["errors"][-1]


def test_old_session_without_divergence_event_loads_and_says_it_was_not_measured(tmp_path):
    from specscope.profiler.analysis.summary_text import format_summary

    s = folded()  # plain and spec differ at token 5, no divergence event (older specscope)
    d = session_dict(s)
    for c in d["cases"]:
        c.pop("divergence", None)
    d["summary"].pop("divergences", None)
    p = tmp_path / "old.json"
    p.write_text(json.dumps(d))
    old = Session.load(p)
    assert old.status == "complete"
    sm = summarize(old)
    assert sm["divergences"] == [] and sm["engine_faults"] == []
    assert sm["unchecked_divergences"] == [{"case": "en-01", "position": 5}]
    text = format_summary(old)
    assert "margin was not measured" in text and "kernel rounding cannot be told from an engine fault" in text


def test_sampled_regime_shows_no_greedy_match():
    from specscope.profiler.analysis.summary_text import format_summary
    from specscope.profiler.analysis.verdict import SAMPLED_NOTE, divergence_note

    s = folded_with({"event": "status", "message": "-"}, regime="temperature 0.7")
    text = format_summary(s)
    assert "greedy match" not in text.lower() and "divergence" not in text
    assert f"  output check      {SAMPLED_NOTE}" in text
    assert divergence_note(summarize(s)) is None  # the spec/plain difference (token 5) is not called a divergence
    assert SAMPLED_NOTE == ("sampled regime: outputs differ by design; "
                            "the accept/reject rule is tested for distribution equality")


def test_malformed_divergence_record_refused(tmp_path):
    d = folded_with(_divergence()).to_dict()
    d["cases"][0]["divergence"] = {"position": "five"}
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(d))
    with pytest.raises(SessionError, match="malformed divergence"):
        Session.load(p)


def test_a_schema_1_session_loads_and_says_which_figure_it_holds():
    from pathlib import Path

    v1 = Session.load(Path(__file__).resolve().parents[2] / "fixtures" / "session_v1_demo.json")
    assert v1.data["schema_version"] == 1
    sm = summarize(v1)
    assert sm["predicted_speedup"] is None and sm["ledger_speedup"] is not None
    assert "holds only the ledger" in sm["prediction_unavailable"]
    assert sm["prediction_verdict"]["state"] is None


def test_a_malformed_components_record_is_refused_with_a_message():
    d = folded().to_dict()
    d["cases"][0]["components"] = {"verify_ms": [1.0, -2.0], "draft_ms": [], "rollback_ms": {}}
    with pytest.raises(SessionError, match="malformed components"):
        Session.from_dict(d)


def test_an_in_round_draft_time_may_be_negative_noise_but_nothing_else_may():
    """The in-round draft time is a difference (a round less the verify timed before it): a negative one is noise and
    loads; a negative verify, round or alone-draft time, or a negative draft time of the old kind, is refused."""
    d = folded().to_dict()
    comp = {"verify_ms": [5.0, 5.2], "draft_ms": [-0.3, 0.4], "round_ms": [4.7, 5.6], "draft_alone_ms": [1.0],
            "draft_method": "in_round", "rollback_ms": {}}
    d["cases"][0]["components"] = comp
    Session.from_dict(d)
    for bad in ({"round_ms": [-1.0, 5.6]}, {"draft_alone_ms": [-1.0]}, {"draft_method": None}, {"draft_ms": [float("nan"), 0.4]}):
        d["cases"][0]["components"] = {**comp, **bad}
        with pytest.raises(SessionError, match="malformed components"):
            Session.from_dict(d)


def test_components_from_several_calls_fold_into_one_record_that_keeps_every_call():
    from specscope.profiler.session.session import Session

    s = Session()
    s.apply({"event": "run_started", "config": {}, "environment": {}, "model": {}, "cases": []})
    s.apply({"event": "case_started", "case": {"id": "c1"}, "index": 0, "phase": "plain"})

    def call(at, v, book, agree):
        return {"context": 100 + int(at * 40), "k": 1, "reps": 1, "at": at, "verify_ms": [v, v], "draft_ms": [1.0, 2.0],
                "prior_accepted": [0, 1], "bookkeeping_ms": [book, book], "round_ms": [v + 1, v + 2],
                "draft_alone_ms": [1.5], "rollback_ms": {"0": [0.2], "1": [0.1]}, "rollback_mode": "exact",
                "round_drafts_agree": agree, "wall_ms": 50.0}

    s.apply({"event": "components", "case": "c1", "components": call(0.25, 10.0, 0.1, 1.0), "repeat": 0, "when": "before"})
    s.apply({"event": "components", "case": "c1", "components": call(0.75, 12.0, 0.3, 0.5), "repeat": 0, "when": "after"})
    comp = s.cases[0]["components"]
    assert comp["verify_ms"] == [10.0, 10.0, 12.0, 12.0] and comp["bookkeeping_ms"] == [0.1, 0.1, 0.3, 0.3]
    assert comp["prior_accepted"] == [0, 1, 0, 1] and comp["draft_alone_ms"] == [1.5, 1.5]
    assert comp["rollback_ms"] == {"0": [0.2, 0.2], "1": [0.1, 0.1]}
    assert comp["reps"] == 2 and comp["wall_ms"] == 100.0 and comp["context"] == 120
    assert comp["round_drafts_agree"] == pytest.approx(0.75)  # pooled over both calls' rounds
    assert [(c["at"], c["when"], c["context"]) for c in comp["calls"]] == [(0.25, "before", 110), (0.75, "after", 130)]
    # the session round-trips through its file format with the folded record
    again = Session.from_dict(s.to_dict())
    assert again.cases[0]["components"] == comp
