"""Verify cost and Tune pages: their chart data from hand-made results, and the pages in the window."""

from __future__ import annotations

import pytest

from specscope.gui.charts.cost_data import block_floor_data, expert_union_data, tune_data, verify_curve_data
from specscope.gui.views.tune import COLUMNS
from specscope.profiler.analysis.summary import summarize


def _roof():
    curve = []
    for n, whole in ((1, 4.0), (2, 7.0), (3, -1.0), (4, 12.0)):  # n = 3: a time that cannot be vouched for
        curve.append({"positions": n, "whole_ms": whole, "whole_ms_min": whole - 0.5, "whole_ms_max": whole + 1.0,
                      "multiple_of_decode": whole / 4, "floor_ms": 1.0, "ideal_multiple": 0.5 * n,
                      "by_block": {"moe": {"ms": 2.0 * n, "floor_ms": 0.5, "efficiency": 0.5 / (2.0 * n), "distinct_experts": 3.0 * n,
                                             "routed_slots": 4 * n, "experts": 14},
                                   "output_head": {"ms": 1.0, "floor_ms": 0.5, "efficiency": 0.5}}})
    return {"bandwidth_gbs": 20.0, "peak_tflops": 0.5, "chip": "unknown", "nominal_bandwidth_gbs": None, "curve": curve,
            "ideal_verify_multiple": 0.25, "speedup_at_floor": 1.5}


def test_verify_curve_is_in_decode_steps_and_drops_what_it_cannot_vouch_for():
    d = verify_curve_data(_roof())
    assert d["n"] == [1, 2, 4]  # the negative time is a gap, not a point
    assert d["measured"] == [1.0, 1.75, 3.0]
    assert d["measured_lo"] == [3.5 / 4, 6.5 / 4, 11.5 / 4]
    assert d["floor"] == [0.25, 0.25, 0.25]  # the floor (1.0 ms) / T_decode 4.0
    assert d["ideal"] == [0.5, 1.0, 2.0]
    assert verify_curve_data({"curve": [{"positions": 2, "whole_ms": 3.0}]}) is None  # no n = 1: no unit


def test_block_floor_and_expert_union():
    c = block_floor_data(_roof(), 2)
    assert [x["key"] for x in c["blocks"]] == ["moe", "output_head"]
    assert c["blocks"][0]["efficiency"] == pytest.approx(0.125)
    assert block_floor_data(_roof(), 9) is None
    e = expert_union_data(_roof())
    assert e["n"] == [1, 2, 3, 4] and e["distinct"] == [3.0, 6.0, 9.0, 12.0] and e["bound"] == [4, 8, 12, 14] and e["n_experts"] == 14  # n × top-k, capped at the layer's experts
    dense = {"curve": [{"positions": 1, "whole_ms": 1.0, "by_block": {"dense_mlp": {"ms": 1.0, "floor_ms": 0.1}}}]}
    assert expert_union_data(dense) == {}  # no MoE: said, not drawn empty


def test_tune_data_groups_rows_by_drafter_and_marks_the_recommendation():
    tune = {"recommendation": {"drafter": "mtp", "k": 2, "predicted_speedup": 1.2, "measured_speedup": 1.1},
            "rows": [{"drafter": "mtp", "k": 2, "predicted_speedup": 1.2, "predicted_ci95": [1.1, 1.3], "measured_speedup": 1.1},
                     {"drafter": "mtp", "k": 1, "predicted_speedup": 1.1, "predicted_ci95": [1.0, 1.2], "measured_speedup": None},
                     {"drafter": "ngram", "k": 1, "predicted_speedup": 0.9, "predicted_ci95": None, "measured_speedup": 0.8}]}
    d = tune_data(tune)
    mtp = d["drafters"][0]
    assert mtp["name"] == "mtp" and mtp["k"] == [1, 2] and mtp["measured"] == [None, 1.1] and mtp["lo"] == [1.0, 1.1]
    assert d["drafters"][1]["lo"] == [None]
    assert d["recommended"]["k"] == 2 and d["recommended"]["speedup"] == 1.1
    assert tune_data({"rows": []}) is None


def test_pages_show_the_sessions_results(window, qtbot, tmp_path):
    window.model.session.data["roofline"] = _roof()
    window.model.session.data["tune"] = {"recommendation": {"drafter": "ngram", "k": 1, "text": "no k wins here"},
                                         "rows": [{"drafter": "ngram", "k": 1, "predicted_speedup": 0.9,
                                                   "predicted_ci95": [0.8, 1.0], "measured_speedup": 0.85, "prediction_error": 0.06}]}
    for page in ("verify_cost", "tune"):
        window.show_page(page)
        window.model.flush()
    vc, tv = window.verify_cost, window.tune
    assert vc.curve.measured.getData()[0].tolist() == [1, 2, 4]
    assert vc.t_ideal.value.text() == "0.25 plain steps"
    assert [vc.cat_n.itemText(i) for i in range(vc.cat_n.count())] == ["1", "2", "3", "4"]
    assert tv.recommendation.text() == "no k wins here"
    assert tv.table.rowCount() == 1 and tv.table.item(0, COLUMNS.index("error")).text() == "+6.0%"
    png = tmp_path / "verify_cost.png"
    window.show_page("verify_cost")
    assert window.grab_png(str(png)) and png.stat().st_size > 10_000


def test_division_page_shows_the_prediction_beside_the_ledger(window, qtbot):
    """A schema-1 session timed no components apart: with a verify curve kept in it, the prediction comes from the
    curve (T_verify(k+1) and T_decode from it, T_draft timed apart, E from the run); the ledger sits beside it."""
    import json
    from pathlib import Path

    from specscope.profiler.session.session import Session

    d = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "session_v1_demo.json").read_text(encoding="utf-8"))
    k = d["config"]["num_draft_tokens"]
    d["roofline"] = {"curve": [{"positions": n, "whole_ms": 30.0 * n} for n in range(1, k + 2)],
                     "division": {"drafter": d["config"]["drafter"]["name"], "k": k, "t_draft_ms": 10.0}}
    path = window.autosave_dir / "with_roofline.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    Session.from_dict(d).save(path)
    window.open_session(str(path))
    window.show_page("division")
    s = summarize(window.model.session)
    E = s["tokens_per_round"]
    assert s["prediction_source"] == "verify curve"
    # T_decode is the plain run's, T_verify(k+1) and T_draft the curve's: E · T_decode / (T_verify + T_draft)
    assert window.division.t_pred.value.text() == f"{E * s['t_decode_ms'] / (30.0 * (k + 1) + 10.0):.3f}×"
    ledger = window.division.t_comp
    assert ledger.value.text() == f"{s['ledger_speedup']:.3f}×" and "vs measured" in ledger.note.text()


def test_reports_draw_the_verify_cost_and_tune_charts(qtbot, tmp_path):
    import json
    from pathlib import Path

    from specscope.gui.reports.html import render
    from specscope.profiler.session.session import Session

    d = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "session_demo.json").read_text(encoding="utf-8"))
    assert 'alt="verify_cost chart"' not in render(Session.from_dict(d))  # nothing measured: no section, no chart
    d["roofline"] = {**_roof(), "headline": "An ideal verify would cost …"}
    d["tune"] = {"recommendation": {"drafter": "mtp", "k": 1, "text": "use k=1 with the MTP head"},
                 "rows": [{"drafter": "mtp", "k": 1, "predicted_speedup": 1.1, "predicted_ci95": [1.0, 1.2],
                           "measured_speedup": 1.05, "prediction_error": 0.05}]}
    html = render(Session.from_dict(d))
    for name in ("verify_cost", "tune"):
        assert f'alt="{name} chart"' in html
    assert "An ideal verify would cost" in html and "use k=1 with the MTP head" in html and "chart unavailable" not in html


def test_the_tune_section_says_what_measured_means_for_the_tune_it_shows():
    """A tune saved with the pooled measurement says so; one saved before it (no ``measured_method``) keeps its own
    meaning, the median of per-repeat ratios."""
    import json
    from pathlib import Path

    from specscope.gui.reports.html import render
    from specscope.profiler.session.session import Session

    d = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "session_demo.json").read_text(encoding="utf-8"))
    tune = {"recommendation": {"text": "no k wins here"}, "confirm_reps": 6,
            "rows": [{"drafter": "mtp", "k": 1, "predicted_speedup": 0.6, "predicted_ci95": [0.5, 0.7],
                      "measured_speedup": 0.62, "prediction_error": -0.032}]}
    old = render(Session.from_dict({**d, "tune": tune}))
    new = render(Session.from_dict({**d, "tune": {**tune, "measured_method": "pooled"}}))
    assert "median of per-repeat ratios" in old and "pooled rates" not in old
    assert "pooled rates" in new and "median of per-repeat ratios" not in new
    assert "-3.2%" in new or "−3.2%" in new


def _composed_m2(with_roofline: bool = True) -> dict:
    """The demo session (recorded on Linux) with its environment edited to name an Apple M2 on the GPU — composed: no
    M2 session was recorded — and the hand-made verify curve above as its roofline (n = 2 measured 1.75 steps)."""
    import json
    from pathlib import Path

    d = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "session_demo.json").read_text(encoding="utf-8"))
    d["environment"] = {**d["environment"], "device": "Device(gpu, 0)", "device_name": "Apple M2", "chip": "Apple M2",
                        "os": "Darwin 24.1.0", "machine": "arm64"}
    if with_roofline:
        d["roofline"] = {**_roof(), "chip": "Apple M2", "device": "Device(gpu, 0)", "k": 1,
                         "headline": "An ideal 2-position verify …", "t_decode_ms": 4.0}
    return d


def _open(window, d: dict, name: str) -> None:
    from specscope.profiler.session.session import Session

    path = window.autosave_dir / name
    path.parent.mkdir(parents=True, exist_ok=True)
    Session.from_dict(d).save(path)
    window.open_session(str(path))
    window.show_page("verify_cost")
    window.model.flush()


def test_verify_cost_page_states_the_m2s_public_figure_beside_this_sessions_curve(window, qtbot):
    _open(window, _composed_m2(), "m2.json")
    text = window.verify_cost.chip_facts.text()
    assert "Apple M2 (GPU generation 14): qmv_wide does not apply" in text and "measured on this chip" in text
    assert "M2, a verify: 2 positions cost 1.725× one decode step (ml-explore/mlx-lm#990)" in text
    assert "this machine: 1.75× at n = 2" in text  # the curve's 7.0 ms / 4.0 ms, at the figure's own width
    assert "mlx-lm#990" in window.verify_cost.chip_facts.toolTip()


def test_verify_cost_page_on_a_cpu_session_says_the_chip_facts_do_not_apply_and_shows_no_figure(window, qtbot):
    import json
    from pathlib import Path

    d = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "session_demo.json").read_text(encoding="utf-8"))
    _open(window, d, "cpu_bare.json")  # no roofline: the environment's CPU device
    assert "do not apply here" in window.verify_cost.chip_facts.text()
    # the page follows the session, roofline or not: the M2 session (none of its own either) shows the M2's figure
    _open(window, _composed_m2(with_roofline=False), "m2_bare.json")
    assert "1.725×" in window.verify_cost.chip_facts.text() and "n = 2 not measured" in window.verify_cost.chip_facts.text()
    d["roofline"] = {**_roof(), "device": "Device(cpu, 0)", "headline": "…"}
    _open(window, d, "cpu.json")
    text = window.verify_cost.chip_facts.text()
    assert "do not apply here" in text and "CPU backend" in text
    assert "1.725" not in text and "this machine:" not in text


def test_the_reports_cost_section_cites_the_chips_figure_or_says_it_does_not_apply(qtbot):
    import json
    from pathlib import Path

    from specscope.gui.reports.html import render
    from specscope.profiler.session.session import Session

    m2 = render(Session.from_dict(_composed_m2()))
    assert "<b>By chip.</b> Apple M2 (GPU generation 14)" in m2 and "ml-explore/mlx-lm#990" in m2
    assert "this machine: 1.75× at n = 2" in m2
    d = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "session_demo.json").read_text(encoding="utf-8"))
    d["roofline"] = {**_roof(), "device": "Device(cpu, 0)", "headline": "…"}
    cpu = render(Session.from_dict(d))
    assert "<b>By chip.</b>" in cpu and "do not apply here" in cpu and "1.725" not in cpu


def test_the_chip_line_vouches_only_for_widths_the_curve_measured_against_a_usable_n_1():
    from specscope.gui.chip_text import chip_comparison

    env = _composed_m2(with_roofline=False)["environment"]
    no_unit = chip_comparison(env, {"curve": [{"positions": 2, "whole_ms": 3.0}]})  # no n = 1: no decode step
    assert no_unit["lines"][0].endswith("this machine: n = 2 not measured")
    bad = chip_comparison(env, {"curve": [{"positions": 1, "whole_ms": 2.0}, {"positions": 2, "whole_ms": -1.0}]})
    assert bad["lines"][0].endswith("this machine: n = 2 not measured")
    assert chip_comparison({}, None)["head"].endswith("no chip recorded in this session.")


def test_the_experts_legend_stays_above_a_small_models_lines(qtbot):
    """A model of 8 experts, 2 a token: its lines reach 8 at most. The legend (top right) sits above them at the
    page's size, not on them (at the bottom right it covered the measured line)."""
    import json
    from pathlib import Path

    import pyqtgraph as pg

    from specscope.gui.charts.verify_cost import ExpertUnionChart
    from specscope.gui.theme import LIGHT

    roof = json.loads((Path(__file__).resolve().parent / "fixtures" / "session_surface.json").read_text())["roofline"]
    d = expert_union_data(roof)
    assert d is not None and d["n_experts"] == 8
    c = ExpertUnionChart(LIGHT)
    qtbot.addWidget(c)
    c.resize(420, 240)
    c.show()
    c.set_data(d)
    qtbot.waitUntil(lambda: c.legend.isVisible())
    pg.QtWidgets.QApplication.processEvents()
    c.set_data(d)
    bottom = c.plot_item.vb.mapSceneToView(c.legend.mapToScene(c.legend.boundingRect().bottomLeft())).y()
    top_line = max([y for y in d["distinct"] + (d.get("bound") or []) if y is not None] + [d["n_experts"]])
    assert bottom > top_line, (bottom, top_line)
