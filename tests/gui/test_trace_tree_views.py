"""The Cases page's trace strip for a tree run (``--tree-budget``, traced): a second row with E by budget walked from
the tree traces (the run's budget marked) and the accepted path by depth at the run's budget; a chain run's strip
keeps its one row. The fixture is a real tiny tree run (see tests/profiler/cli/test_trace_tree.py)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from specscope.profiler.analysis import tree_trace
from specscope.profiler.session.session import Session

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TREE = FIXTURES / "session_tree_traced.json"
CHAIN_TRACED = Path(__file__).resolve().parent / "fixtures" / "session_traced.json"


def test_tree_data_is_the_traces_walked_at_every_budget_and_at_the_runs():
    from specscope.gui.charts.trace import run_budget, trace_tree_data

    cases = Session.load(TREE).cases
    d = trace_tree_data(cases)
    assert d is not None and run_budget(cases) == 4 and d["budget"] == 4 and d["depth"] == 4 and d["traces"] == 3
    curve = tree_trace.curve(tree_trace.tree_traces(cases), 4)
    assert d["E"] == [x["tokens_per_round"] for x in curve] and d["budgets"] == list(range(1, 17))
    at = tree_trace.at_budget(tree_trace.tree_traces(cases), 4, 4)
    assert d["depth_histogram"] == at["depth_histogram"] and d["acceptance_by_depth"] == at["acceptance_by_depth"]
    assert d["E_at_budget"] == pytest.approx(d["measured_E"], rel=1e-12)  # greedy: the walk is what the run measured
    chain = Session.load(CHAIN_TRACED).cases
    assert run_budget(chain) == 0 and trace_tree_data(chain) is None
    untraced = copy.deepcopy(cases)
    for c in untraced:
        del c["trace"]["tree"]  # a tree run whose trace has no tree part: no tree row
    assert trace_tree_data(untraced) is None


@pytest.mark.parametrize("path, tree", [(TREE, True), (CHAIN_TRACED, False)])
def test_the_strip_shows_the_tree_row_for_a_tree_run_only(qtbot, path, tree):
    from specscope.gui.charts.common import LIGHT
    from specscope.gui.session_model import SessionModel
    from specscope.gui.views.cases import CasesView

    s = Session.load(path)
    view = CasesView(LIGHT)
    qtbot.addWidget(view)
    view.resize(1440, 900)
    view.show()
    model = SessionModel()
    model.cases_changed.connect(view.update_cases)
    model.reset(s, autosave_path=None)
    model.flush()
    view.select_case(s.cases[-1]["id"])
    panel = view.trace
    assert panel.isVisible() and panel.case_chart._drawn["case"] == s.cases[-1]["id"]  # the chain figures stay
    assert panel.tree_row.isVisible() == tree
    if tree:
        budget, depth = panel.budget_chart, panel.depth_chart
        assert budget._drawn["budget"] == 4 and not budget._empty.isVisible()
        names = [label.text for _, label in budget.legend.items]
        assert any("this run's budget 4: 2.17" in n for n in names) and any("measured: 2.17" in n for n in names)
        (x0, x1), (y0, y1) = budget.plot_item.vb.viewRange()
        assert x0 < 1 and x1 > 16 and y0 <= 1.0 and y1 > max(e for e in budget._drawn["E"] if e is not None)
        assert "at budget 4 (30 rounds walked)" in depth.plot_item.titleLabel.text and not depth._empty.isVisible()
        assert depth.plot_item.vb.viewRange()[0][1] > 4  # every depth 0..k on the axis
        assert panel.height() >= 400  # two rows of charts get their room
