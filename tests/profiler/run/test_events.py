"""The event stream has one schema, one reader and one way of deciding how a run ended."""

from __future__ import annotations

import json

import pytest

from specscope.profiler.run.events import SCHEMA, EventReader, finish_run, parse, required_fields
from specscope.profiler.session.session import Session


def test_parse_keeps_well_formed_events_and_drops_the_rest():
    ok = {"event": "round", "case": "c1", "index": 0, "drafted": [1], "accepted": 1, "emitted": [1, 2], "draft_ms": 1.0,
          "verify_ms": 2.0, "ms": 3.5, "rollback_ms": 0.1, "extra": {}, "kind": "instrumented"}
    assert parse(json.dumps(ok)) == ok
    assert parse(json.dumps(ok).encode()) == ok
    for bad in ("", "   ", "not json", "[1, 2]", json.dumps({"event": "no_such_kind"}),
                json.dumps({k: v for k, v in ok.items() if k != "accepted"})):
        assert parse(bad) is None, bad


def test_every_kind_has_its_required_fields():
    assert required_fields("error") == {"event", "message"}  # its kind is optional ("input" when absent)
    assert {"case", "accepted", "drafted", "emitted", "ms"} <= required_fields("round")
    assert set(SCHEMA) >= {"run_started", "step", "round", "breakdown", "case_done", "run_done", "error"}


def test_the_engines_round_is_the_events_and_the_sessions_core():
    """A round is defined once: the event is the engine's record plus its case, and the session keeps the record's
    core (the same fields, read off the one definition)."""
    from specscope import events
    from specscope.engine_adapter.decode import records
    from specscope.profiler.session.records import ROUND_FIELDS, Round

    assert records.RoundRecord is events.RoundRecord and records.PrefillRecord is events.PrefillRecord
    assert set(events.RoundEvent.__annotations__) == set(events.RoundRecord.__annotations__) | {"case", "pass"}
    assert ROUND_FIELDS == tuple(events.RoundCore.__annotations__)
    assert set(ROUND_FIELDS) < set(Round.__annotations__) and set(ROUND_FIELDS) < set(events.RoundRecord.__annotations__)
    assert not hasattr(__import__("specscope.profiler.run.events", fromlist=["Round"]), "Round")  # no second spelling


def test_reader_joins_partial_lines():
    r = EventReader()
    line = json.dumps({"event": "status", "message": "héllo"}).encode() + b"\n"
    got = list(r.feed(line[:7])) + list(r.feed(line[7:] + b'{"event": "run_done", "status": "complete"}'))
    assert got == [{"event": "status", "message": "héllo"}]
    assert list(r.close()) == [{"event": "run_done", "status": "complete"}]


def running() -> Session:
    s = Session()
    s.apply({"event": "status", "message": "x"})
    s.data["status"] = "running"
    return s


@pytest.mark.parametrize("how, stopped, tail, status, reason", [
    (None, True, "", "incomplete", "stopped by the user"),
    ("killed by SIGKILL", False, "noise", "incomplete", "the worker ended unexpectedly (killed by SIGKILL)"),
    ("exit code 3", False, "Traceback\nValueError: boom\n", "incomplete",
     "the worker ended unexpectedly (exit code 3): ValueError: boom"),
])
def test_finish_run_says_how_the_run_ended(how, stopped, tail, status, reason):
    s = running()
    finish_run(s, how, stopped_by_user=stopped, stderr_tail=tail)
    assert s.status == status and s.data["errors"][-1] == reason


def test_finish_run_keeps_a_failure_and_explains_an_outside_stop():
    s = running()
    s.apply({"event": "error", "message": "bad flag"})
    finish_run(s, None, stopped_by_user=True)
    assert s.status == "failed"
    t = running()
    t.data["status"] = "incomplete"
    finish_run(t, None, stopped_by_user=False)
    assert "asked to stop" in t.data["errors"][-1]


def test_session_keeps_the_kind_of_an_error():
    s = Session()
    s.apply({"event": "error", "message": "ZeroDivisionError: x", "kind": "internal"})
    s.apply({"event": "error", "message": "no such model"})
    assert s.status == "failed"
    assert s.data["internal_errors"] == ["ZeroDivisionError: x"]
    assert Session.from_dict(json.loads(s.to_json())).data["internal_errors"] == ["ZeroDivisionError: x"]


def test_events_for_a_case_that_never_started_are_counted_not_fatal():
    s = Session()
    s.apply({"event": "step", "case": "ghost", "index": 1, "token": 3, "ms": 1.0})
    s.apply({"event": "round", "case": "ghost", "drafted": [1], "accepted": 0, "emitted": [2], "draft_ms": 1.0,
             "verify_ms": 1.0, "rollback_ms": 0.0, "ms": 2.0})
    assert s.data["dropped_events"] == 2 and s.cases == []
