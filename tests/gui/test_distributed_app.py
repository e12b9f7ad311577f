"""Distributed runs in the app: the setup panel's Where, the per-rank view on the Breakdown page, the
communication what-if on the Division page, a rank's fault named by the worker, and a real two-rank run.

The views are checked on a real two-rank session (tests/fixtures/session_ranks2.json: `specscope run --demo
--ranks 2 --cases 2 --max-tokens 16` on a 2-core CPU machine, ring over loopback)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from specscope.errors import SpecscopeError
from specscope.profiler.session.session import Session
from specscope.profiler.analysis.summary import summarize

ROOT = Path(__file__).resolve().parents[2]
RANKS2 = ROOT / "tests" / "fixtures" / "session_ranks2.json"
SINGLE = ROOT / "tests" / "fixtures" / "session_demo.json"
RUN_TIMEOUT_MS = 300_000


def test_setup_panel_where(window, settings):
    from specscope.gui.setup_panel import SetupPanel

    s = window.setup
    assert s.config().ranks is None and s.config().hosts is None  # this machine by default
    s.set_ranks(3)
    cfg = s.config()
    assert (cfg.ranks, cfg.hosts, cfg.hostfile) == (3, None, None)
    s.set_where("hosts")
    s.hosts.setText("mac1.local, mac2.local")
    s.backend.setCurrentText("any")
    cfg = s.config()
    assert cfg.ranks is None and cfg.hosts == ["mac1.local", "mac2.local"] and cfg.backend == "any"
    s.hosts.setText("~/hosts.json")
    assert s.config().hostfile.endswith("hosts.json") and s.config().hosts is None
    s.hosts.setText("")
    with pytest.raises(SpecscopeError, match="at least one host"):  # refused by validate, never by config()
        s.config().validate()
    # saved and restored
    s.hosts.setText("a,b")
    s.save_settings()
    again = SetupPanel(settings)
    assert again.where.currentData() == "hosts" and again.hosts.text() == "a,b" and again.backend.currentText() == "any"
    again.inspector.shutdown()
    s.set_ranks(None)
    assert s.config().ranks is None and s.config().hosts is None


def test_breakdown_page_shows_each_rank(window, qtbot):
    window.open_session(str(RANKS2))
    qtbot.waitUntil(lambda: window.model.last_snapshot.get("status") == "complete", timeout=5000)
    v = window.views["breakdown"]
    window.show_page("breakdown")
    assert v.rank_chart.isVisible() and v.rank_table.isVisible()
    t = v.rank_table
    assert t.rowCount() == 2 and t.item(1, 0).text().startswith("1")
    assert all(t.item(r, c).text() for r in range(2) for c in range(t.columnCount()))
    assert "barrier-timed" in t.item(0, 2).toolTip()
    labels = [v.table.item(r, 0).text() for r in range(v.table.rowCount())]
    assert "Communication (ring, 2 ranks)" in labels
    assert "Distributed: 2 ranks" in v.rulers.text()
    # a session from one machine: no per-rank view
    window.open_session(str(SINGLE))
    qtbot.waitUntil(lambda: not v.rank_table.isVisible(), timeout=5000)
    assert not v.rank_chart.isVisible()


def test_division_page_communication_what_if(window, qtbot):
    from specscope.gui.views.division import measured_communication
    from specscope.profiler.analysis.round_model import RoundModel, communication_what_if

    window.open_session(str(RANKS2))
    qtbot.waitUntil(lambda: window.model.last_snapshot.get("status") == "complete", timeout=5000)
    v = window.views["division"]
    s = window.model.last_snapshot["summary"]
    measured, sd, sv = measured_communication(s)
    assert measured > 0 and 0 < sd <= 1
    assert v.comm_ms.value() == pytest.approx(round(measured, 2))
    v.comm_ms.setValue(2 * measured)
    w = communication_what_if(RoundModel.from_summary(s), s["k"], sd, sv, 2 * measured)
    text = v.comm_result.text()
    assert text.startswith(f"With {2 * measured:.2f} ms of communication per forward, the break-even acceptance is")
    assert (f"α ≥ {w['break_even_p'] * 100:.1f}%" in text) if w["break_even_p"] else ("α = 0" in text or "none" in text)
    window.open_session(str(SINGLE))  # one machine: prefilled with 0, and the what-if still answers
    qtbot.waitUntil(lambda: v.comm_ms.value() == 0.0, timeout=5000)
    assert "break-even acceptance is" in v.comm_result.text()


def test_worker_names_the_rank_that_failed(qtbot, monkeypatch, tmp_path):
    """The app's worker: a launch whose stderr says rank 1 was killed marks the session incomplete with the rank
    named, before ``finished``, and reports a failure even though mlx.launch exits 0."""

    from specscope.gui import run_process as wmod
    from specscope.profiler.run.config import RunConfig
    from specscope.profiler.run.launch import LaunchPlan

    hostfile = tmp_path / "hosts.json"
    hostfile.write_text("{}")
    script = ("import sys\n"
              "for line in ['specscope-rank 0 pid=11 host=x', 'specscope-rank 1 pid=12 host=x',\n"
              "             '[WARN] Node with rank 1 exited with code -9', '[WARN] Node with rank 0 exited with code 4']:\n"
              "    print(line, file=sys.stderr)\n")
    monkeypatch.setattr(wmod, "plan_launch", lambda cfg, spec: LaunchPlan(
        [sys.executable, "-c", script], ["this machine"] * 2, "ring", str(hostfile), {"PATH": "/usr/bin:/bin"}))

    class Owner:
        faults = []

    owner = Owner()
    w = wmod.WorkerProcess()
    w.fault.connect(owner.faults.append)  # the main window connects it to its session model's mark_incomplete
    with qtbot.waitSignal(w.finished, timeout=30_000) as blocker:
        w.start(RunConfig(demo=True, ranks=2))
    code, _, stopped = blocker.args
    assert owner.faults and owner.faults[0].startswith("rank 1 (this machine, pid 12) killed by SIGKILL")
    assert code == 1 and not stopped
    assert not hostfile.exists()  # the plan's hostfile is removed


@pytest.mark.slow  # two ranks from the app (~25 s with its setup); the distributed pages are checked on a stored two-rank session by default
@pytest.mark.timeout(300)
def test_two_rank_run_from_the_app(window, qtbot):
    """The setup panel set to 2 ranks on this machine: a real run to the end, per-rank figures in the session."""
    from specscope.gui.inspector import DEMO

    s = window.setup
    s.set_model(DEMO)
    s.set_drafter("auto")
    s.cases.setValue(1)
    s.max_tokens.setValue(4)
    s.warmup.setValue(0)
    s.repeats.setValue(1)
    s.breakdown.setChecked(True)
    s.set_ranks(2)
    with qtbot.waitSignal(window.run_finished, timeout=RUN_TIMEOUT_MS) as blocker:
        assert window.start_run()
        assert window.worker.plan is not None
    assert blocker.args == ["complete"], window.model.session.data["errors"]
    saved = Session.load(window.session_path)
    assert saved.config["distributed"]["ranks"] == 2
    (case,) = saved.cases
    assert case["spec"]["tokens"] == case["plain"]["tokens"] and len(case["plain"]["tokens"]) == 4
    pr = summarize(saved)["breakdown"]["decode"]["per_rank"]
    assert len(pr["compute_ms"]) == len(pr["communication_ms"]) == 2
    window.model.flush()
    assert window.views["breakdown"].rank_table.rowCount() == 2
