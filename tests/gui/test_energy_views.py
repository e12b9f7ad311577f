"""The app's energy: the Live page's Energy tile and the History table's energy ratio, on simulated recordings
(``energy_recordings``) and on this machine's own session (Linux: no sensors, so "not available", never a number)."""

from __future__ import annotations

from pathlib import Path

import pytest
from energy_recordings import Counter, record, with_windows

from specscope.profiler.analysis.summary import summarize
from specscope.profiler.session.session import Session

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "session_demo.json"


def _live(qtbot, session: Session):
    from specscope.gui.charts.common import LIGHT
    from specscope.gui.charts.data import all_chart_data
    from specscope.gui.views.live import LiveView

    v = LiveView(LIGHT)
    qtbot.addWidget(v)
    v.update_snapshot(all_chart_data(session))
    return v


def _with(**kw) -> Session:
    s = Session.load(FIXTURE)
    windows, _ = record(case_ids=[c["id"] for c in s.cases], repeats=3, **kw)
    return with_windows(s, windows)


def test_the_energy_tile_on_this_machine_says_not_available_here(qtbot):
    v = _live(qtbot, Session.load(FIXTURE))
    assert v.t_energy.value.text() == "—" and v.t_energy.note.full_text() == "not available here"
    assert "macOS on Apple silicon only" in v.t_energy.toolTip()


def test_the_energy_tile_shows_speculative_joules_and_the_ratio(qtbot):
    from specscope.gui.charts.data import all_chart_data

    s = _with(noise=0.02, seed=1)
    e = summarize(s)["energy"]
    v = _live(qtbot, s)
    assert v.t_energy.value.text() == f"{e['spec']['joules_per_token']:.3f} J"
    assert v.t_energy.note.full_text() == f"speculative · {e['ratio']:.2f}× plain's"
    # a batched package counter: the GPU's figures, said so on the tile
    v.update_snapshot(all_chart_data(_with(package=Counter("batched", 2.0, 0.5))))
    assert v.t_energy.note.full_text().endswith("· GPU only") and "updates in batches" in v.t_energy.toolTip()
    # stale counters: no number
    v.update_snapshot(all_chart_data(_with(package=Counter("stale"), gpu=Counter("stale"))))
    assert v.t_energy.value.text() == "—" and "did not move" in v.t_energy.toolTip()


def test_history_reads_the_energy_ratio_or_why_not(tmp_path):
    from specscope.gui.views.history_reader import read_entry

    s = _with(noise=0.02, seed=2)
    p = tmp_path / "with-energy.json"
    s.save(p)
    e = read_entry(p)
    assert e["energy_ratio"] == pytest.approx(0.75, rel=0.05) and "ratio 0.7" in e["energy"]
    linux = read_entry(FIXTURE)
    assert linux["energy_ratio"] is None and linux["energy"].startswith("energy not available")
