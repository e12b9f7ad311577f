"""``Session.apply`` folds a check's and a capture's result into their records, and a trace into its case; each by its
own small fold (``session.tool_fold``)."""

from __future__ import annotations

from specscope.profiler.session.session import Session


def _started(measure: str) -> Session:
    s = Session()
    s.apply({"event": "run_started", "measure": measure, "config": {}, "environment": {}, "model": {},
             "cases": []})
    return s


def test_a_check_is_kept_under_its_record():
    s = _started("check")
    check = {"what": "model", "report": {"class": "supported"}, "text": "compatibility     supported", "ok": True}
    s.apply({"event": "check", "check": check})
    s.apply({"event": "run_done", "status": "complete"})
    assert s.data["check"] == check and s.status == "complete"
    assert Session.from_dict(s.to_dict()).data["check"] == check  # it survives the file


def test_a_capture_is_kept_with_its_folder():
    s = _started("capture")
    desc = {"k": 2, "captures": [{"name": "decode", "file": "decode.gputrace"}]}
    s.apply({"event": "capture", "capture": desc, "out_dir": "/tmp/traces"})
    assert s.data["capture"] == {"description": desc, "out_dir": "/tmp/traces"}


def test_a_trace_goes_to_its_case_and_one_for_no_case_is_counted():
    s = _started("trace")
    s.apply({"event": "case_started", "case": {"id": "c1", "content_class": "code"}, "index": 0, "phase": "plain"})
    trace = {"drafter": "mtp", "k_max": 2, "A": [1, 0], "tokens": 3, "estimate": False, "cost_ms": {"total_ms": 1.0}}
    s.apply({"event": "trace", "case": "c1", "trace": trace})
    s.apply({"event": "trace", "case": "nobody", "trace": trace})
    assert s.cases[0]["trace"] == trace and s.data["dropped_events"] == 1
