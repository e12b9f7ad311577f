"""The measurement pages follow a DFlash session's k = 15: Verify cost measures the 16-position verify (its n
stopped at 9, so the headline verify was k = 8's), Tune reaches K_max = 15 (its box stopped at 8), and the
blocks shown are the run's own verify."""

from __future__ import annotations

import shutil

from test_dflash_layout import DFLASH


def test_measurement_pages_cover_the_sessions_k(window, tmp_path):
    path = tmp_path / DFLASH.name
    shutil.copy(DFLASH, path)
    window.open_session(str(path))
    assert window.setup.k.value() == 15
    vc, tv = window.verify_cost, window.tune
    assert vc.positions.value() == 16
    roof = vc.config_for(window.setup.config())
    assert (roof.positions, roof.num_draft_tokens) == (16, 15)
    assert tv.k_max.value() == 15
    assert tv.config_for(window.setup.config()).k_max == 15
    # back to a small k: the defaults again
    window.setup.k.setValue(2)
    assert vc.positions.value() == 9 and tv.k_max.value() == 4


def test_blocks_default_to_the_runs_verify(window):
    """The per-block chart opened on n = 3 (k = 2's verify) whatever the run's k."""
    vc = window.verify_cost
    curve = [{"positions": n, "whole_ms": 7.0 * n, "floor_ms": 1.0 * n,
              "by_block": {"moe": {"ms": 2.0 * n, "floor_ms": 0.5}}} for n in range(1, 17)]
    vc.set_roofline({"k": 15, "curve": curve, "t_decode_ms": 7.0})
    assert vc.cat_n.count() == 16 and vc.cat_n.currentData() == 16
    vc.set_roofline({"curve": curve[:4], "t_decode_ms": 7.0})  # no k recorded: k = 2's verify, as before
    assert vc.cat_n.currentData() == 3


def test_compare_says_out_of_reach(window, tmp_path):
    """A break-even at or below zero read "-11.12 ms" and "-1.787×" on the Compare page."""
    from pathlib import Path

    demo = Path(__file__).resolve().parents[1] / "fixtures" / "session_demo.json"
    a, b = tmp_path / DFLASH.name, tmp_path / demo.name
    shutil.copy(DFLASH, a)
    shutil.copy(demo, b)
    window.compare_paths(str(a), str(b))
    t = window.views["compare"].table
    rows = {t.item(i, 0).text().strip(): [t.item(i, c).text() if t.item(i, c) else "" for c in range(t.columnCount())]
            for i in range(t.rowCount()) if t.item(i, 0)}
    for label in ("Break-even T_verify", "Break-even (× T_decode)"):
        assert rows[label][1] == "out of reach" and rows[label][3] == "—", rows[label]
        assert not rows[label][2].startswith("-") and rows[label][2] != "out of reach"


def test_the_drafter_field_names_a_dflash_folder(window):
    """With DFlash picked the field holds the drafter's folder (empty: the demo's trained one), not a draft model."""
    s = window.setup
    s.set_drafter("dflash")
    label = s._drafter_form.labelForField(s.draft_row)
    assert label.text() == "DFlash folder" and "DFlash" in s.draft_model.placeholderText()
    s.set_drafter("draft")
    assert label.text() == "Draft model" and s.draft_model.placeholderText() == "demo draft model"


def test_compare_winner_column_in_view_at_1280(window, tmp_path):
    """DFlash (k = 15) against the demo at 1280×800: one long B value ("ruler bias …") widened its column and
    pushed Winner behind a horizontal scroll bar; the columns now narrow (eliding, tooltips whole) to fit it."""
    from pathlib import Path

    from PySide6 import QtWidgets

    demo = Path(__file__).resolve().parents[1] / "fixtures" / "session_demo.json"
    a, b = tmp_path / DFLASH.name, tmp_path / demo.name
    shutil.copy(DFLASH, a)
    shutil.copy(demo, b)
    window.resize(1280, 800)
    window.compare_paths(str(a), str(b))
    for _ in range(6):
        QtWidgets.QApplication.processEvents()
    t = window.views["compare"].table
    hh = t.horizontalHeader()
    last = t.columnCount() - 1
    assert sum(hh.sectionSize(c) for c in range(t.columnCount())) <= t.viewport().width() + 1
    assert hh.sectionSize(last) >= t.sizeHintForColumn(last)
    cut = [t.item(r, c) for r in range(t.rowCount()) for c in range(4) if t.item(r, c) and t.columnSpan(r, c) == 1]
    assert all(it.toolTip() == it.text().strip() for it in cut)
