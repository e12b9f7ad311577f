"""The Division chart: one acceptance model for the curve and every marker (DESIGN §6: p and α differ for k > 1).

The curve is over the geometric per-position acceptance α; the run sits at the α whose E equals its measured E,
so the predicted marker lies on the curve and equals the summary's prediction. No Qt needed: the chart's data."""

from __future__ import annotations

from pathlib import Path

import pytest

from specscope.gui.charts.data import division_data
from specscope.profiler.analysis import stats
from specscope.profiler.session.session import Session
from specscope.profiler.analysis.summary import summarize

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "session_demo.json"


def test_the_predicted_marker_lies_on_the_curve_at_the_runs_alpha():
    s = Session.load(FIXTURE)
    sm = summarize(s)
    d = division_data(s, sm)
    k = sm["k"]
    alpha = stats.alpha_for_tokens_per_round(sm["tokens_per_round"], k)
    assert d["alpha"] == pytest.approx(alpha)
    assert stats.tokens_per_round_from_p(alpha, k) == pytest.approx(sm["tokens_per_round"])
    # on the curve, and the summary's prediction
    # (the curve is the judged round model: the rollback timed apart is part of the round)
    on_curve = stats.speedup_curve(d["t_decode_ms"], d["t_verify_ms"], d["t_draft_ms"] + d["t_rollback_ms"], k, [alpha])[0]
    assert d["predicted"]["p"] == pytest.approx(alpha) and d["predicted"]["speedup"] == pytest.approx(on_curve)
    assert d["predicted"]["speedup"] == pytest.approx(sm["predicted_speedup"])
    # the measured point sits at the same α, at the measured speedup; its bar spans E's interval mapped to α
    main = next(q for q in d["points"] if q["main"])
    assert main["p"] == pytest.approx(alpha) and main["speedup"] == pytest.approx(sm["measured_speedup"])
    lo, hi = (stats.alpha_for_tokens_per_round(x, k) for x in sm["tokens_per_round_ci95"])
    assert main["p_lo"] == pytest.approx(lo) and main["p_hi"] == pytest.approx(hi) and lo <= alpha <= hi
    # per-token p is not α for k > 1: the old axis put the marker off its own curve
    assert k > 1 and abs(sm["p"] - alpha) > 0.01


@pytest.mark.parametrize("width", [640, 560])
def test_the_legend_fits_inside_the_plot(qtbot, width):
    """Two columns of entries, anchored bottom-right: at the chart's width in the app's window (about 640 px at
    1440×900) the box must not run past the plot's left edge (it did: the left column's samples and first letters
    were cut off)."""
    from specscope.gui.charts.division import DivisionChart

    s = Session.load(FIXTURE)
    chart = DivisionChart()
    qtbot.addWidget(chart)
    chart.resize(width, 640)
    chart.show()
    chart.set_data(division_data(s, summarize(s)))
    qtbot.wait(50)
    legend = chart.legend.sceneBoundingRect()
    view = chart.plot_item.vb.sceneBoundingRect()
    assert chart.legend.isVisible() and len(chart.legend.items) >= 6
    assert view.left() <= legend.left() and legend.right() <= view.right(), (legend, view)


def test_a_curve_from_the_runs_own_rounds_is_the_ledger_not_a_prediction(qtbot):
    """A session with no components timed apart: the curve is drawn from the ledger's inputs and says so."""
    import copy

    from specscope.gui.charts.division import DivisionChart

    s = Session.load(FIXTURE)
    d = copy.deepcopy(s.data)
    for c in d["cases"]:
        c.pop("components", None)
    ledger_only = Session.from_dict(d)
    sm = summarize(ledger_only)
    assert sm["division_inputs"] == "rounds" and sm["predicted_speedup"] is None
    chart = DivisionChart()
    qtbot.addWidget(chart)
    chart.set_data(division_data(ledger_only, sm))
    assert chart.legend.getLabel(chart.curve).text == "ledger (not a prediction)"
    chart.set_data(division_data(s, summarize(s)))
    assert chart.legend.getLabel(chart.curve).text == "predicted (timed apart)"
