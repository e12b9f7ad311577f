"""The app's snapshots are built incrementally (LiveSummary + LiveChartData): equal to a full recomputation,
event by event on the fixture session and at every snapshot of a live run; charts skip unchanged data."""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from pathlib import Path

import pytest

from specscope.profiler.session.session import Session
from specscope.profiler.analysis.summary import summarize
from specscope.profiler.analysis.summary import session_case_stats

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "session_demo.json"

_spec = importlib.util.spec_from_file_location("_summary_replay", ROOT / "tests" / "profiler" / "analysis" / "test_summary.py")
_replay = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_replay)

pytestmark = pytest.mark.timeout(600)


def test_live_chart_data_equals_all_chart_data_at_every_event():
    from specscope.gui.charts.data import all_chart_data
    from specscope.gui.charts.live_data import LiveChartData

    s = Session()
    live = LiveChartData(s)
    prev = None
    unchanged = 0
    for ev in _replay.replay_events(_replay.fixture_dict()):
        s.apply(ev)
        snap = live.chart_data()
        assert snap == all_chart_data(s), ev["event"]
        if prev is not None and ev["event"] == "step":
            # a plain step moves the throughput series only: the acceptance section is the very same object
            assert snap["acceptance"] is prev["acceptance"]
            unchanged += 1
        prev = snap
    assert unchanged > 20
    assert snap["throughput"]["plain_x"] and snap["acceptance"]["x"] and sum(snap["tokens_per_round"]["counts"])


def test_charts_skip_a_redraw_when_nothing_changed(qtbot):
    from specscope.gui.charts import AcceptanceChart, ThroughputChart, TokensPerRoundChart
    from specscope.gui.charts.common import LIGHT, DARK
    from specscope.gui.charts.data import all_chart_data

    snap = all_chart_data(Session.load(FIXTURE))
    for cls, key in ((ThroughputChart, "throughput"), (AcceptanceChart, "acceptance"), (TokensPerRoundChart, "tokens_per_round")):
        chart = cls(LIGHT)
        qtbot.addWidget(chart)
        drawn = []
        real = chart._draw
        chart._draw = lambda d, real=real: (drawn.append(1), real(d))
        chart.set_data(snap[key])
        chart.set_data(dict(snap[key]))  # equal data: nothing to redraw
        assert len(drawn) == 1, key
        chart.apply_theme(DARK)  # a new theme redraws whatever the data
        chart.set_data(snap[key])
        assert len(drawn) == 2, key


def test_grid_lines_are_opaque_and_behind_the_data(qtbot):
    from specscope.gui.charts import ThroughputChart
    from specscope.gui.charts.common import LIGHT

    chart = ThroughputChart(LIGHT)
    qtbot.addWidget(chart)
    chart.resize(600, 300)
    chart.show()
    chart.set_data({"plain_x": [1.0, 2.0, 3.0], "plain_y": [10.0, 12.0, 11.0], "spec_x": [], "spec_y": [], "predicted_tok_s": None})
    from PySide6 import QtGui

    for name in ("left", "bottom"):
        ax = chart.plot_item.getAxis(name)
        assert ax.zValue() < chart.plot_item.vb.zValue()
        picture = QtGui.QPicture()
        painter = QtGui.QPainter(picture)
        try:
            specs = ax.generateDrawSpecs(painter)
        finally:
            painter.end()
        assert specs and specs[1] and all(pen.color().alpha() == 255 for pen, _, _ in specs[1])


@pytest.mark.slow  # a real run in the app (~10 s); snapshots equal to a recomputation at every event of a session
# run by default above (charts) and in tests/profiler/analysis/test_summary.py (the summary)
def test_live_run_snapshots_equal_full_recomputation(window, qtbot, monkeypatch):
    """A real demo run in the app (two repeats: lists are replaced mid-case): every snapshot the model
    publishes equals the summary and chart data recomputed from the whole session at that moment."""
    from specscope.gui.charts.data import all_chart_data
    from specscope.gui.inspector import DEMO

    s = window.setup
    s.set_model(DEMO)
    s.set_drafter("draft")
    s.k.setValue(2)
    s.cases.setValue(2)
    s.max_tokens.setValue(12)
    s.warmup.setValue(0)
    s.repeats.setValue(2)
    s.breakdown.setChecked(True)
    s.greedy.setChecked(True)
    panel_config = s.config  # the panel has no component-reps field: one a call, the components are not checked here
    monkeypatch.setattr(s, "config", lambda: replace(panel_config(), component_reps=1))  # as test_soak does
    checked = []

    def check(snap):
        session = window.model.session
        assert snap["summary"] == summarize(session)
        ref = all_chart_data(session)
        for key in ("throughput", "acceptance", "tokens_per_round", "breakdown", "division"):
            assert snap[key] == ref[key], key
        checked.append(snap["status"])

    window.model.snapshot.connect(check)
    with qtbot.waitSignal(window.run_finished, timeout=300_000) as blocker:
        assert window.start_run()
    assert blocker.args == ["complete"], window.model.session.data["errors"]
    window.model.flush()
    assert len(checked) >= 3 and "complete" in checked
    rows = []
    window.model.cases_changed.connect(rows.append)
    window.model.reset(window.model.session)
    assert rows and [st for _, st in rows[-1]] == [session_case_stats(window.model.session, c) for c in window.model.session.cases]
