"""The Tune page with tree settings (``tune --tree-budgets``): a tree row reads its budget, the trace note gives E by
budget, the chart draws the tree setting as its own series, and the page's budgets reach the measurement."""

from __future__ import annotations

import pytest

from specscope.errors import SpecscopeError
from specscope.gui.charts.common import LIGHT
from specscope.gui.charts.cost_data import tune_data
from specscope.gui.views.tune import COLUMNS, TuneView, budgets_of
from specscope.profiler.run.config import RunConfig


def _row(drafter, k, pred, measured=None, **extra):
    return {"drafter": drafter, "k": k, "predicted_speedup": pred, "predicted_ci95": [pred - 0.1, pred + 0.1],
            "measured_speedup": measured, "prediction_error": None, "tokens_per_round": 2.0,
            "acceptance_source": "trace", **extra}


TUNE = {"rows": [_row("dflash", 2, 1.3, 1.25), _row("dflash", 3, 1.2),
                 _row("dflash+tree", 2, 1.1, tree_budget=2, depth=3),
                 _row("dflash+tree", 4, 1.4, 1.35, tree_budget=4, depth=3)],
        "recommendation": {"drafter": "dflash+tree", "k": 4, "measured_speedup": 1.35, "wins": True,
                           "text": "use trees of budget 4 with the DFlash drafter: 1.35× measured"},
        "assumption": "greedy",
        "drafters": {"dflash+tree": {"label": "the DFlash drafter, trees",
                                     "trace": {"positions": 40, "estimate": False, "budgets": [2, 4],
                                               "tokens_per_round": [2.2, 3.0]}}}}


def test_the_tune_page_reads_tree_settings(qtbot):
    page = TuneView(LIGHT, session=lambda: {"tune": TUNE})
    qtbot.addWidget(page)
    page.set_tune(TUNE)
    ks = [page.table.item(i, COLUMNS.index("k or\ntree B")).text() for i in range(page.table.rowCount())]
    assert ks == ["2", "3", "B=2", "B=4"]
    assert "E(B) = B=2: 2.20, B=4: 3.00" in page.assumption.text()
    data = tune_data(TUNE)
    assert [d["name"] for d in data["drafters"]] == ["dflash", "dflash+tree"]
    assert data["recommended"]["label"].startswith("B = 4")
    page.tree_budgets.setText("2, 4,8")
    cfg = page.measurement(RunConfig(demo=True))
    assert cfg.tree_budgets == [2, 4, 8]
    page.tree_budgets.setText("")
    assert page.measurement(RunConfig(demo=True)).tree_budgets is None
    with pytest.raises(SpecscopeError, match="not a list of node budgets"):
        budgets_of("two")
