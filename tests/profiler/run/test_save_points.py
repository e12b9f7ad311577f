"""Save points: the reader writes the session between measurements, never beside one (``events.SAVE_POINTS``).

A save beside a measured pass slows it (a busy process next to the worker on a 2-core machine made its rounds 29-35%
slower), so at a save point the worker waits until its reader says the session is written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time

from specscope.profiler.run import events
from specscope.profiler.run.pump import EventPump, worker_env
from specscope.profiler.run.worker import wait_for_save


def test_a_worker_at_a_save_point_goes_on_only_after_the_reader_has_saved():
    r, w = os.pipe()
    order: list[str] = []

    def reader() -> None:
        time.sleep(0.3)  # the save takes a while; the worker must not go on meanwhile
        order.append("saved")
        os.write(w, (events.SAVED + "\n").encode())

    t = threading.Thread(target=reader)
    t.start()
    keep_waiting = wait_for_save(r, timeout=30)
    order.append("worker goes on")
    t.join()
    os.close(r), os.close(w)
    assert order == ["saved", "worker goes on"] and keep_waiting


def test_a_reader_that_closes_the_pipe_is_not_waited_for_again_and_a_slow_one_is():
    r, w = os.pipe()
    os.close(w)
    assert wait_for_save(r, timeout=30) is False  # EOF: nobody will answer
    os.close(r)
    r, w = os.pipe()
    assert wait_for_save(r, timeout=0.05) is True  # no answer yet: go on, but wait at the next save point
    os.close(r), os.close(w)


def test_only_a_reader_that_answers_asks_the_worker_to_wait():
    os.environ[events.SAVE_ACK_ENV] = "1"  # inherited from an outer run: not passed on unless asked
    try:
        assert events.SAVE_ACK_ENV not in worker_env()
        assert worker_env(save_ack=True)[events.SAVE_ACK_ENV] == "1"
    finally:
        del os.environ[events.SAVE_ACK_ENV]


def test_the_events_between_save_points_are_not_saved_beside_the_measurement():
    """The events a measured pass and its component calls emit are not save points: nothing is written while the
    worker measures; the case's end is one, and so is every event after which a worker stops for something else."""
    assert not {"round", "step", "components", "breakdown", "trace", "divergence", "repeat_done", "case_started",
                "sensors"} & events.SAVE_POINTS
    assert {"case_done", "preflight", "sweep_visit_done"} <= events.SAVE_POINTS <= events.AUTOSAVE_EVENTS
    assert events.AUTOSAVE_SECONDS >= 10 * 2.0  # a run's cases end every few seconds: the clock save is a fallback


CHILD = textwrap.dedent("""
    import json, sys, time
    from specscope.profiler.run.worker import wait_for_save
    path = sys.argv[1]
    print(json.dumps({"event": "status", "message": "measuring"}), flush=True)
    print(json.dumps({"event": "preflight", "preflight": {"marker": "written-before-the-worker-went-on"}}), flush=True)
    t0 = time.monotonic()
    wait_for_save(timeout=60)
    answered = time.monotonic() - t0 < 50  # an answer, not the timeout
    on_disk = "written-before-the-worker-went-on" in open(path, encoding="utf-8").read()
    print(json.dumps({"event": "status", "message": f"answered {answered}, on disk {on_disk}"}), flush=True)
""")


class SlowSave(EventPump):
    """A save that takes a while, as a large session's does: an answer sent before it would be caught."""

    def save(self) -> None:
        time.sleep(0.3)
        super().save()


def test_the_pump_writes_the_session_before_it_lets_the_worker_go_on(tmp_path):
    out = tmp_path / "s.json"
    seen: list[str] = []
    pump = SlowSave(str(out), lambda ev, _s: seen.append(ev.get("message", ev["event"])))
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=worker_env(save_ack=True), text=True, bufsize=1)
    rc, _, err = pump.drain(proc, stop=proc.terminate, kill=proc.kill, save_ack=True)
    assert rc == 0, err
    assert seen == ["measuring", "preflight", "answered True, on disk True"]
    assert json.loads(out.read_text(encoding="utf-8"))["preflight"]["marker"] == "written-before-the-worker-went-on"


def test_the_app_answers_each_save_point_after_its_window_has_handled_it(qtbot, monkeypatch, tmp_path):
    """The app's worker process: a save point's event reaches the window (which saves it) before the worker is told
    to go on; the worker is started asking for the answers."""
    from specscope.gui import run_process as wmod
    from specscope.profiler.run.config import RunConfig

    out = tmp_path / "s.json"
    monkeypatch.setattr(wmod, "worker_command", lambda cfg: [sys.executable, "-c", CHILD, str(out)])
    w = wmod.WorkerProcess()
    seen: list[str] = []

    def window_saves(ev) -> None:  # as the window's session model does at a save point (a slow save)
        seen.append(ev.get("message", ev["event"]))
        if ev["event"] in events.SAVE_POINTS:
            time.sleep(0.3)
            out.write_text(json.dumps({"preflight": ev["preflight"]}), encoding="utf-8")

    w.run_event.connect(window_saves)
    with qtbot.waitSignal(w.finished, timeout=60_000) as blocker:
        w.start(RunConfig(demo=True))
    assert blocker.args[0] == 0, blocker.args[1]
    assert seen == ["measuring", "preflight", "answered True, on disk True"]
