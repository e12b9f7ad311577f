"""Faults behave the same for every measurement: a run, a sweep and each kind of the worker's MEASURE registry
(roofline, tune, the benchmarks, …). One test per kind of fault, parametrised over the measurements:

- a stop request (the app's Stop: SIGINT to the worker) ends it cleanly, ``incomplete``, the reason said;
- bad input raised in the worker is one clear message, the session ``failed``, exit code 2, no traceback;
- a worker killed mid-measurement leaves the session ``incomplete`` with the reason, the start kept;
- SIGTERM to the ``specscope`` command ends it as Ctrl+C does: exit 130, no traceback, no worker left, and the
  session it writes marked ``incomplete``, "stopped by the user".

A measurement added to the registry joins every test; ``TINY`` must say how to run it small (the test of the
list fails until it does). Each setting is the smallest that measures anything (the demo, a few tokens, one case).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from specscope.profiler.run.bench_common import BenchConfig, MemoryPeakConfig
from specscope.profiler.run.config import RunConfig
from specscope.profiler.run.measure_config import RooflineConfig, TuneConfig
from specscope.profiler.run.query_configs import InspectConfig, PreflightConfig
from specscope.profiler.run.tool_configs import CaptureConfig, CheckConfig, TraceConfig
from specscope.profiler.run.measurement import MEASURE
from specscope.profiler.run.runner import run_worker
from specscope.profiler.session.session import Session

from .helpers import ROOT, needs_proc, wait_until

pytestmark = [pytest.mark.timeout(240), needs_proc]

RUN = dict(demo=True, cases=1, max_tokens=8, warmup=0, repeats=1, breakdown=False, component_reps=1)
ROOF = dict(demo=True, positions=3, reps=1, block_reps=0, bandwidth_mib=8.0, matmul_n=64, max_tokens=8,
            num_draft_tokens=1, no_division=True, prompt="Hello there")
TUNE = dict(demo=True, drafters=["ngram"], k_max=2, max_tokens=8, reps=1, beside_reps=1, prompt="Hello there")

SESSION = ROOT / "tests" / "fixtures" / "session_demo.json"  # a saved run, for trace
# measurement -> (its smallest configuration, the same with bad input and the message it must give, the command). The
# command of a run and a sweep measures more than the smallest: SIGTERM comes once the session says running, and on a
# quiet machine the smallest sweep had already finished by then (exit 0: the test would test nothing).
TINY = {
    "run": (RunConfig(**RUN), (RunConfig(**{**RUN, "demo": False}), "no model"),
            ["run", "--demo", "--cases", "1", "--max-tokens", "64", "--warmup", "0", "--repeats", "3", "--no-breakdown"]),
    "sweep": (RunConfig(**RUN, sweep=[0, 64], sweep_passes=1),
              (RunConfig(**{**RUN, "demo": False}, sweep=[0, 64]), "no model"),
              ["sweep", "--demo", "--context", "0,64,256", "--passes", "2", "--cases", "1", "--max-tokens", "64",
               "--warmup", "0", "--repeats", "2", "--no-breakdown"]),
    "roofline": (RooflineConfig(**ROOF), (RooflineConfig(**{**ROOF, "positions": 0}), "--positions must be"),
                 ["roofline", "--demo", "--positions", "3", "--reps", "1", "--block-reps", "0", "--no-division",
                  "--bandwidth-mib", "8", "--matmul-n", "64", "-k", "1"]),
    "tune": (TuneConfig(**TUNE), (TuneConfig(**{**TUNE, "max_tokens": 2}), "--max-tokens must be at least 4"),
             ["tune", "--demo", "--drafters", "ngram", "--k-max", "2", "--max-tokens", "8", "--reps", "1",
              "--beside-reps", "1", "--prompt", "Hello there"]),
    "bench": (BenchConfig(what="rollback", pairs=1, max_tokens=6),
              (BenchConfig(what="rollback", pairs=0), "--pairs must be >= 1"),
              ["bench", "rollback", "--pairs", "1", "--max-tokens", "6"]),
    "memory_peak": (MemoryPeakConfig(max_tokens=6), (MemoryPeakConfig(side="nobody"), "unknown side 'nobody'"),
                    ["bench", "memory", "--pairs", "1", "--max-tokens", "6"]),
    "check": (CheckConfig(demo=True, max_k=4), (CheckConfig(), "give a model"),
              ["check", "--demo", "--max-k", "4"]),
    "trace": (TraceConfig(session=str(SESSION), k_max=2, draws=1), (TraceConfig(session=str(SESSION), k_max=0),
              "--k-max must be between 1 and 16"), ["trace", str(SESSION), "--k-max", "2"]),
    "capture": (CaptureConfig(out_dir="", prompt="Hello there", demo=True, k=1),
                (CaptureConfig(out_dir="", prompt="", demo=True, k=0), "-k must be between 1 and 16"),
                ["capture", "--demo", "-k", "1"]),
    "inspect": (InspectConfig(demo=True), (InspectConfig(), "give a model"), ["inspect", "--demo"]),
    "preflight": (PreflightConfig(demo=True), (PreflightConfig(drafter="draft"), "--drafter draft needs --draft-model"),
                  ["preflight", "--demo"]),
}
KINDS = ["run", "sweep", *MEASURE]
# the kinds each fault is tried on by default (the quickest there, a few seconds each on 2 cores); every other kind
# runs with -m slow (a run and a sweep open the engine before they start, a tune confirms, a roofline probes)
FAST = {"stop": {"bench", "memory_peak"}, "bad_input": set(KINDS),  # refused before MLX loads: under a second each
        "kill": {"roofline"}, "sigterm": {"bench", "memory_peak", "roofline"}}


# kinds a fault cannot be tried on here, and why (bad input is tried on every kind)
ELSEWHERE = {
    "trace": "its session is the traced run's, not its own: tests/profiler/cli/test_worker_commands.py stops "
             "and kills a trace and checks what it keeps",
    "capture": "a capture is refused before it measures where there is no Metal GPU (tests/profiler/cli/test_gpu_trace.py "
               "runs its measurement with a fake Metal)",
    **dict.fromkeys(("inspect", "preflight"), "the app's live lines, one-shot queries with no session: `specscope inspect` "
                    "and `preflight` answer in the command's own process (no worker to SIGTERM), and the app drops a "
                    "query by killing its worker (tests/gui/test_one_shot.py)")}


# a fault and a measurement a default test already tries, with more checks: run once, there
TRIED_BY_DEFAULT = {
    ("stop", "run"): "the app's Stop mid-run: tests/gui/test_app.py::test_run_demo_to_completion_then_stop_mid_run",
    ("kill", "run"): "tests/reliability/test_faults.py::test_worker_sigkill_mid_run_keeps_everything"}


# a known failure, open: kept running (a pass is reported too), not hidden
# (none now: SIGTERM to `specscope sweep` or `run` exiting 0 "complete" was the reader's main thread blocked in a read
# of the child's stdout while the signal went to another thread, its handler run only at the child's next line;
# reproduced under load, 2 of 4 runs, and fixed in ``pump.drain``: 0 of 4, sweep 3 of 3 passed, 2026-12-07)
KNOWN_FAILING: dict[tuple[str, str], str] = {}


def kinds(fault: str):
    def param(k: str):
        if fault != "bad_input" and k in ELSEWHERE:
            return pytest.param(k, marks=pytest.mark.skip(reason=ELSEWHERE[k]))
        if (fault, k) in TRIED_BY_DEFAULT:
            return pytest.param(k, marks=pytest.mark.skip(reason=TRIED_BY_DEFAULT[fault, k]))
        if (fault, k) in KNOWN_FAILING:
            return pytest.param(k, marks=[pytest.mark.slow, pytest.mark.xfail(reason=KNOWN_FAILING[fault, k],
                                                                              strict=False)])
        return k if k in FAST[fault] else pytest.param(k, marks=pytest.mark.slow)

    return [param(k) for k in KINDS]


def test_every_measurement_has_a_tiny_setting():
    assert sorted(TINY) == sorted(KINDS), "a measurement of the registry needs its smallest setting in TINY"


def _measure(kind: str, cfg, at_start):
    """``cfg`` in a worker; ``at_start(pid)`` once its run_started has arrived."""
    state: dict = {"pid": None, "done": False}

    def on_event(ev, _session):
        if ev["event"] == "run_started" and not state["done"]:
            state["done"] = True
            at_start(state["pid"])

    res = run_worker(cfg, on_event=on_event, on_start=lambda p: state.update(pid=p.pid))
    assert state["done"], (kind, res.session.data["errors"], res.stderr[-2000:])
    assert res.session.data["measure"] == kind  # one run_started shape: what it measures, named as the registry does
    return res


@pytest.mark.parametrize("kind", kinds("stop"))
def test_a_stop_request_ends_it_cleanly(kind):
    res = _measure(kind, TINY[kind][0], lambda pid: os.kill(pid, signal.SIGINT))  # the app's Stop
    s = res.session
    assert res.returncode == 0 and s.status == "incomplete", (s.status, s.data["errors"], res.stderr[-2000:])
    assert s.data["errors"] == ["the worker was asked to stop (SIGINT/SIGTERM from outside specscope)"]


@pytest.mark.parametrize("kind", kinds("bad_input"))
def test_bad_input_is_one_clear_message(kind):
    cfg, needle = TINY[kind][1]
    res = run_worker(cfg)
    s = res.session
    assert res.returncode == 2 and s.status == "failed", (s.status, s.data["errors"], res.stderr[-2000:])
    assert len(s.data["errors"]) == 1 and needle in s.data["errors"][0], s.data["errors"]
    assert "internal_errors" not in s.data and "Traceback" not in res.stderr


@pytest.mark.parametrize("kind", kinds("kill"))
def test_a_killed_worker_keeps_what_arrived(kind):
    res = _measure(kind, TINY[kind][0], lambda pid: os.kill(pid, signal.SIGKILL))
    s = res.session
    assert res.returncode == -signal.SIGKILL and s.status == "incomplete"
    assert s.data["errors"][-1] == "the worker ended unexpectedly (killed by SIGKILL)"
    assert s.data.get("started_at")  # what arrived before the kill is kept


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def _is_worker(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"specscope.profiler.run.worker" in f.read()
    except OSError:
        return False


@pytest.mark.parametrize("kind", kinds("sigterm"))
def test_sigterm_to_the_command_stops_it_as_ctrl_c_does(kind, tmp_path):
    argv = TINY[kind][2]
    out = tmp_path / "s.json"
    keeps = argv[0] != "bench"  # bench writes no session: its exit and its workers are what there is to check
    cmd = [sys.executable, "-m", "specscope.profiler.cli.main", *argv, *(["-o", str(out)] if keeps else [])]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        # the worker is measuring once the session says running (a run's autosave), or once it is there (bench)
        started = wait_until(lambda: [c for c in _children(p.pid) if _is_worker(c)] and (
            not keeps or (out.is_file() and Session.load(out).status == "running")), timeout=120, interval=0.05)
        assert started, "the worker never started"
        workers = [c for c in _children(p.pid) if _is_worker(c)]
        waited = time.monotonic() - t0
        ended_first = p.poll()  # the command ended before the signal: the signal was never sent
        p.send_signal(signal.SIGTERM)
        stdout, stderr = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    # what the failures in a fresh-clone CI (exit 0, complete) need to be told apart: a late signal or an ignored one
    said = Session.load(out) if keeps and out.is_file() else None
    assert p.returncode == 130, (p.returncode, f"ended before the signal: {ended_first}", f"signal after {waited:.1f} s",
                                 f"ended {time.monotonic() - t0:.1f} s after the start",
                                 said and (said.status, said.data["errors"]), stderr[-3000:])
    assert "Traceback" not in stderr, stderr
    assert wait_until(lambda: not any(os.path.exists(f"/proc/{w}") and _is_worker(w) for w in workers), timeout=10)
    if keeps:
        s = Session.load(out)
        assert s.status == "incomplete" and "stopped by the user" in s.data["errors"], s.data["errors"]
