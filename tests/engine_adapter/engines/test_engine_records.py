"""A plug-in engine's records are checked where the seam reads them: a round missing a field, or with a field of the
wrong type, ends the run with a clear ``error`` event naming the engine and the field (kind "input": no traceback),
never a round dropped silently or a KeyError further on."""

from __future__ import annotations

import io
import json
import signal
import sys

import pytest

from specscope.engine_adapter.decode.records import PrefillRecord
from specscope.engine_adapter.engines import registry
from specscope.engine_adapter.engines.seam import SpeculativeEngine, check_record
from specscope.errors import SpecscopeError
from specscope.profiler.run import worker
from specscope.profiler.run.config import RunConfig


def _round(**change):
    rec = dict(event="round", index=0, drafted=[5, 6], accepted=1, emitted=[5, 7], draft_ms=None, verify_ms=None,
               rollback_ms=None, ms=1.5, extra={}, kind="end_to_end")
    rec.update(change)
    return {k: v for k, v in rec.items() if v is not _GONE}


_GONE = object()


class _Tiny(SpeculativeEngine):
    """Echoes a fixed round after the prefill: no model work, only the records."""
    reports = frozenset({"ms"})
    bad: dict = {}

    def speculative(self, prompt, max_tokens, sampling):
        yield PrefillRecord(event="prefill", n_prompt=len(prompt), token=5, ms=1.0)
        yield _round(**self.bad)


class LacksAccepted(_Tiny):
    name = "lacks-accepted"
    bad = {"accepted": _GONE}


class StringMs(_Tiny):
    name = "string-ms"
    bad = {"ms": "1.5"}


def _worker_events(cfg: RunConfig, monkeypatch) -> tuple[int, list[dict]]:
    """The worker's main in this process (so the plug-in registered here is seen), its event lines read back."""
    out = io.StringIO()
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(sys, "stdout", out)
    try:
        rc = worker.main([json.dumps(cfg.to_dict())])
    finally:
        signal.signal(signal.SIGINT, handlers[0])
        signal.signal(signal.SIGTERM, handlers[1])
        monkeypatch.setattr(sys, "stdout", sys.__stdout__)
    return rc, [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]


@pytest.mark.parametrize("engine, field, said", [
    (LacksAccepted, "accepted", "has no field 'accepted'"),
    # the same seam with another fault (~5 s a worker run): by default the check's every fault kind is tested below
    pytest.param(StringMs, "ms", "field 'ms' is '1.5' (str), not float", marks=pytest.mark.slow)])
def test_a_plugin_round_missing_or_mistyping_a_field_is_a_clear_error(model_dirs, monkeypatch, engine, field, said):
    monkeypatch.setitem(registry.BUILT_IN, engine.name, f"{__name__}:{engine.__name__}")
    cfg = RunConfig(model=str(model_dirs["dense"]), draft_model=str(model_dirs["draft"]), drafter="draft",
                    engine=engine.name, cases=1, max_tokens=8, warmup=0, breakdown=False, component_reps=1,
                    ignore_preflight=True, repeats=1)
    rc, events = _worker_events(cfg, monkeypatch)
    errors = [ev for ev in events if ev["event"] == "error"]
    assert rc == 2 and len(errors) == 1, events[-3:]
    (err,) = errors
    assert err["kind"] == "input" and f"engine {engine.name}" in err["message"] and said in err["message"]
    assert not any(ev["event"] == "round" for ev in events)  # nothing half-checked went out


def test_the_check_reads_the_records_fields_and_types():
    check_record(_round(), "e")
    check_record(_round(ms=2, draft_ms=0.5), "e")  # an int is a float's value; None where not timed
    for bad, said in [(_round(kind="sometimes"), "field 'kind'"), (_round(drafted=[1.5]), "field 'drafted'"),
                      (_round(accepted=True), "field 'accepted'"), (_round(extra=_GONE), "no field 'extra'"),
                      ({"event": "step"}, "event is 'step'"), ([1, 2], "yielded a list")]:
        with pytest.raises(SpecscopeError, match=said):
            check_record(bad, "e")
