"""The Verify cost, Tune and Context pages measure as the Run button runs: their config in the worker (``RunProcess``),
the events folded into a new session by ``Session.apply`` and autosaved, Stop keeping what was measured, and one
measurement at a time (every other start button disabled, its tooltip saying why). Demo model, tiny settings."""

from __future__ import annotations

import pytest

from specscope.profiler.session.session import Session

RUN_TIMEOUT_MS = 240_000
pytestmark = pytest.mark.timeout(420)

# each page's measurement made small: (page, its options, fields of its config set over the page's)
TINY = {
    "verify_cost": {"reps": 1, "block_reps": 1, "max_tokens": 8, "bandwidth_mib": 16.0, "matmul_n": 64},
    "tune": {"reps": 1, "drafters": ["ngram"], "max_tokens": 8, "beside_reps": 1},
    "context": {"sweep_passes": 1, "cases": 1, "max_tokens": 8, "warmup": 0, "repeats": 1, "breakdown": False},
}


def _demo(window, small_demo_run):
    small_demo_run(window, max_tokens=8, cases=1, breakdown=False)


def _events(window) -> list[dict]:
    seen: list[dict] = []
    window.worker.run_event.connect(seen.append)
    return seen


def _measure(window, qtbot, key: str) -> list[dict]:
    """Press page ``key``'s start button and wait for its session to end; the events the worker sent."""
    page = window.views[key]
    page.overrides = TINY[key]
    seen = _events(window)
    with qtbot.waitSignal(window.run_finished, timeout=RUN_TIMEOUT_MS) as blocker:
        page.start_btn.click()
        assert window.is_running() and window.tabs.currentWidget() is page
        # one measurement at a time: Run and the other pages' buttons say why they are disabled; this page's Stop is on
        assert not window.run_btn.isEnabled() and "is in progress" in window.run_btn.toolTip()
        assert not page.start_btn.isEnabled() and page.stop_btn.isEnabled()
    assert blocker.args == ["complete"], window.model.session.data["errors"]
    assert page.start_btn.isEnabled() and not page.stop_btn.isEnabled() and window.run_btn.isEnabled()
    window.model.flush()
    return seen


def test_verify_cost_measures_in_the_worker_into_a_session_of_its_own(window, qtbot, small_demo_run):
    _demo(window, small_demo_run)
    window.views["tune"]  # built before: its button is disabled while Verify cost measures
    vc = window.verify_cost
    vc.positions.setValue(3)
    page_tips = []
    window.worker.run_event.connect(lambda ev: page_tips.append(window.tune.start_btn.toolTip()) if len(page_tips) < 1 else None)
    seen = _measure(window, qtbot, "verify_cost")
    assert page_tips and "verify cost measurement is in progress" in page_tips[0]
    kinds = [ev["event"] for ev in seen]
    assert kinds[0] == "run_started" and kinds[-1] == "run_done" and "status" in kinds
    assert any(ev["event"] == "roofline" and ev.get("partial") for ev in seen)  # the curve drawn before the end
    roof = window.model.session.data["roofline"]  # folded by Session.apply from the worker's events
    assert [p["positions"] for p in roof["curve"]] == [1, 2, 3]
    saved = Session.load(window.session_path)  # the autosaved session file holds it
    assert saved.status == "complete" and [p["positions"] for p in saved.data["roofline"]["curve"]] == [1, 2, 3]
    assert saved.data["measure"] == "roofline"
    assert vc.curve.measured.getData()[0].tolist() == [1, 2, 3] and vc.headline.text() == roof["headline"]
    assert "complete" in vc.status.text() and "complete" in window.run_status.text()
    assert window.sb_status.text() == "session: complete · verify cost"
    assert window.verdict.headline.text().startswith("A verify cost measurement (complete): no run here, so no verdict")
    window.show_page("live")
    window.open_session(window.session_path)  # the session opens on its page, filled
    window.model.flush()
    assert window.tabs.currentWidget() is vc and vc.curve.measured.getData()[0].tolist() == [1, 2, 3]


def test_stopping_a_verify_cost_measurement_keeps_what_was_measured(window, qtbot, small_demo_run):
    _demo(window, small_demo_run)
    vc = window.verify_cost
    vc.positions.setValue(3)
    vc.overrides = {**TINY["verify_cost"], "block_reps": 4, "bandwidth_mib": 256.0, "max_tokens": 64}
    vc.start_btn.click()
    qtbot.waitUntil(lambda: "roofline" in window.model.session.data, timeout=RUN_TIMEOUT_MS)  # the curve, partial
    with qtbot.waitSignal(window.run_finished, timeout=60_000) as blocker:
        vc.stop_btn.click()
    assert blocker.args == ["incomplete"]
    assert not window.is_running() and vc.start_btn.isEnabled()
    saved = Session.load(window.session_path)
    assert saved.status == "incomplete" and "stopped by the user" in saved.data["errors"]
    assert [p["positions"] for p in saved.data["roofline"]["curve"]] == [1, 2, 3]
    window.model.flush()
    assert vc.curve.measured.getData()[0].tolist() == [1, 2, 3]


@pytest.mark.slow  # ~20 s; the path is Verify cost's (tested by default), Tune's config: test_dflash_pages
def test_tune_measures_in_the_worker_into_a_session_of_its_own(window, qtbot, small_demo_run):
    _demo(window, small_demo_run)
    tv = window.tune
    tv.k_max.setValue(2)
    seen = _measure(window, qtbot, "tune")
    assert any(ev["event"] == "tune" and ev.get("partial") for ev in seen)  # predictions shown before confirming
    tune = Session.load(window.session_path).data["tune"]
    assert tune == window.model.session.data["tune"] and len(tune["rows"]) >= 2
    assert tv.table.rowCount() == len(tune["rows"]) and tv.recommendation.text() == tune["recommendation"]["text"]


@pytest.mark.slow  # ~20 s; the path is Verify cost's (tested by default), the sweep's config: test_context_page
def test_context_sweeps_in_the_worker_into_a_session_of_its_own(window, qtbot, small_demo_run):
    _demo(window, small_demo_run)
    ctx = window.context
    ctx.contexts.setText("0, 64")
    _measure(window, qtbot, "context")
    saved = Session.load(window.session_path)
    assert saved.data["sweep"]["contexts"] == [0, 64] and all(p["complete"] for p in saved.data["sweep"]["points"])
    assert ctx.table.rowCount() == 2 and ctx.table.item(1, 0).text() == "64"
    assert "context sweep complete" in ctx.status.text()


def test_a_page_cannot_start_while_a_run_runs(window, qtbot, small_demo_run):
    small_demo_run(window, max_tokens=64, cases=2, breakdown=False)
    assert window.start_run()
    for key in ("verify_cost", "tune", "context"):  # built during the run: disabled from the start
        btn = window.views[key].start_btn
        assert not btn.isEnabled() and "the run is in progress" in btn.toolTip()
        assert not window.views[key].stop_btn.isEnabled()  # the run's Stop is the dock's
    assert not window.start_page_measurement("tune")  # refused, the run goes on
    assert window.is_running() and window.model.session.config.get("measure") is None
    with qtbot.waitSignal(window.run_finished, timeout=60_000):
        window.stop_run()
    tip = window.tune.start_btn.toolTip()
    assert window.tune.start_btn.isEnabled() and "in progress" not in tip and "K_max" in tip


def test_a_bad_page_setting_is_refused_with_the_reason(window, qtbot, small_demo_run):
    _demo(window, small_demo_run)
    window.context.contexts.setText("lots")
    window.context.start_btn.click()
    assert not window.is_running()
    box = window._last_dialog
    assert box.windowTitle() == "Cannot start the context sweep" and "lots" in box.text()
    box.close()


def test_an_empty_page_says_its_measurement_has_started(qtbot):
    """Between Start and the first result the page says it is measuring, not "Press …" (and only for its own kind)."""
    from specscope.gui.charts.common import LIGHT
    from specscope.gui.views.context import ContextView
    from specscope.gui.views.tune import TuneView
    from specscope.gui.views.verify_cost import VerifyCostView

    data: dict = {"status": "running", "measure": "roofline", "config": {}, "cases": [], "errors": []}
    vc, tv, ctx = (cls(LIGHT, session=lambda: data) for cls in (VerifyCostView, TuneView, ContextView))
    for page in (vc, tv, ctx):
        qtbot.addWidget(page)
        page.update_snapshot({})
    assert vc.headline.text().startswith("Measuring") and tv.recommendation.text().startswith("Press")
    assert ctx.headline.text().startswith("Press")
    ctx.set_running(True, "Not now: the context sweep is in progress")  # the window started it: no event yet
    assert ctx.headline.text().startswith("Sweeping")
    ctx.set_running(False, "")
    assert ctx.headline.text().startswith("Press")
    data["measure"] = "tune"
    tv.update_snapshot({})
    assert tv.recommendation.text().startswith("Tuning")
    data["measure"], data["config"], data["status"] = "sweep", {"sweep": [0, 64]}, "running"
    ctx.update_snapshot({})
    assert ctx.headline.text().startswith("Sweeping")
    data["status"] = "incomplete"  # stopped before anything arrived: the page is empty again
    ctx.update_snapshot({})
    assert ctx.headline.text().startswith("Press")
