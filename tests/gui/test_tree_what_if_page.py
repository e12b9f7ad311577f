"""The Division page's budget what-if for a tree run: the chart of the predicted speedup by budget (the run's own
budget at its prediction, the best named) and the what-if text; a chain run's page has neither."""

from __future__ import annotations

import json

from specscope.profiler.analysis.summary import summarize
from specscope.profiler.session.session import Session

from session_events import PAIRED
from session_events import TIMES


def _tree_file(tmp_path):
    from session_events import tree_session_dict

    d = tree_session_dict()
    for c in d["cases"]:
        if c.get("components"):
            c["components"]["budget_verify_ms"] = {b: list(xs) for b, xs in TIMES.items()}
    path = tmp_path / "tree.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    return path


def test_the_division_page_draws_the_budget_what_if(window, tmp_path):
    path = _tree_file(tmp_path)
    window.open_session(str(path))
    window.show_page("division")
    window.model.flush()
    page = window.division
    chart = page.budgets
    assert not chart.isHidden() and not chart._empty.isVisible()
    names = [label.text for _, label in chart.legend.items]
    assert names == ["predicted (the round model at each budget)", "this run's budget: its prediction"]
    star = next(s.item for s, label in chart.legend.items if label.text.startswith("this run"))
    s = summarize(Session.load(str(path)))
    xs, ys = star.getData()
    assert list(ys) == [s["predicted_speedup"]] and list(xs) == [2]  # budgets 1, 2, 4 (the run's), 8
    texts = [it.toPlainText() for it in chart.items if hasattr(it, "toPlainText")]
    assert any(t.startswith("best: ") for t in texts)
    assert "budget 8: verify timed, no E" in chart.note.text
    assert "Tree budget what-if: best predicted" in page.audit.text()
    png = tmp_path / "budgets.png"
    assert chart.grab().save(str(png)) and png.stat().st_size > 3_000


def test_a_chain_runs_division_page_has_no_budget_chart(window):
    window.open_session(str(PAIRED))
    window.show_page("division")
    window.model.flush()
    assert window.division.budgets.isHidden() and "budget what-if" not in window.division.audit.text()
