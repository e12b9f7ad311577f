"""Nothing clipped: every page at 1280×800, 1440×900 and 1920×1080, with the demo session and a recorded
session of a model at Qwen3.5-35B-A3B's real dimensions (tests/fixtures/session_real_shape.json, made with
``specscope demo-model --shape qwen3.5-35b-a3b --layers 4`` and ``specscope run --roofline``).

The check reads the widgets themselves: a label that does not elide must get at least the width its text
needs (its size hint; for a word-wrapped label its minimum, the longest word) and, when it wraps, the height
its text needs at the width it got (``heightForWidth``); and no ancestor may cut it off (a scroll area's
viewport may: it scrolls). A label that elides (``elides`` property) shows "…" and its full text in a tooltip.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6 import QtCore, QtWidgets

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "tests" / "fixtures" / "session_demo.json"
REAL = ROOT / "tests" / "fixtures" / "session_real_shape.json"
SIZES = [(1280, 800), (1440, 900), (1920, 1080)]
PAGES = ["live", "breakdown", "division", "verify_cost", "tune", "cases", "history", "compare"]

pytestmark = pytest.mark.timeout(600)


def _scroll_viewport(w: QtWidgets.QWidget) -> bool:
    p = w.parentWidget()
    return isinstance(p, QtWidgets.QAbstractScrollArea) and p.viewport() is w


def _name(lab: QtWidgets.QLabel) -> str:
    chain, w = [], lab
    while w is not None and len(chain) < 4:
        chain.append(w.objectName() or type(w).__name__)
        w = w.parentWidget()
    return "/".join(reversed(chain))


def clipped_labels(root: QtWidgets.QWidget) -> list[str]:
    """Every visible label under ``root`` whose text does not fit the box it got, and why."""
    bad = []
    for lab in root.findChildren(QtWidgets.QLabel):
        if not lab.isVisibleTo(root) or not lab.text().strip() or lab.property("elides"):
            continue
        pm = lab.pixmap()
        if pm is not None and not pm.isNull():
            continue
        text = " ".join(lab.text().split())[:70]
        w, h = lab.width(), lab.height()
        if lab.wordWrap():
            need_w = lab.minimumSizeHint().width()
            need_h = lab.heightForWidth(w)
        else:
            need_w, need_h = lab.sizeHint().width(), lab.sizeHint().height()
        if need_w > w + 1:
            bad.append(f"{_name(lab)}: {w} px wide, needs {need_w}: {text!r}")
            continue
        if need_h > h + 1:
            bad.append(f"{_name(lab)}: {h} px high at {w} px, needs {need_h}: {text!r}")
            continue
        # cut off by an ancestor (a fixed-height row, a splitter), up to the window or a scrolling viewport
        child, anc = lab, lab.parentWidget()
        rect = QtCore.QRect(QtCore.QPoint(0, 0), lab.size())
        while anc is not None and not _scroll_viewport(anc):
            rect = QtCore.QRect(child.mapTo(anc, rect.topLeft()), rect.size()).intersected(anc.rect())
            if anc is root:
                break
            child, anc = anc, anc.parentWidget()
        if rect.width() < w - 1 or rect.height() < h - 1:
            bad.append(f"{_name(lab)}: only {rect.width()}×{rect.height()} of {w}×{h} px visible: {text!r}")
    return bad


@pytest.fixture
def sessions(tmp_path):
    folder = tmp_path / "sessions"
    folder.mkdir()
    paths = {}
    for key, src in (("demo", DEMO), ("real", REAL)):
        paths[key] = str(folder / src.name)
        shutil.copy(src, paths[key])
    return paths


def _settle(qtbot, w):
    qtbot.waitUntil(lambda: not w.history.busy(), timeout=20000)
    for _ in range(3):
        QtWidgets.QApplication.processEvents()


@pytest.mark.parametrize("which", ["demo", "real"])
def test_every_page_fits_at_three_sizes(qtbot, settings, sessions, which):
    from specscope.gui.main_window import MainWindow

    w = MainWindow(settings=settings, autosave_dir=str(Path(sessions["demo"]).parent))
    qtbot.addWidget(w)
    w.show()
    try:
        w.open_session(sessions[which])
        w.compare_paths(sessions["demo"], sessions["real"])
        failures = []
        for size in SIZES:
            w.resize(*size)
            for page in PAGES:
                w.show_page(page)
                _settle(qtbot, w)
                got = (w.width(), w.height())
                if got != size:
                    failures.append(f"{which} {page} @ {size[0]}x{size[1]}: the window cannot be that small ({got[0]}x{got[1]})")
                failures += [f"{which} {page} @ {size[0]}x{size[1]}: {b}" for b in clipped_labels(w)]
        assert not failures, "\n".join(dict.fromkeys(failures))
    finally:
        w.setup.inspector.shutdown()


def test_the_checker_sees_a_cut_label(qtbot):
    """The checker itself: a wrapped label in a fixed-height box is reported; the same label elided is not."""
    box = QtWidgets.QWidget()
    qtbot.addWidget(box)
    lay = QtWidgets.QVBoxLayout(box)
    lab = QtWidgets.QLabel("timing apart costs none measurable (end-to-end rounds were not faster: within noise) " * 2)
    lab.setWordWrap(True)
    lay.addWidget(lab)
    box.setFixedSize(180, 60)
    box.show()
    QtWidgets.QApplication.processEvents()
    assert clipped_labels(box)
    lab.setProperty("elides", True)
    assert not clipped_labels(box)
    wide = QtWidgets.QLabel("x" * 200)
    lay.addWidget(wide)
    QtWidgets.QApplication.processEvents()
    assert any("wide" in b for b in clipped_labels(box))
