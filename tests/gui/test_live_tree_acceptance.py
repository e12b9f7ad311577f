"""The Live page's acceptance chart for a tree run (``--tree-budget``): the accepted path by depth (x: depth, the
accepted path's length; y: the share of rounds whose path reached it), not acceptance over drafted tokens, which
counts k drafts a round that a tree never made. A chain run's chart is as it was. The fixture is a real tiny tree run
(see tests/profiler/cli/test_trace_tree.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specscope.profiler.analysis.summary import summarize
from specscope.profiler.session.session import Session

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TREE, CHAIN = FIXTURES / "session_tree_traced.json", FIXTURES / "session_demo.json"


def test_the_tree_acceptance_is_the_summarys_paths_by_depth():
    from specscope.gui.charts.tree_acceptance import tree_acceptance

    s = summarize(Session.load(TREE))
    t = tree_acceptance(s)
    assert t is not None and t["budget"] == 4 and t["k"] == 4 and t["depths"] == [1, 2, 3, 4]
    assert t["rounds"] == s["tree"]["rounds"] == sum(t["histogram"]) == 30
    assert t["y"] == pytest.approx([100 * a for a in s["per_position"]])  # the tiles' a_i: the same rounds
    assert all(lo <= y <= hi for lo, y, hi in zip(t["lo"], t["y"], t["hi"]))
    assert tree_acceptance(summarize(Session.load(CHAIN))) is None
    small = {**s, "tree": {**s["tree"], "budget": 2}}  # a path holds at most the budget's nodes: depths 1..2 only
    assert tree_acceptance(small)["depths"] == [1, 2] and tree_acceptance(small)["y"] == t["y"][:2]


def test_live_chart_data_gives_the_same_tree_acceptance_as_the_full_recomputation():
    from specscope.gui.charts.data import all_chart_data
    from specscope.gui.charts.live_data import LiveChartData

    from session_events import paired_events
    from specscope.profiler.session.schema import migrate_names
    import json

    s = Session()
    live = LiveChartData(s)
    seen = 0
    for ev in paired_events(migrate_names(json.loads(TREE.read_text(encoding="utf-8")))):
        s.apply(ev)
        if ev["event"] in ("case_finished", "components", "run_finished"):  # a few points along the run: fast
            got, want = live.chart_data()["acceptance"], all_chart_data(s)["acceptance"]
            assert got == want, ev["event"]
            seen += got["tree"] is not None
    assert seen >= 2


def test_the_chart_draws_a_tree_by_depth_and_a_chain_as_before(qtbot):
    from specscope.gui.charts import AcceptanceChart
    from specscope.gui.charts.common import LIGHT
    from specscope.gui.charts.data import all_chart_data

    chart = AcceptanceChart(LIGHT)
    qtbot.addWidget(chart)
    chart.resize(700, 260)
    chart.show()
    tree = all_chart_data(Session.load(TREE))["acceptance"]
    chart.set_data(tree)
    bottom, left = chart.plot_item.getAxis("bottom"), chart.plot_item.getAxis("left")
    assert "depth (accepted path length, tokens)" in bottom.labelText and "reached depth" in left.labelText
    assert "Accepted path by depth" in chart.plot_item.titleLabel.text and "30 tree rounds of budget 4" in chart.plot_item.titleLabel.text
    (x0, x1), _ = chart.plot_item.vb.viewRange()
    assert x0 == pytest.approx(0.5) and x1 == pytest.approx(4.5) and not chart.limit.isVisible()
    xs, ys = chart.line.getData()
    assert list(xs) == [1, 2, 3, 4] and list(ys) == pytest.approx(tree["tree"]["y"])
    assert [label.text for _, label in chart.legend.items][0] == "paths reaching depth d"
    chain = all_chart_data(Session.load(CHAIN))["acceptance"]  # the same chart, a chain session after: as before
    chart.set_data(chain)
    assert "drafted tokens (count)" in bottom.labelText and "acceptance (%)" in left.labelText
    assert "Acceptance over drafted tokens" in chart.plot_item.titleLabel.text
    assert [label.text for _, label in chart.legend.items][0] == "cumulative acceptance"
    assert list(chart.line.getData()[0]) == chain["x"]
