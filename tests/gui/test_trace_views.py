"""The acceptance trace in the app and the reports: the Cases page's strip (A(s) of the selected case, E(k) by
content class), the Tune page's E(k) columns, and the report's section — shown only for sessions with traces."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from specscope.profiler.analysis import trace_walk
from specscope.profiler.session.session import Session

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "session_demo.json"


def with_traces(seed=0) -> Session:
    """The demo session with a trace on every case (A(s) drawn at random: these tests check drawing, not values)."""
    s = Session.load(DEMO)
    rng = random.Random(seed)
    for c in s.cases:
        n = len(c["plain"]["tokens"])
        c["trace"] = {"drafter": "mtp", "k_max": 4, "A": [rng.randint(0, 4) for _ in range(n - 1)], "tokens": n,
                      "estimate": False, "cost_ms": {"total_ms": 1200.0}}
    return s


def test_chart_data_follows_the_traces():
    from specscope.gui.charts.trace import trace_case_data, trace_class_data

    s = with_traces()
    c = s.cases[0]
    d = trace_case_data(c)
    assert d["A"] == c["trace"]["A"] and d["k_max"] == 4 and len(d["pieces"]) == len(d["A"])
    classes = trace_class_data(s.cases)
    names = [x["name"] for x in classes["classes"]]
    assert sorted(names) == sorted({"Chinese", "English", "Code"} & set(names)) and len(names) == len(s.cases)
    code = next(x for x in classes["classes"] if x["name"] == "Code")
    case = next(c for c in s.cases if c["content_class"] == "code")
    assert code["E"] == [trace_walk.at_k(case["trace"], k)["tokens_per_round"] for k in range(1, 5)]
    assert trace_case_data({"id": "x"}) is None and trace_class_data(Session.load(DEMO).cases) is None


@pytest.mark.parametrize("traced", [True, False])
def test_cases_page_shows_the_trace_strip_only_with_traces(qtbot, traced):
    from specscope.gui.charts.common import LIGHT
    from specscope.gui.session_model import SessionModel
    from specscope.gui.views.cases import CasesView

    s = with_traces() if traced else Session.load(DEMO)
    view = CasesView(LIGHT)
    qtbot.addWidget(view)
    view.resize(1280, 800)
    view.show()
    model = SessionModel()
    model.cases_changed.connect(view.update_cases)
    model.reset(s, autosave_path=None)
    model.flush()
    view.select_case(s.cases[1]["id"])
    assert view.trace.isVisible() == traced
    if traced:
        assert view.trace.case_chart._drawn["case"] == s.cases[1]["id"]
        assert view.trace.case_chart._drawn["A"] == s.cases[1]["trace"]["A"]
        assert len(view.trace.class_chart._drawn["classes"]) == len({c["content_class"] for c in s.cases})


def test_tune_page_shows_e_from_the_trace_beside_the_k_max_rounds(qtbot):
    from specscope.gui.charts.common import LIGHT
    from specscope.gui.views.tune import COLUMNS, TuneView

    tune = {"rows": [{"drafter": "mtp", "k": 1, "predicted_speedup": 0.8, "predicted_ci95": [0.7, 0.9],
                      "measured_speedup": 0.79, "prediction_error": 0.01, "tokens_per_round": 1.63,
                      "tokens_per_round_k_max_rounds": 1.42, "measured_tokens_per_round": 1.63,
                      "acceptance_source": "trace"}],
            "recommendation": {"text": "no k wins here"}, "assumption": "greedy",
            "drafters": {"mtp": {"label": "the MTP head", "trace": {"positions": 63, "cost_ms": 5400.0,
                                                                   "tokens_per_round": [1.63]}}}}
    view = TuneView(LIGHT)
    qtbot.addWidget(view)
    view.draw(tune)
    cells = [view.table.item(0, j).text() for j in range(len(COLUMNS))]
    assert cells[2:5] == ["1.63", "1.42", "1.63"]
    assert "63 positions" in view.assumption.text() and "5.4 s" in view.assumption.text()


def test_report_has_the_trace_section_only_with_traces():
    from specscope.gui.reports import html

    page = html.render(with_traces())
    assert "Acceptance along the text" in page
    assert page.count('alt="trace_case-') == 3 and 'alt="trace_classes"' in page
    assert "Acceptance along the text" not in html.render(Session.load(DEMO))


def test_csv_report_writes_the_traces_beside_it(tmp_path):
    import csv

    from specscope.profiler.renderers import side_tables

    s = with_traces()
    tables = side_tables(s, tmp_path / "r.csv")
    text = tables[tmp_path / "r.trace.csv"]
    rows = list(csv.DictReader(text.splitlines()))
    assert len(rows) == sum(len(c["trace"]["A"]) for c in s.cases)
    first = s.cases[0]
    assert [int(r["agree"]) for r in rows if r["case"] == first["id"]] == first["trace"]["A"]
    assert (tmp_path / "r.trace.csv") not in side_tables(Session.load(DEMO), tmp_path / "r.csv")
