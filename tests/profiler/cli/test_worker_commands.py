"""``check``, ``trace`` and ``capture`` run their measurement in the worker (``run.measurement``), as ``run``,
``roofline`` and ``tune`` do: the CLI's process never imports MLX, the session says which measurement ran, and a
stop (SIGINT) keeps what was measured in a session marked as stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specscope.profiler.session.session import Session

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "tests" / "fixtures" / "session_demo.json"
# the command in a process of its own, saying at the end (on stderr) whether that process imported MLX
CLI = ("import json, sys\nfrom specscope.profiler.cli.main import main\nrc = main(sys.argv[1:])\n"
       "print(json.dumps({'rc': rc, 'mlx': 'mlx.core' in sys.modules}), file=sys.stderr)\n")


def specscope_cli(*args: str) -> tuple[dict, subprocess.CompletedProcess]:
    r = subprocess.run([sys.executable, "-c", CLI, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    return json.loads(r.stderr.strip().splitlines()[-1]), r


def one_case_session(tmp_path: Path) -> Path:
    d = json.loads(DEMO.read_text())
    d["cases"] = d["cases"][2:]  # one case (code) keeps it short
    src = tmp_path / "one.json"
    src.write_text(json.dumps(d))
    return src


def test_check_runs_in_the_worker_and_keeps_its_session(tmp_path):
    out = tmp_path / "check.json"
    said, r = specscope_cli("check", "--demo", "--max-k", "1", "--json", "-o", str(out))
    assert said == {"rc": 0, "mlx": False}, r.stderr  # the model was loaded and checked in the worker
    s = Session.load(out)
    assert s.status == "complete" and s.data["measure"] == "check" and s.data["measurement"]["max_k"] == 1
    check = s.data["check"]
    assert check["what"] == "model" and check["ok"] and "compatibility     supported" in check["text"]
    assert json.loads(r.stdout) == check["report"]  # what it printed is what the session holds


def test_trace_runs_in_the_worker(tmp_path):
    src, out = one_case_session(tmp_path), tmp_path / "traced.json"
    said, r = specscope_cli("trace", str(src), "-o", str(out), "--k-max", "2", "--json")
    assert said == {"rc": 0, "mlx": False}, r.stderr  # the engine opened in the worker, not here
    c = Session.load(out).cases[0]
    assert c["trace"]["k_max"] == 2 and len(c["trace"]["A"]) == len(c["plain"]["tokens"]) - 1
    assert json.loads(r.stdout)["cases"][0]["case"] == c["id"]


def test_a_bad_check_is_refused_before_a_worker_starts(tmp_path, capsys, monkeypatch):
    from specscope.profiler.cli import worker_measure
    from specscope.profiler.cli.main import main

    monkeypatch.setattr(worker_measure, "run_worker", lambda *a, **k: pytest.fail("a worker was started"))
    for args, msg in ((["--demo", "--drafter", "auto"], "--drafter auto is for check --engine"),
                      (["--demo", "--engine", "mlx-lm", "--temp", "0"], "give --temp above 0"),
                      ([], "give a model")):
        assert main(["check", *args]) == 2
        err = capsys.readouterr().err
        assert err.startswith("specscope: error:") and msg in err


def _worker_started(cli: subprocess.Popen, timeout: float = 120) -> int:
    """Wait until the CLI has started its worker (a child running ``specscope.profiler.run.worker``); its pid."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in os.listdir("/proc"):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read()
            except (OSError, ValueError, IndexError):
                continue
            if ppid == cli.pid and b"specscope.profiler.run.worker" in cmd:
                return int(pid)
        time.sleep(0.1)
    raise AssertionError("the worker never started")


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the worker through /proc")
@pytest.mark.parametrize("fault", ["SIGINT", "worker killed"])
def test_a_stopped_or_dead_trace_keeps_a_session_that_says_so(tmp_path, fault):
    """Ctrl+C (SIGINT) to ``trace``: exit 130, the session kept and its trace marked stopped by the user. The worker
    killed: exit 1, the session kept and saying the worker ended unexpectedly. (A trace's session is the traced run's,
    so the generic fault tests, tests/reliability/test_measurement_faults.py, cannot run it; they stop, SIGTERM and kill
    ``check`` with every other measurement.)"""
    out = tmp_path / "out.json"
    args = ["trace", str(one_case_session(tmp_path)), "-o", str(out), "--k-max", "16", "--draws", "64"]
    # SIGINT at its default, as in a terminal: a run under nohup or a shell without job control (a background CI job)
    # starts its children with SIGINT ignored, and the command then never saw the Ctrl+C (exit 0, the trace finished)
    cli = subprocess.Popen([sys.executable, "-m", "specscope.profiler.cli.main", *args], cwd=ROOT,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    worker = _worker_started(cli)
    time.sleep(2.0)  # into the measurement (MLX imported, the model loading or measured)
    if fault == "worker killed":
        os.kill(worker, signal.SIGKILL)
    else:
        cli.send_signal(signal.SIGINT)
    _, err = cli.communicate(timeout=120)
    why = "the worker ended unexpectedly (killed by SIGKILL)" if fault == "worker killed" else "stopped by the user"
    assert cli.returncode == (1 if fault == "worker killed" else 130), err
    assert why in err and "Traceback" not in err
    s = Session.load(out)
    assert why in s.data["errors"][-1]
    # the traced session is the run's (complete); the trace that did not finish says so in its errors
    assert s.data["errors"][-1].startswith("trace incomplete")
