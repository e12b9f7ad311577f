"""The By content page: the open session's classes, other drafters' sessions added beside it, a misfit refused with
the reason, the window's page built on demand and following the session; looked at as an offscreen grab."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from specscope.profiler.session.session import Session

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "session_demo.json"
DFLASH = Path(__file__).resolve().parent / "fixtures" / "session_dflash_quick.json"


def _rows(view):
    return [[view.table.item(i, j).text() for j in range(view.table.columnCount())] for i in range(view.table.rowCount())]


def test_the_page_puts_added_drafters_beside_the_open_session_and_refuses_a_misfit(qtbot, tmp_path):
    from specscope.gui.charts.common import LIGHT
    from specscope.gui.views.content import ContentView

    view = ContentView(LIGHT)
    qtbot.addWidget(view)
    assert view.table.rowCount() == 0 and "Run a suite" in view.headline.text()
    view.set_current(Session.load(FIXTURE))
    rows = _rows(view)
    assert [r[0] for r in rows] == ["code", "en", "zh"] and all(r[1] == "open session: mtp" for r in rows)
    twin = json.loads(FIXTURE.read_text(encoding="utf-8"))
    twin["config"]["drafter"] = {"name": "dflash", "kind": "dflash", "variant": "dflash2"}
    (tmp_path / "dflash2-run.json").write_text(json.dumps(twin), encoding="utf-8")
    view.add_sessions([str(tmp_path / "dflash2-run.json")])
    rows = _rows(view)
    assert len(rows) == 6 and [r[0] for r in rows] == ["code", "code", "en", "en", "zh", "zh"]
    assert {r[1] for r in rows} == {"open session: mtp", "dflash2-run: dflash (DFlash2)"}
    assert "2 drafters" in view.headline.text() and not view.refused.isVisible()
    view.add_sessions([str(DFLASH)])  # the trained demo, not the random one: another target
    assert "one target" in view.refused.text() and view.table.rowCount() == 0
    view.clear_added()
    assert view.table.rowCount() == 3 and view.refused.text() == ""
    view.resize(1200, 420)
    view.show()
    qtbot.waitExposed(view)
    assert not view.grab().isNull()


def test_the_window_builds_the_page_and_it_follows_the_session(qtbot):
    from specscope.gui.main_window import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    w.model.reset(Session.load(FIXTURE))
    page = w.views["content"]
    assert page.table.rowCount() == 3
    w.model.reset(Session.from_dict(copy.deepcopy(json.loads(DFLASH.read_text(encoding="utf-8")))))
    assert page.current is not None and page.table.rowCount() == len({c["content_class"] for c in page.current.cases})
