"""The report of a session that is not a run (a verify cost measurement, a tune, a check): what it measured and how,
its own sections, and none of a run's (no "still being measured" of a finished measurement, no "model ?")."""

from __future__ import annotations

import copy
import json
from html import unescape
from pathlib import Path

import pytest

from specscope.gui.reports.html import build, collect_charts
from specscope.profiler.session.session import Session

SURFACE = Path(__file__).resolve().parent / "fixtures" / "session_surface.json"
RUN = Path(__file__).resolve().parents[1] / "fixtures" / "session_demo.json"
RUN_ONLY = ("<h2>Summary</h2>", "<h2>The division</h2>", "<h2>Per case</h2>", "still being measured", "model ?")


def _surface() -> dict:
    return json.loads(SURFACE.read_text(encoding="utf-8"))


def _tune_session() -> dict:
    d = _surface()
    d["measure"] = "tune"
    d.pop("roofline")
    d["measurement"] = {"demo": True, "k_max": 4, "max_tokens": 64, "tree_budgets": [2, 4], "drafter": "auto"}
    agrees = "agrees (error +1.5%, 99.8% interval -0.4%…+3.5%, within ±5%)"
    d["tune"] = {"model": "tiny-trained-demo", "recommendation": {"text": "no k wins here"}, "confirm_reps": 6,
                 "rows": [{"drafter": "mtp", "k": 1, "predicted_speedup": 0.79, "predicted_ci95": [0.7, 0.87],
                           "measured_speedup": 0.78, "prediction_error": 0.015,
                           "agreement": {"state": "agrees", "text": agrees}},
                          {"drafter": "mtp", "k": 2, "predicted_speedup": 0.65, "predicted_ci95": [0.57, 0.72]}]}
    return d


@pytest.mark.parametrize("target", ["screen", "print"])
def test_a_verify_cost_measurement_reports_what_it_measured_and_nothing_of_a_run(target):
    s = Session.from_dict(_surface())
    html = build(s, collect_charts(s, names=()), target=target)
    assert "A verify cost measurement (complete): no run here, so no verdict; its figures are in the Verify cost" in html
    model = s.data["roofline"]["model"]
    assert f"specscope report — {model} on" in html                   # the model the measurement recorded
    assert "<h3>Measurement</h3>" in html and "positions" in html        # how it was measured, from its own record
    assert "Verify cost and roofline" in html and "Chains and trees: the cost surface" in html
    for run_only in RUN_ONLY:
        assert run_only not in html, run_only
    assert "Pre-flight" not in html  # none recorded: not "recorded before specscope had one", which is not why


def test_a_run_session_keeps_the_runs_report():
    """The negative control: the same builder on a run's session still writes the run's sections."""
    s = Session.load(RUN)
    html = build(s, collect_charts(s, names=()))
    assert "<h2>Summary</h2>" in html and "<h2>Per case</h2>" in html and "no run here" not in html


def test_a_tune_reports_its_table_with_each_verdict_in_full_under_it():
    s = Session.from_dict(_tune_session())
    html = build(s, collect_charts(s, names=()))
    assert "A tune (complete): no run here, so no verdict; its figures are in the Which k section below." in html
    assert "specscope report — tiny-trained-demo on" in html and "tree budgets" in html and "2, 4" in html
    assert ">drafter<" not in html.split("<h2>Which k</h2>")[0]  # "auto": an engine default, not a setting of the tune
    table, below = html.split("<h2>Which k</h2>")[1].split("</table>", 1)
    assert ">agrees<" in table and "99.8% interval" not in table       # the state in the cell (it wraps in no column)
    assert "<li>mtp k=1: agrees (error +1.5%, 99.8% interval" in below  # its whole text under the table
    for run_only in RUN_ONLY:
        assert run_only not in html, run_only


def test_a_check_says_where_its_figures_are():
    d = copy.deepcopy(_surface())
    d["measure"] = "check"
    d.pop("roofline")
    html = unescape(build(Session.from_dict(d), {}))
    assert "A check (complete): no run here, so no verdict; the app's Checks page shows it" in html
    assert "<h2>Summary</h2>" not in html and "model ?" in html  # nothing recorded the model: said, not invented
