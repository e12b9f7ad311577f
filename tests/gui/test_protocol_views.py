"""The protocol in the app and the reports: the probe series plotted on the Live page with its drift warning,
repeats' spreads, --cooldown / --discard-first in the setup panel, and no negative time in the Breakdown page
or the HTML report (below noise instead)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from specscope.profiler.session.session import Session
from specscope.profiler.analysis.summary import summarize

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "session_demo.json"
NEGATIVE_NUMBER = re.compile(r"(?<![\w.])[-−]\d")


def _load(name: str, rel: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / rel)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


noisy_session = _load("_no_negative", "tests/profiler/analysis/test_no_negative_time.py").noisy_session


def with_probe(session: Session, drift: bool) -> Session:
    """The session with a probe series (before/after every case), slowing by a third halfway when ``drift``."""
    ms = [10.0, 10.1, 10.0, 10.2, 10.1, 10.0] if not drift else [10.0, 10.1, 10.0, 13.5, 13.8, 13.6]
    session.data["probe"] = [{"case": session.cases[i // 2]["id"], "repeat": 0, "when": ("before", "after")[i % 2],
                              "ms": x, "reps_ms": [x * 0.99, x, x * 1.01], "t": 5.0 * i} for i, x in enumerate(ms)]
    return session


def snapshot(session: Session) -> dict:
    from specscope.gui.charts.data import all_chart_data

    snap = all_chart_data(session)
    snap.update(status=session.status, errors=[], model=session.data.get("model", {}), config=session.config)
    return snap


def test_probe_series_is_plotted_under_throughput_with_the_drift_warning(qtbot):
    from specscope.gui.charts.common import LIGHT
    from specscope.gui.views.live import LiveView
    from specscope.gui.views.verdict_bar import VerdictBar

    view = LiveView(LIGHT)
    qtbot.addWidget(view)
    s = with_probe(Session.load(FIXTURE), drift=True)
    snap = snapshot(s)
    view.update_snapshot(snap)
    x, y = view.probe.probe.getData()
    assert list(x) == [0.0, 5.0, 10.0, 15.0, 20.0, 25.0]
    assert list(y) == pytest.approx([100.0 * 10.0 / v for v in (10.0, 10.1, 10.0, 13.5, 13.8, 13.6)])
    assert "DRIFT" in view.probe.plot_item.titleLabel.text
    assert view.probe.band.isVisible()  # the probe's own noise, as a band under 100%
    assert view.charts.index(view.probe) == 1  # right under the throughput chart
    bar = VerdictBar()
    qtbot.addWidget(bar)
    bar.update_snapshot(snap)
    assert not bar.drift.isHidden() and "Drift warning: the clock probe slowed by +36.3%" in bar.drift.text()  # 13.7 / 10.05
    # no drift: no warning, no red title
    calm = snapshot(with_probe(Session.load(FIXTURE), drift=False))
    view.update_snapshot(calm)
    bar.update_snapshot(calm)
    assert "DRIFT" not in view.probe.plot_item.titleLabel.text and bar.drift.isHidden()


def test_repeats_spread_and_prediction_interval_on_the_live_tiles(qtbot):
    from specscope.gui.charts.common import LIGHT
    from specscope.gui.views.live import LiveView

    view = LiveView(LIGHT)
    qtbot.addWidget(view)
    s = Session.load(FIXTURE)
    for c in s.cases:  # a second repeat, a little slower
        c["plain"]["repeats_tok_s"].append(c["plain"]["repeats_tok_s"][0] * 0.9)
        c["spec"]["repeats_tok_s"].append(c["spec"]["repeats_tok_s"][0] * 0.9)
    view.update_snapshot(snapshot(s))
    sm = summarize(s)
    lo, hi = sm["plain_tok_s_spread"]
    assert view.t_plain.caption.text() == f"Plain decoding · pooled, repeats {lo:.1f}–{hi:.1f}"
    # the error with its interval, and the verdict: 3 cases × 24 tokens are too little to judge, and it says so
    from specscope.profiler.analysis.verdict import prediction_short

    assert prediction_short(sm) in view.t_speed.note.text() and "…" in view.t_speed.note.text()
    assert sm["prediction_verdict"]["state"] == "too_little_data" and "within noise" not in view.t_speed.note.text()


def test_breakdown_page_never_shows_a_negative_time(qtbot):
    from specscope.gui.charts.common import LIGHT
    from specscope.gui.views.breakdown import BreakdownView

    view = BreakdownView(LIGHT)
    qtbot.addWidget(view)
    view.resize(1400, 800)
    view.update_snapshot(snapshot(noisy_session()))
    t = view.table
    cells = [t.item(r, c).text() for r in range(t.rowCount()) for c in range(1, t.columnCount()) if t.item(r, c)]
    assert cells and not any(NEGATIVE_NUMBER.search(x) for x in cells), cells
    assert sum(x == "below noise" for x in cells) >= 4  # inter-block (decode, verify), output head (decode, verify)
    assert not NEGATIVE_NUMBER.search(view.rulers.text()) and "below noise" in view.rulers.text()
    drawn = [it.textItem.toPlainText() for it in view.chart.items if hasattr(it, "textItem")]
    assert any("inter-block overhead below noise" in x for x in drawn)
    assert not any(NEGATIVE_NUMBER.search(x) for x in drawn if "ms" in x), drawn


def test_html_report_protocol_section_drift_note_and_no_negative_time():
    from specscope.gui.reports import html

    s = with_probe(noisy_session(), drift=True)
    page = html.build(s, charts={}, target="screen")
    breakdown = page[page.index("Where verify time goes"):page.index("<h2>Acceptance</h2>")]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", breakdown)
    assert cells and not any(NEGATIVE_NUMBER.search(re.sub(r"<[^>]+>", "", c)) for c in cells), cells
    assert breakdown.count("below noise") >= 4
    assert "Protocol: order, repeats, drift" in page and "Drift warning." in page
    assert "not available" in page or "GPU sensors" not in page
    calm = html.build(with_probe(noisy_session(), drift=False), charts={}, target="print")
    assert "Drift warning." not in calm and "clock probe: no drift" in calm


def test_setup_panel_cooldown_checkbox_and_discard_first(qtbot, settings):
    from specscope.gui.setup_panel import SetupPanel

    panel = SetupPanel(settings)
    qtbot.addWidget(panel)
    assert panel.config().cooldown is False and not panel.cooldown_timeout.isEnabled()
    panel.cooldown.setChecked(True)
    panel.cooldown_timeout.setValue(45)
    panel.discard_first.setValue(2)
    panel.repeats.setValue(3)
    cfg = panel.config()
    assert (cfg.cooldown, cfg.cooldown_timeout_s, cfg.discard_first, cfg.repeats) == (True, 45.0, 2, 3)
    assert panel.cooldown_timeout.isEnabled()
    panel.save_settings()
    again = SetupPanel(settings)
    qtbot.addWidget(again)
    assert again.cooldown.isChecked() and again.discard_first.value() == 2
    panel.inspector.shutdown()
    again.inspector.shutdown()


def test_setup_panel_run_until_decided(qtbot, settings):
    from specscope.gui.setup_panel import SetupPanel

    panel = SetupPanel(settings)
    qtbot.addWidget(panel)
    assert panel.config().until is None
    panel.until_decided.setChecked(True)
    cfg = panel.config()
    assert cfg.until == "decided"
    cfg.validate()
    panel.save_settings()
    again = SetupPanel(settings)
    qtbot.addWidget(again)
    assert again.until_decided.isChecked()
    panel.inspector.shutdown()
    again.inspector.shutdown()
