"""The Context page draws a sweep's figures (from the session a sweep folds, live or loaded), and what it sweeps."""

from __future__ import annotations

from specscope.gui.charts.common import LIGHT
from specscope.gui.views.context import ContextView, chart_data

ROW = {"context": 0, "plain_tok_s": 10.0, "spec_tok_s": 12.0, "t_decode_ms": 100.0, "t_verify_ms": 150.0, "t_draft_ms": 10.0,
       "verify_multiple": 1.5, "full_attention_share_decode": 0.1, "full_attention_share_verify": 0.08,
       "blocks_decode": {"linear_attention": 30.0, "full_attention": 10.0, "moe": 50.0, "output_head": 5.0, "other": 5.0},
       "p": 0.6, "p_ci95": [0.5, 0.7], "tokens_per_round": 2.0, "predicted_speedup": 1.2, "measured_speedup": 1.1,
       "measured_speedup_ci95": [1.0, 1.2], "break_even_multiple": 1.9, "prefill_ms": None}


def test_page_draws_the_figures_of_each_context(qtbot):
    v = ContextView(LIGHT)
    qtbot.addWidget(v)
    v._show({"points": [ROW]})
    assert v.table.rowCount() == 1
    v._show({"points": [ROW, {**ROW, "context": 4096, "t_verify_ms": 250.0, "verify_multiple": 2.5, "prefill_ms": 98_000.0}]})
    assert v.table.rowCount() == 2 and v.table.item(1, 0).text() == "4k" and "98.0 s" in v.table.item(1, 12).text()
    assert "dominant: verify cost" in v.headline.text()


def test_chart_data_block_split_is_in_percent():
    d = chart_data([ROW])
    assert [s["name"] for s in d["split"]["series"]][:2] == ["linear attention", "full attention"]
    assert d["split"]["series"][1]["y"] == [10.0]
    assert d["speedup"]["series"][1]["lo"] == [1.0]


# -- the setup panel's context field (a single run: run --context N --context-kind K / --context-file FILE) ----------

def _panel(qtbot, settings):
    from specscope.gui.setup_panel import SetupPanel

    panel = SetupPanel(settings)
    qtbot.addWidget(panel)
    return panel


def _worker_config(panel) -> dict:
    """What the app hands the worker: its command line carries the RunConfig as JSON (profiler.run.runner)."""
    import json

    from specscope.profiler.run.runner import worker_command

    cfg = panel.config()
    cfg.validate()
    return json.loads(worker_command(cfg)[-1])


def test_the_setup_panels_context_field_reaches_the_workers_command_line(qtbot, settings, tmp_path):
    import pytest

    from specscope.errors import SpecscopeError
    from specscope.profiler.run.config import RunConfig

    panel = _panel(qtbot, settings)
    try:
        assert _worker_config(panel)["context"] == 0 and not panel.context_size.isEnabled()  # none by default
        panel.context_mode.setCurrentIndex(panel.context_mode.findData("shipped"))
        panel.context_size.setText("16k")
        panel.context_kind.setCurrentText("code")
        w = _worker_config(panel)
        assert (w["context"], w["context_kind"], w["context_file"]) == (16384, "code", None)
        assert RunConfig.from_dict(w).context == 16384  # the worker reads it back as `run --context 16k --context-kind code`
        doc = tmp_path / "notes.txt"
        doc.write_text("some text", encoding="utf-8")
        panel.context_mode.setCurrentIndex(panel.context_mode.findData("file"))
        assert panel.context_file.isEnabled() and not panel.context_kind.isEnabled()
        with pytest.raises(SpecscopeError, match="choose the context file"):
            panel.config()
        panel.context_file.setText(str(doc))
        panel.context_size.setText("300")
        w = _worker_config(panel)
        assert (w["context"], w["context_file"]) == (300, str(doc))
        for bad in ("lots", "0"):  # refused with the reason, before anything starts
            panel.context_size.setText(bad)
            with pytest.raises(SpecscopeError, match="context size|above 0"):
                panel.config()
        panel.context_size.setText("2k")
        panel.save_settings()
        again = _panel(qtbot, settings)  # the choice persists like every other field
        assert again.config().context == 2048 and again.config().context_file == str(doc)
        again.inspector.shutdown()
    finally:
        panel.inspector.shutdown()


def test_the_setup_panels_context_field_follows_a_loaded_session(qtbot, settings):
    import json
    from pathlib import Path

    demo = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "session_demo.json").read_text())
    panel = _panel(qtbot, settings)
    try:
        panel.show_session({**demo, "config": {**demo["config"], "context": 4096, "context_kind": "chinese"}})
        cfg = panel.config()
        assert (cfg.context, cfg.context_kind, cfg.context_file) == (4096, "chinese", None)
        assert panel.context_mode.currentData() == "shipped" and panel.context_size.text() == "4k"
        panel.show_session({**demo, "config": {**demo["config"], "context": 1000, "context_file": "/data/doc.txt"}})
        assert panel.config().context_file == "/data/doc.txt" and panel.context_size.text() == "1000"
        panel.show_session(demo)  # a session without a context: back to none
        assert panel.config().context == 0 and panel.context_mode.currentData() == "none"
    finally:
        panel.inspector.shutdown()


def test_the_context_page_sweeps_the_setup_panels_context_file(qtbot, settings):
    from specscope.profiler.run.config import RunConfig

    v = ContextView(LIGHT)
    qtbot.addWidget(v)
    v.contexts.setText("0, 1k")
    cfg = v.config_for(RunConfig(demo=True, context_file="/data/doc.txt", num_draft_tokens=3))
    assert isinstance(cfg, RunConfig) and cfg.sweep == [0, 1024] and cfg.context == 0
    assert cfg.context_file == "/data/doc.txt" and cfg.num_draft_tokens == 3 and cfg.demo
    assert v.config_for(RunConfig(demo=True, context_kind="code")).context_kind == "code"


# -- what a sweep session shows: its own verdict and status, charts that keep every value in sight ------------------

def _sweep_file(tmp_path):
    """A sweep session (contexts 0 and 1k) whose points hold the demo fixture's cases; no model runs."""
    import copy
    import json
    from pathlib import Path

    from specscope.profiler.session.schema import migrate_names
    from specscope.profiler.session.session import Session

    base = migrate_names(json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "session_demo.json").read_text()))
    top = Session()
    top.apply({"event": "run_started", "config": {**base["config"], "sweep": [0, 1024]}, "environment": base["environment"],
               "model": base["model"], "cases": []})
    top.apply({"event": "sweep_started", "contexts": [0, 1024], "order": [0, 1024, 1024, 0], "passes": 2, "kind": "mixed"})
    top.apply({"event": "context", "context": 1024, "tokens": 1024, "prefill_ms": 40_000.0, "kv_bytes": 1000})
    for p in top.data["sweep"]["points"]:
        p["session"]["cases"] = copy.deepcopy(base["cases"])
        p["complete"], p["visits"] = True, 2
    top.data["status"] = "complete"
    path = tmp_path / "sweep.json"
    top.save(path)
    return path


def test_a_sweep_session_speaks_of_the_sweep_not_of_cases_it_does_not_have(window, tmp_path):
    window.open_session(str(_sweep_file(tmp_path)))
    window.model.flush()
    head, status = window.verdict.headline.text(), window.sb_status.text()
    assert "No verdict yet" not in head and "the verdict is per context" in head and "0, 1k" in head
    assert "context sweep: 2 contexts × " in status and "0/" not in status
    assert "context sweep: 2 contexts" in window.verdict.detail.text()
    assert window.tabs.currentWidget() is window.context and window.context.table.rowCount() == 2


def test_a_negative_value_stays_on_the_chart_marked_as_noise(qtbot):
    import pyqtgraph as pg

    from specscope.gui.charts.context import ContextChart

    rows = [ROW, {**ROW, "context": 1024, "t_draft_ms": -200.0}]
    c = ContextChart(LIGHT, "Verify and draft cost vs context", ("multiple of T_decode", "×"))
    qtbot.addWidget(c)
    c.set_data(chart_data(rows)["verify"])
    y0, y1 = c.plot_item.vb.viewRange()[1]
    assert y0 < -2.0 < 1.9 < y1  # T_draft / T_decode = -2 is inside the axis, the break-even 1.9 too
    notes = [it for it in c.items if isinstance(it, pg.TextItem)]
    assert len(notes) == 1 and "noise" in notes[0].toPlainText()
    assert not [it for it in c.items if isinstance(it, pg.TextItem) and it is not notes[0]]


def test_the_block_split_keeps_its_legend_above_the_areas(qtbot):
    from specscope.gui.charts.context import ContextChart

    c = ContextChart(LIGHT, "Decode step by block vs context", ("share of the block sum", "%"))
    qtbot.addWidget(c)
    c.set_data(chart_data([ROW, {**ROW, "context": 16384}])["split"])
    assert c.legend.columnCount == 3  # five names in two rows, not five rows down the largest context's area
    assert c.plot_item.vb.viewRange()[1][1] >= 150  # headroom above the 100% the areas reach


def test_the_clock_probe_runs_on_one_clock_across_a_sweeps_visits():
    from specscope.gui.charts.data import _run_times

    series = [{"t": 1.0}, {"t": 5.0}, {"t": 0.5}, {"t": 3.0}, {"t": 0.2}]  # each visit restarts its clock
    assert _run_times(series) == [1.0, 5.0, 5.5, 8.0, 8.2]
    assert _run_times([{"t": 2.0}, {}, {"t": 1.0}]) == [2.0, None, 3.0]  # a reading without a time keeps its place


def test_a_negative_draft_is_below_noise_and_a_lost_break_even_out_of_reach(qtbot):
    """The table never prints a negative time (T_draft is a round less the verify timed before it) and says "out of
    reach" where the summary gives no break-even because the round's other terms alone reach E·T_decode."""
    from specscope.gui.reports.html_context import _draft

    v = ContextView(LIGHT)
    qtbot.addWidget(v)
    lost = {**ROW, "context": 4096, "t_draft_ms": -3.2, "break_even_multiple": None, "break_even_out_of_reach": True}
    v._show({"points": [ROW, lost]})
    cells = [v.table.item(1, j).text() for j in range(v.table.columnCount())]
    assert cells[5] == "below noise" and not any("-3.2" in c or "−3.2" in c for c in cells)
    assert cells[11] == "out of reach" and v.table.item(0, 11).text() == "≤ 1.90× T_dec"
    # a point without the flag (older figures): a priced round with no break-even is out of reach too
    assert v.table.item(1, 11).text() == "out of reach"
    old = {k: x for k, x in lost.items() if k != "break_even_out_of_reach"}
    v._show({"points": [old]})
    assert v.table.item(0, 11).text() == "out of reach"
    assert "below noise" in _draft(lost) and "-3.2" not in _draft(lost)
