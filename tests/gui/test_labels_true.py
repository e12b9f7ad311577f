"""Every predicted figure on screen and in the report is the round model's, and every label says what its number is
(issue 51): the formula printed is the one priced, the ledger is never passed off as a prediction, a tile's error
speaks of the figure beside it."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from specscope.profiler.analysis.summary import session_case_stats, summarize
from specscope.profiler.session.session import Session

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "session_demo.json"
DFLASH = Path(__file__).resolve().parent / "fixtures" / "session_dflash_quick.json"


def _ledger_only() -> Session:
    """The demo session as an older specscope saved it: no components timed apart, only the run's own rounds."""
    d = copy.deepcopy(Session.load(DEMO).data)
    for c in d["cases"]:
        c.pop("components", None)
    return Session.from_dict(d)


def _sweep() -> Session:
    """A sweep (contexts 0 and 1k) whose points hold the demo's cases, components and all; no model runs."""
    base = Session.load(DEMO).data
    top = Session()
    top.apply({"event": "run_started", "config": {**base["config"], "sweep": [0, 1024]}, "environment": base["environment"],
               "model": base["model"], "cases": []})
    top.apply({"event": "sweep_started", "contexts": [0, 1024], "order": [0, 1024, 1024, 0], "passes": 2, "kind": "mixed"})
    top.apply({"event": "context", "context": 1024, "tokens": 1024, "prefill_ms": 40_000.0, "kv_bytes": 1000})
    for p in top.data["sweep"]["points"]:
        p["session"]["cases"] = copy.deepcopy(base["cases"])
        p["complete"], p["visits"] = True, 2
    top.data["status"] = "complete"
    return Session.from_dict(top.to_dict())


def test_the_context_report_names_the_terms_its_prediction_holds():
    """The context section said "Predicted = E · T_decode / (T_verify + T_draft)" beside values that hold the
    rollback (and bookkeeping) timed apart."""
    from specscope.gui.reports.html_context import context_section
    from specscope.profiler.analysis.sweep import sweep_figures

    sweep = _sweep()
    rows = sweep_figures(sweep)
    point = Session(sweep.data["sweep"]["points"][0]["session"])
    assert summarize(point)["t_rollback_ms"] is not None and rows[0]["predicted_speedup"] is not None
    out = context_section(sweep, {}, "screen")
    said = re.search(r"Predicted = [^<]*", out).group(0)
    assert "T_rollback" in said and "T_bookkeeping" in said, said
    assert "E · T_decode / (T_verify + T_draft) at each context" not in out


def test_the_summary_prints_the_formula_and_break_even_it_priced():
    from specscope.gui.reports.html_summary import division_section, summary_section

    s = summarize(Session.load(DEMO))  # rollback timed apart, bookkeeping not
    out = summary_section(s)
    assert s["break_even_formula"] == "E·T_decode − T_draft − T_rollback"
    row = re.search(r"<td[^>]*>Break-even</td>(.*?)</tr>", out, flags=re.S).group(1)
    assert "(E·T_decode − T_draft − T_rollback)" in row and "(E·T_decode − T_draft)" not in row
    assert "T_verify ≤ E·T_decode − T_draft − T_rollback" in division_section(s, {}, "screen")
    line = re.search(r'<p class="formula">(.*?)</p>', out).group(1)
    assert "/ (T_verify + T_draft + T_rollback) = " in line and "(T_bookkeeping not timed)" in line
    lost = summarize(Session.load(DFLASH))  # the round's other terms alone exceed E·T_decode
    assert lost["break_even_out_of_reach"] and lost["break_even_verify_ms"] is None
    row = re.search(r"<td[^>]*>Break-even</td>(.*?)</tr>", summary_section(lost), flags=re.S).group(1)
    assert "out of reach" in row and "− T_bookkeeping ≤ 0" in row
    assert "the break-even line is out of reach" in division_section(lost, {}, "screen")


def test_the_ledger_standing_in_is_called_the_ledger():
    """The figure caption said "predicted speedup" and the block-sum line fell back to the ledger silently."""
    from specscope.gui.reports.html_breakdown import whole_graph_figure
    from specscope.gui.reports.html_summary import division_section, summary_section

    s = summarize(_ledger_only())
    assert s["division_inputs"] == "rounds" and s["predicted_speedup"] is None and s["ledger_speedup"] is not None
    cap = re.search(r"<figcaption>(.*?)</figcaption>", division_section(s, {}, "screen")).group(1)
    assert cap.startswith("The ledger (the run&#x27;s own rounds), not a prediction") and "Predicted" not in cap
    assert whole_graph_figure(s).endswith("from the ledger (the run's own rounds), not a prediction")
    row = re.search(r"<td[^>]*>Wrong-ruler prediction</td>(.*?)</tr>", summary_section(s), flags=re.S).group(1)
    assert "from the ledger (the run&#x27;s own rounds), not a prediction" in row
    pred = summarize(Session.load(DEMO))
    assert re.search(r"<figcaption>Predicted speedup", division_section(pred, {}, "screen"))


def test_the_speedup_tile_shows_the_figure_its_error_is_about(qtbot):
    """On a DFlash run the Live tile read 0.249× (all rounds) with "prediction error +0.2%" — an error against the
    full rounds' 0.224×. The tile's figure is now the one its error is judged against, the other beside it, named."""
    from specscope.gui.charts.common import LIGHT
    from specscope.gui.charts.data import all_chart_data
    from specscope.gui.views.live import LiveView

    session = Session.load(DFLASH)
    snap = all_chart_data(session)
    s = snap["summary"]
    assert s["tail_tokens"] and abs(s["measured_speedup"] - s["judged_measured_speedup"]) > 0.01
    v = LiveView(LIGHT)
    qtbot.addWidget(v)
    v.update_snapshot(snap)
    shown = float(v.t_speed.value.text().rstrip("×"))
    assert shown == pytest.approx(s["judged_measured_speedup"], abs=6e-4)
    # the error printed under it is the prediction's error against this figure
    assert s["predicted_speedup"] / s["judged_measured_speedup"] - 1 == pytest.approx(s["prediction_error"])
    from specscope.profiler.analysis.verdict import prediction_error_text

    note = v.t_speed.note.full_text()
    assert note.startswith(f"prediction error {prediction_error_text(s)} · all rounds {s['measured_speedup']:.3f}×")
    assert prediction_error_text(s).startswith(f"{s['prediction_error'] * 100:+.1f}%")
    assert "full rounds" in v.t_speed.caption.full_text()
    # a run whose rounds all drafted k: one figure, no "full rounds" to tell apart
    plain = all_chart_data(Session.load(DEMO))
    if not plain["summary"].get("tail_tokens"):
        v.update_snapshot(plain)
        assert v.t_speed.caption.full_text() == "Speedup"


def _without_rollback_at(session: Session, a: str) -> Session:
    """The session as if no case had timed its rollback after ``a`` accepted drafts: that term cannot be priced."""
    out = copy.deepcopy(session)
    for c in out.cases:
        ((c.get("components") or {}).get("rollback_ms") or {}).pop(a, None)
    return out


def test_the_cases_page_shows_each_cases_judged_prediction(qtbot):
    from specscope.gui.charts.common import LIGHT
    from specscope.gui.views.cases import COLUMNS, CasesView

    for session, untimed in ((Session.load(DFLASH), False), (_without_rollback_at(Session.load(DFLASH), "0"), True)):
        rows = [(c, session_case_stats(session, c)) for c in session.cases]
        v = CasesView(LIGHT)
        qtbot.addWidget(v)
        v.update_cases(rows)
        col = {name.split("\n")[0]: i for i, name in enumerate(COLUMNS)}
        assert COLUMNS[col["Predicted"]] == "Predicted\n(whole\nround)"
        for r in range(v.model.rowCount()):
            cid = v.model.item(r, 0).text()
            st = next(s for c, s in rows if c["id"] == cid)
            assert st["predicted_speedup"] < st["division_speedup"]  # the whole round pays more than the division's
            assert (st["prediction_untimed"] == ["t_rollback_ms"]) is untimed
            star = "*" if untimed else ""
            assert v.model.item(r, col["Predicted"]).text() == f"{st['predicted_speedup']:.3f}{star}"  # named if untimed
            assert v.model.item(r, col["Error vs"]).text() == f"{st['prediction_error'] * 100:+.1f}%"
            tip = v.model.item(r, col["Predicted"]).toolTip()
            assert f"{st['division_speedup']:.3f}×" in tip and "without rollback and bookkeeping" in tip
            assert ("(T_rollback not timed)" in tip) is untimed


def test_the_report_cases_table_labels_its_prediction_and_error():
    from specscope.gui.reports.html_cases import cases_section

    for session, untimed in ((Session.load(DFLASH), False), (_without_rollback_at(Session.load(DFLASH), "0"), True)):
        out = cases_section(session)
        for head in ("Predicted (whole round)", "Seed&#x27;s division (no rollback, bookkeeping)", "Error vs full rounds"):
            assert head in out or head.replace("&#x27;", "'") in out, head
        for c in session.cases:
            st = session_case_stats(session, c)
            star = "*" if untimed else ""
            assert f"{st['predicted_speedup']:.3f}×{star}" in out and f"{st['division_speedup']:.3f}×" in out
        assert ("left out of its round (named, never silently taken as zero): T_rollback." in out) is untimed
