"""The pre-flight in a run (profiler.run.protocol.start_run): one ``preflight`` event after run_started, kept whole in
the session; a failed pre-flight stops the run before anything is measured unless ``ignore_preflight``.

The machine is fed through the readings (engine_adapter.preflight.take_readings is replaced by recorded readings), so
nothing here depends on this machine's state; the engine is the stand-in of test_protocol (same facade, no model)."""

from __future__ import annotations

import pytest

from specscope.engine_adapter import preflight
from specscope.errors import SpecscopeError
from specscope.profiler.run import protocol
from specscope.profiler.run.config import RunConfig
from specscope.profiler.run.events import SCHEMA, parse
from specscope.profiler.session.session import Session

from test_protocol import StubEngine  # noqa: E402 - the stand-in engine, from the module beside this one

# A Mac with Low Power Mode on: the pmset line verbatim from a public repository's measurement notes (see
# tests/engine_adapter/test_preflight.py); the device info is the Apple M1's recorded there.
MAC_LPM = {"system": "Darwin", "mlx_device": "Device(gpu, 0)", "versions": {"mlx": "0.30.4", "mlx-lm": "0.32.2"},
           "device_info": {"resource_limit": 499000, "max_buffer_length": 8589934592, "architecture": "applegpu_g13g",
                           "memory_size": 17179869184, "max_recommended_working_set_size": 11453251584,
                           "device_name": "Apple M1"},
           "outputs": {"pmset -g": " lowpowermode         1\n"}, "files": {}}
LINUX_CALM = {"system": "Linux", "mlx_device": "Device(cpu, 0)", "versions": {"mlx": "0.32.4", "mlx-lm": "0.32.2"},
              "device_info": {}, "cpu_count": 8, "outputs": {},
              "files": {"/proc/loadavg": "0.10 0.10 0.10 1/100 1\n", "/proc/meminfo": "MemAvailable: 16000000 kB\n"}}


def run(monkeypatch, readings: dict, **kw):
    monkeypatch.setattr(preflight, "take_readings", lambda reader=None: dict(readings))
    monkeypatch.setattr(protocol, "open_engine", lambda cfg, emit: StubEngine())
    s, evs = Session(), []

    def emit(ev):
        evs.append(ev)
        s.apply(ev)

    cfg = RunConfig(demo=True, cases=1, max_tokens=5, warmup=0, breakdown=False, **kw)
    try:
        status = protocol.run_protocol(cfg, emit)
    except SpecscopeError as exc:  # as the worker reports it
        emit({"event": "error", "message": str(exc), "kind": "input"})
        return s, evs, None
    s.apply({"event": "run_done", "status": status})
    return s, evs, status


def test_the_session_carries_the_preflight(monkeypatch):
    s, evs, status = run(monkeypatch, LINUX_CALM)
    assert status == "complete"
    kinds = [e["event"] for e in evs]
    assert kinds.index("run_started") < kinds.index("preflight") < kinds.index("case_started")
    pf = s.data["preflight"]
    assert pf["status"] == "pass" and pf["system"] == "Linux" and not pf["ignored"]
    assert {c["name"] for c in pf["checks"]} >= {"MLX backend and device", "other processes' load"}
    assert all(set(c) == {"name", "status", "evidence", "fix"} for c in pf["checks"])
    from specscope.profiler.session import records  # the record declares every key the event carries

    assert set(pf) <= set(records.Preflight.__annotations__)
    assert all(set(c) == set(records.PreflightCheck.__annotations__) for c in pf["checks"])
    assert parse(__import__("json").dumps(evs[kinds.index("preflight")])) is not None  # a well-formed event
    assert "preflight" in SCHEMA


def test_a_failed_preflight_stops_the_run_before_measuring(monkeypatch):
    s, evs, status = run(monkeypatch, MAC_LPM)
    assert status is None and s.status == "failed"
    assert not any(e["event"] in ("case_started", "probe", "prefill") for e in evs)
    assert s.data["preflight"]["status"] == "fail"
    assert "Low Power Mode" in s.data["errors"][-1] and "--ignore-preflight" in s.data["errors"][-1]


def test_insisting_runs_past_a_failed_preflight_and_says_so(monkeypatch):
    s, evs, status = run(monkeypatch, MAC_LPM, ignore_preflight=True)
    assert status == "complete" and s.status == "complete"
    assert s.data["preflight"]["status"] == "fail" and s.data["preflight"]["ignored"] is True
    assert any(e["event"] == "case_started" for e in evs)


@pytest.mark.parametrize("readings", [LINUX_CALM])
def test_a_session_file_round_trips_the_preflight(monkeypatch, tmp_path, readings):
    s, _, _ = run(monkeypatch, readings)
    s.save(tmp_path / "s.json")
    assert Session.load(tmp_path / "s.json").data["preflight"] == s.data["preflight"]
