"""The Division chart: one acceptance model for the curve and every marker (DESIGN §6: p and α differ for k > 1).

The curve is over the geometric per-position acceptance α; the run sits at the α whose E equals its measured E,
so the predicted marker lies on the curve and equals the summary's prediction. No Qt needed: the chart's data."""

from __future__ import annotations

from pathlib import Path

import pytest

from specscope.gui.charts.data import division_data
from specscope.profiler.analysis import stats
from specscope.profiler.analysis.round_model import RoundModel
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
    # on the curve, and the summary's prediction (the curve is the judged round model: the rollback timed apart is
    # part of the round)
    on_curve = RoundModel.from_summary(sm).curve([alpha], k)[0]
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
def test_the_legend_covers_nothing_and_fits_the_plots_width(qtbot, width):
    """The legend sits under the plot: inside it, it covered the left end of the curves and the break-even line. At
    the chart's width in the app's window (about 640 px at 1440×900) it must not run past the plot's edges either (it
    did: the left column's samples and first letters were cut off)."""
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
    assert legend.top() >= view.bottom() and not legend.intersects(view), (legend, view)  # under the plot
    assert legend.bottom() <= chart.plot_item.sceneBoundingRect().bottom() + 1  # and not cut off below


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
    assert chart.legend.getLabel(chart.curve).text == "ledger (the run's own rounds), not a prediction"
    assert "not a prediction" in chart.plot_item.titleLabel.text and "Predicted" not in chart.plot_item.titleLabel.text
    chart.set_data(division_data(s, summarize(s)))
    assert chart.legend.getLabel(chart.curve).text == "predicted: whole round, timed apart"
    assert chart.plot_item.titleLabel.text.startswith("Predicted")


def test_the_division_pages_figures_are_the_round_models(qtbot):
    """The calculator at the run's α and T_verify says the summary's prediction (the whole round, rollback and
    bookkeeping in), with the seed's division beside it as its own labelled figure; the communication what-if's
    measured break-even α is the whole round's, not the bare division's."""
    from specscope.gui.views.division import communication_text, what_if_text

    s = Session.load(Path(__file__).resolve().parent / "fixtures" / "session_dflash_quick.json")
    sm = summarize(s)
    k, model = sm["k"], RoundModel.from_summary(sm)
    assert model.t_rollback_ms and model.t_bookkeeping_ms  # a run whose round pays more than the seed's division
    alpha = stats.alpha_for_tokens_per_round(sm["tokens_per_round"], k)
    d = division_data(s, sm, p=alpha)
    assert d["what_if"]["speedup"] == pytest.approx(sm["predicted_speedup"], rel=1e-9)
    assert d["division_curve"] is not None and d["predicted"]["speedup"] == pytest.approx(sm["predicted_speedup"])
    text = what_if_text(sm, sm["t_verify_ms"], alpha)
    assert f"predicted speedup (the whole round) {sm['predicted_speedup']:.3f}×" in text
    assert f"the seed's division, without rollback and bookkeeping: {sm['division_speedup']:.3f}×" in text
    assert "break-even out of reach" in text and sm["break_even_out_of_reach"]  # E·T_decode − … ≤ 0 on this run
    whole, bare = model.break_even_alpha(k), model.what_if(t_rollback_ms=None, t_bookkeeping_ms=None).break_even_alpha(k)
    assert whole is not None and bare is not None and f"{whole * 100:.1f}" != f"{bare * 100:.1f}"
    assert f"Measured: α ≥ {whole * 100:.1f}%" in communication_text(sm, 0.0)
