"""What a person reads is true and whole: the setup panel describes the shown session's model, output panes show
every token, the status bar keeps its message apart from the session information, the session folder is named
once, the report's probe row says what the readings show."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest
from PySide6 import QtWidgets

from specscope.profiler.session.session import Session
from specscope.profiler.analysis.summary import summarize

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "tests" / "fixtures" / "session_demo.json"
REAL = ROOT / "tests" / "fixtures" / "session_real_shape.json"

pytestmark = pytest.mark.timeout(300)


def _window(qtbot, settings, folder):
    from specscope.gui.main_window import MainWindow

    w = MainWindow(settings=settings, autosave_dir=str(folder))
    qtbot.addWidget(w)
    w.resize(1440, 900)
    w.show()
    return w


def test_setup_panel_describes_the_opened_sessions_model_not_the_demo(qtbot, settings, tmp_path):
    real = json.loads(REAL.read_text())
    model = real["model"]
    assert model["name"] and not real["config"].get("demo")
    w = _window(qtbot, settings, tmp_path)
    try:
        # the panel starts on the demo (the default pick); open a session of another model
        w.open_session(str(REAL))
        combo, line = w.setup.model_combo.currentText(), w.setup.compat.text()
        assert "Built-in demo" not in combo
        assert model["name"] in line and "This session's model" in line
        assert f"{model['layers']} layers" in line
        assert f"{model['experts']} experts, {model['experts_per_token']} per token" in line
        assert f"{model['quantization']['bits']}-bit" in line
        assert "released dimensions" in line  # what kind of model it is: random weights at real shapes
        assert "synthetic demo" not in line
        assert w.setup.config().model == real["config"]["model_path"] and not w.setup.config().demo
        # back to a demo session (as the History page opens it): the panel follows
        copy = tmp_path / "demo.json"
        shutil.copy(DEMO, copy)
        w._open_from_history(str(copy))
        assert w.setup.model_combo.currentText().startswith("Built-in demo")
        assert "synthetic demo" in w.setup.compat.text() and model["name"] not in w.setup.compat.text()
        assert w.setup.config().demo
    finally:
        w.setup.inspector.shutdown()


def test_the_model_box_names_the_demo_the_session_ran_and_run_repeats_it(qtbot, settings, tmp_path):
    """A random-demo session is not the trained demo: the box says which, and Run would load that one."""
    from specscope.engine_adapter.model.demo_model import trained_demo_path

    trained = json.loads(DEMO.read_text())
    trained["model"]["demo"] = json.loads((trained_demo_path("hybrid") / "config.json").read_text())["specscope_demo"]
    p = tmp_path / "trained.json"
    p.write_text(json.dumps(trained))
    w = _window(qtbot, settings, tmp_path)
    try:
        w.open_session(str(DEMO))  # the bundled session ran the random demo
        assert w.setup.model_combo.currentText() == "Built-in demo (random)"
        assert "synthetic demo" in w.setup.compat.text()
        cfg = w.setup.config()
        assert cfg.demo and cfg.demo_variant == "random" and cfg.model is None
        w.open_session(str(p))
        assert w.setup.model_combo.currentText() == "Built-in demo (tiny trained)"
        assert "tiny trained demo" in w.setup.compat.text()
        assert w.setup.config().demo and w.setup.config().demo_variant is None
    finally:
        w.setup.inspector.shutdown()


def test_a_session_whose_model_folder_is_elsewhere_is_named_not_replaced(qtbot, settings, tmp_path):
    data = json.loads(DEMO.read_text())
    data["config"].update(demo=False, model="/nowhere/Qwen3.5-35B-A3B-4bit", model_path="/nowhere/Qwen3.5-35B-A3B-4bit")
    data["model"].update(name="mlx-community/Qwen3.5-35B-A3B-4bit", path="/nowhere/Qwen3.5-35B-A3B-4bit", demo=None,
                         layers=40, experts=256, experts_per_token=8)
    p = tmp_path / "other.json"
    p.write_text(json.dumps(data))
    w = _window(qtbot, settings, tmp_path)
    try:
        w.open_session(str(p))
        assert "not on this machine" in w.setup.model_combo.currentText()
        assert "mlx-community/Qwen3.5-35B-A3B-4bit" in w.setup.compat.text()
        assert "256 experts, 8 per token" in w.setup.compat.text()
    finally:
        w.setup.inspector.shutdown()


def test_output_panes_mark_tokens_that_decode_to_nothing(qtbot):
    from specscope.gui.charts.common import LIGHT
    from specscope.gui.session_model import SessionModel
    from specscope.gui.views.cases import CasesView

    s = Session.load(DEMO)
    case = s.cases[0]
    n_plain, n_spec = len(case["plain"]["tokens"]), len(case["spec"]["tokens"])
    case["plain_pieces"] = ["" if i % 3 == 0 else "a" for i in range(n_plain)]
    case["spec_pieces"] = ["\ufffd" if i == 1 else "\x07" if i == 2 else "" for i in range(n_spec)]
    view = CasesView(LIGHT)
    qtbot.addWidget(view)
    model = SessionModel()
    model.cases_changed.connect(view.update_cases)
    model.reset(s, autosave_path=None)
    model.flush()
    view.select_case(case["id"])
    plain, spec = view.plain_text.toPlainText(), view.spec_text.toPlainText()
    assert plain.count("⟨#") == len(range(0, n_plain, 3))
    assert f"⟨#{case['plain']['tokens'][0]}⟩" in plain
    assert spec.count("⟨#") == n_spec and f"⟨#{case['spec']['tokens'][1]}⟩" in spec
    assert "no text of its own" in view.legend.text()


def test_status_bar_message_never_covers_the_session_information(qtbot, settings, tmp_path):
    from specscope.gui.fonts import CJK_HINT

    w = _window(qtbot, settings, tmp_path)
    try:
        w.open_session(str(DEMO))
        for size in ((1280, 800), (1440, 900)):
            w.resize(*size)
            w.statusBar().showMessage(CJK_HINT)
            for _ in range(3):
                QtWidgets.QApplication.processEvents()
            msg = w.statusBar().message
            assert w.statusBar().currentMessage() == CJK_HINT
            right = [w.sb_status, w.sb_device, w.sb_mlx, w.sb_mem]
            for lab in right:
                assert lab.isVisible() and lab.width() >= lab.sizeHint().width(), lab.text()
                assert not msg.geometry().intersects(lab.geometry()), (msg.geometry(), lab.text(), lab.geometry())
            assert msg.elided and msg.toolTip() == CJK_HINT
            assert msg.shown_text().endswith("…") and msg.text() == CJK_HINT
    finally:
        w.setup.inspector.shutdown()


@pytest.mark.skipif(sys.platform != "linux", reason="XDG_DATA_HOME is the Linux convention")
def test_session_folder_names_the_app_once_and_moves_the_doubled_one(tmp_path, monkeypatch):
    from specscope.gui.window_files import sessions_dir

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    legacy = tmp_path / "specscope" / "specscope" / "sessions"
    legacy.mkdir(parents=True)
    (legacy / "session-1.json").write_text("{}")
    d = sessions_dir()
    assert d == tmp_path / "specscope" / "sessions"
    assert (d / "session-1.json").exists() and not legacy.exists()
    assert sessions_dir() == d


def test_report_probe_row_shows_the_readings_when_too_few_to_judge():
    from specscope.gui.reports import html

    s = Session.load(DEMO)
    ms = [15.55, 16.39, 16.74, 30.84]
    s.data["probe"] = [{"case": s.cases[i // 2]["id"], "repeat": 0, "when": ("before", "after")[i % 2], "ms": x,
                        "reps_ms": [x * 0.99, x, x * 1.01], "t": 5.0 * i} for i, x in enumerate(ms)]
    page = html.build(s, charts={}, target="screen")
    row = re.search(r"Probe start → end</t[hd]>\s*<td[^>]*>(.*?)</td>", page, re.S)
    assert row, "no probe row"
    assert "—" not in row.group(1)
    assert "15.55 ms → 30.84 ms" in row.group(1) and "too few to judge" in row.group(1)
    assert "first 15.55 ms, last 30.84 ms: +98.3%" in page


def test_slow_rates_are_not_printed_as_zero(qtbot):
    """A real-shape model on a loaded CPU decodes at 0.03 tok/s: one decimal would say 0.0 tok/s."""
    from specscope.gui.charts.common import LIGHT
    from specscope.gui.views.live import LiveView
    from specscope.profiler.analysis.formatting import rate
    from specscope.profiler.analysis.summary_text import format_summary

    assert (rate(0.03162, " tok/s"), rate(21.83), rate(0.0), rate(None)) == ("0.0316 tok/s", "21.8", "0.0", "—")
    s = Session.load(REAL)
    spec = summarize(s)["spec_tok_s"]
    assert 0 < spec < 0.05
    view = LiveView(LIGHT)
    qtbot.addWidget(view)
    from specscope.gui.charts.data import all_chart_data

    snap = all_chart_data(s)
    snap.update(status=s.status, errors=[], model=s.data.get("model", {}), config=s.config)
    view.update_snapshot(snap)
    assert view.t_spec.value.text() == f"{spec:.3g} tok/s" and view.t_spec.value.text() != "0.0 tok/s"
    assert f"speculative       {spec:.3g} tok/s" in format_summary(s)


def test_breakdown_page_says_a_session_without_one_will_not_get_one(qtbot):
    from specscope.gui.charts.common import LIGHT
    from specscope.gui.charts.data import all_chart_data
    from specscope.gui.views.breakdown import BreakdownView

    s = Session.load(REAL)
    assert s.config.get("breakdown") is False
    view = BreakdownView(LIGHT)
    qtbot.addWidget(view)
    snap = all_chart_data(s)
    snap.update(status=s.status, errors=[], model=s.data.get("model", {}), config=s.config)
    view.update_snapshot(snap)
    assert "recorded without the breakdown" in view.rulers.text() and "yet" not in view.rulers.text()


def test_history_names_a_real_shape_session_as_random_weights_not_the_demo(qtbot, tmp_path):
    from specscope.gui.charts.common import LIGHT
    from specscope.gui.views.history import HistoryView

    for src in (DEMO, REAL):
        shutil.copy(src, tmp_path / src.name)
    view = HistoryView(LIGHT, lambda: tmp_path)
    qtbot.addWidget(view)
    view.refresh()
    qtbot.waitUntil(lambda: not view.busy() and view.row_count() == 2, timeout=20000)
    models = sorted(r[1] for r in view.row_texts())
    assert models[0].endswith("(demo)") and "random weights, qwen3.5-35b-a3b shape" in models[1]


def test_report_names_a_real_shape_model_for_what_it_is():
    from specscope.gui.reports import html

    page = html.build(Session.load(REAL), charts={}, target="screen")
    assert "random weights at qwen3.5-35b-a3b&#x27;s released dimensions (4 layers)" in page or \
        "random weights at qwen3.5-35b-a3b's released dimensions (4 layers)" in page
    assert "Synthetic demo model:" not in page and "1 case × 8 new tokens" in page


def test_roofline_headline_does_not_call_an_unsplit_gap_no_gap():
    from specscope.profiler.analysis.roofline import headline

    text = headline({"k": 2, "ideal_verify_multiple": 3.0, "verify_multiple": 4.0, "gap_shares": {}})
    assert "no gap" not in text and "a gap of 1.0 plain steps, not split by block" in text
    assert headline({"k": 2, "ideal_verify_multiple": 3.0, "verify_multiple": 2.9, "gap_shares": {}}).endswith("no gap to close.")


def test_the_setup_panel_takes_the_sessions_draft_model_too(qtbot, settings, tmp_path):
    """A draft-model session opened: the draft-model field holds its folder (it showed the demo placeholder), so Run
    repeats the session; a demo session with the demo's own draft model leaves the field empty."""
    d = json.loads(DEMO.read_text())
    d["config"].update(drafter={"name": "draft", "kind": "draft"}, draft_model="/somewhere/my-draft")
    p = tmp_path / "draft.json"
    p.write_text(json.dumps(d))
    w = _window(qtbot, settings, tmp_path)
    try:
        w.open_session(str(p))
        assert w.setup.drafter.currentData() == "draft"
        assert w.setup.draft_model.text() == "/somewhere/my-draft" and w.setup.config().draft_model == "/somewhere/my-draft"
        d["config"]["draft_model"] = None
        p.write_text(json.dumps(d))
        w.open_session(str(p))
        assert w.setup.draft_model.text() == ""
    finally:
        w.setup.inspector.shutdown()
