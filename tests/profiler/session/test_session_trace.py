"""The acceptance trace in the session: a ``trace`` event lands on its case, is checked on load, and v1 files load."""

import json
from pathlib import Path

import pytest

from specscope.profiler.session.schema import SessionError, validate
from specscope.profiler.session.session import Session

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "session_v1_demo.json"  # a schema-1 file


def _session():
    s = Session()
    s.apply({"event": "run_started", "config": {}, "environment": {}, "model": {}})
    s.apply({"event": "case_started", "case": {"id": "c1", "content_class": "code"}, "phase": "plain"})
    return s


def test_a_trace_event_lands_on_its_case_and_round_trips():
    s = _session()
    tr = {"drafter": "ngram", "k_max": 3, "A": [3, 2, 1, 0], "tokens": 5, "estimate": False}
    s.apply({"event": "trace", "case": "c1", "trace": tr})
    s.apply({"event": "trace", "case": "nope", "trace": tr})
    assert s.cases[0]["trace"] == tr and s.data["dropped_events"] == 1
    again = Session.from_dict(json.loads(s.to_json()))
    assert again.cases[0]["trace"] == tr


def test_a_malformed_trace_is_refused_with_a_message():
    d = json.loads(_session().to_json())
    d["cases"][0]["trace"] = {"k_max": 2, "A": [5]}
    with pytest.raises(SessionError, match="c1.*between 0 and k_max"):
        validate(d)


def test_version_1_sessions_still_load():
    d = json.loads(FIXTURE.read_text())
    assert d["schema_version"] == 1
    s = Session.load(FIXTURE)
    assert all("trace" not in c for c in s.cases)
