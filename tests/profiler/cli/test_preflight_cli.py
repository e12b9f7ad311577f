"""``specscope preflight`` and the pre-flight of ``specscope run`` through the real worker, with the machine's readings
recorded (SPECSCOPE_PREFLIGHT_READINGS / --readings): exit 0 for pass or warn, 1 for a fail, 2 for bad input (one
error line, no traceback); a run stops on a failed pre-flight unless --ignore-preflight."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specscope.profiler.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
# An Apple M1 with Low Power Mode on (device info and pmset line recorded on real Macs; sources in
# tests/engine_adapter/test_preflight.py)
MAC_LPM = {"system": "Darwin", "mlx_device": "Device(gpu, 0)", "versions": {"mlx": "0.30.4", "mlx-lm": "0.32.2"},
           "device_info": {"resource_limit": 499000, "max_buffer_length": 8589934592, "architecture": "applegpu_g13g",
                           "memory_size": 17179869184, "max_recommended_working_set_size": 11453251584,
                           "device_name": "Apple M1"},
           "outputs": {"pmset -g": " lowpowermode         1\n",
                       "sysctl vm.swapusage": "vm.swapusage: total = 0.00M  used = 0.00M  free = 0.00M  (encrypted)\n"},
           "files": {}}


@pytest.fixture
def lpm(tmp_path) -> Path:
    p = tmp_path / "readings.json"
    p.write_text(json.dumps(MAC_LPM))
    return p


def test_preflight_on_this_machine_exits_0_or_1_and_prints_every_check(capsys, monkeypatch):
    monkeypatch.delenv("SPECSCOPE_PREFLIGHT_READINGS", raising=False)  # this machine, not the suite's calm recording
    rc = main(["preflight", "--demo", "--json"])
    rep = json.loads(capsys.readouterr().out)
    assert rc == (1 if rep["status"] == "fail" else 0)
    assert rep["checks"] and all(set(c) == {"name", "status", "evidence", "fix"} for c in rep["checks"])
    assert [p["part"] for p in rep["parts"]] == ["target", "MTP head"] and rep["model_bytes"] > 0
    assert rep["readings_from"] is None


def test_recorded_readings_say_they_are_not_this_machines(capsys):
    """The suite's runs read a recorded calm machine (tests/conftest.py); the report says so."""
    assert main(["preflight"]) == 0
    out = capsys.readouterr().out
    assert "preflight_calm_linux.json, not this machine's" in out.splitlines()[0]


def test_recorded_readings_a_fail_exits_1_with_its_fix(lpm, capsys):
    assert main(["preflight", "--readings", str(lpm)]) == 1
    out = capsys.readouterr().out
    assert "FAIL        Low Power Mode" in out and "fix: turn it off" in out
    assert "swap in use: vm.swapusage: 0 MB used" in out


def test_save_readings_then_check_them(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("SPECSCOPE_PREFLIGHT_READINGS", raising=False)
    saved = tmp_path / "mine.json"
    main(["preflight", "--save-readings", str(saved)])
    first = capsys.readouterr().out
    assert json.loads(saved.read_text())["system"]
    main(["preflight", "--readings", str(saved)])
    again = capsys.readouterr().out.splitlines()
    assert again[1:] == first.splitlines()[1:] and f"readings recorded in {saved}" in again[0]


@pytest.mark.parametrize("args, message", [
    (["preflight", "--model", "/no/such/model"], "does not exist"),
    (["preflight", "--readings", "/no/such/readings.json"], "cannot read pre-flight readings"),
    (["preflight", "--drafter", "draft"], "--drafter draft needs --draft-model"),
])
def test_bad_input_exits_2_without_a_traceback(args, message, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("specscope: error: ") and message in err and "Traceback" not in err


def test_bad_readings_file_exits_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"nothing": 1}')
    assert main(["preflight", "--readings", str(bad)]) == 2
    assert "not a pre-flight readings file" in capsys.readouterr().err


def specscope(*args, env=None):
    return subprocess.run([sys.executable, "-m", "specscope.profiler.cli.main", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, env={**os.environ, **(env or {})})


def test_run_stops_on_a_failed_preflight_unless_insisted(lpm, tmp_path):
    out = tmp_path / "s.json"
    env = {"SPECSCOPE_PREFLIGHT_READINGS": str(lpm)}
    r = specscope("run", "--demo", "--cases", "1", "--max-tokens", "4", "--warmup", "0", "--no-breakdown",
                  "-o", str(out), env=env)
    assert r.returncode == 2, r.stderr
    assert "FAIL        Low Power Mode" in r.stderr and "pre-flight failed (Low Power Mode" in r.stderr
    assert "Traceback" not in r.stderr
    s = json.loads(out.read_text())
    assert s["status"] == "failed" and s["preflight"]["status"] == "fail" and not s["cases"]

    r = specscope("run", "--demo", "--cases", "1", "--max-tokens", "4", "--warmup", "0", "--no-breakdown",
                  "--component-reps", "1", "--ignore-preflight", "-o", str(out), "--force", env=env)
    assert r.returncode == 0, r.stderr
    assert "--ignore-preflight: running anyway" in r.stderr
    s = json.loads(out.read_text())
    assert s["status"] == "complete" and s["preflight"]["ignored"] is True and s["cases"]
