"""By content page: drafters side by side per content class, like ``specscope content A.json B.json …``.

Each row is one drafter on one class, that class's own summary (``profiler.analysis.by_content``: acceptance and
tokens per round with their 95% intervals, the round model at that class's E — the speedup the class would get —, the
seed's division, the measured speedup, the verdict). The open session is the first drafter once it has cases; more are
added from session files (one per drafter, the same target and sampling regime: others are refused with the reason).
"""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore, QtWidgets

from specscope.errors import SpecscopeError
from specscope.profiler.analysis.by_content import content_table
from specscope.profiler.analysis.records import ContentTable
from specscope.profiler.renderers.content import HEAD, cells, differ_lines
from specscope.profiler.session.session import Session

from ..charts.records import ChartTheme
from .common import plain_label

EMPTY_HINT = ("Run a suite (or open a session), then add the sessions of other drafters on the same model: each class "
              "gets one row per drafter, with the speedup that class would get.")
OPEN = "open session"
# short headers that fit beside the setup panel; the full names (the report's, the CLI's) are their tooltips
SHORT_HEAD = ["Class", "Drafter", "k", "Cases", "p (95% CI)", "E (95% CI)", "Predicted", "Division",
              "Measured (95% CI)", "Verdict"]


class ContentView(QtWidgets.QWidget):
    def __init__(self, theme: ChartTheme, parent=None):
        super().__init__(parent)
        self.theme = theme
        self.current: Session | None = None       # the window's session (first drafter), when it has cases
        self.added: list[tuple[str, Session]] = []  # (name, session) from files, in the order added
        self.table_data: ContentTable | None = None
        self.refusal: str | None = None

        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(8, 8, 8, 8)
        top = QtWidgets.QHBoxLayout()
        self.headline = plain_label(EMPTY_HINT, wrap=True)
        self.headline.setObjectName("compareHead")
        top.addWidget(self.headline, 1)
        self.add_btn = QtWidgets.QPushButton("Add drafters' sessions…")
        self.add_btn.setToolTip("Session files of other drafters on the same model and sampling regime")
        self.add_btn.clicked.connect(self.add_dialog)
        self.clear_btn = QtWidgets.QPushButton("Clear added")
        self.clear_btn.clicked.connect(self.clear_added)
        for w in (self.add_btn, self.clear_btn):
            top.addWidget(w, 0, QtCore.Qt.AlignmentFlag.AlignTop)
        lay.addLayout(top)
        self.refused = plain_label("", wrap=True)
        self.refused.setObjectName("errorBanner")
        self.refused.hide()
        lay.addWidget(self.refused)

        self.table = QtWidgets.QTableWidget(0, len(HEAD))
        for j, (short, full) in enumerate(zip(SHORT_HEAD, HEAD)):
            header = QtWidgets.QTableWidgetItem(short)
            header.setToolTip(full)
            self.table.setHorizontalHeaderItem(j, header)
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)
        self.table.horizontalHeader().setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        lay.addWidget(self.table, 1)
        self.differ = plain_label("", wrap=True)
        lay.addWidget(self.differ)
        self.notes = plain_label("", wrap=True)
        self.notes.setObjectName("muted")
        lay.addWidget(self.notes)
        self._show()

    # -- input ---------------------------------------------------------------------------
    def set_current(self, session: Session | None) -> None:
        """The window's session: the first drafter when it has cases (a live run's, once they arrive)."""
        self.current = session if session is not None and session.cases and not session.data.get("sweep") else None
        self.recompute()

    def add_sessions(self, paths: list[str]) -> None:
        for p in paths:
            try:
                s = Session.load(p)
            except Exception as exc:  # a file that is not a session: said, the others still added
                self.refusal = f"{Path(p).name}: not a usable session ({exc})"
                self._show()
                return
            self.added.append((Path(p).stem, s))
        self.recompute()

    def add_dialog(self) -> None:
        files, _ = QtWidgets.QFileDialog.getOpenFileNames(self, "Sessions of other drafters (same model and regime)",
                                                          "", "specscope session (*.json)")
        if files:
            self.add_sessions(files)

    def clear_added(self) -> None:
        self.added = []
        self.recompute()

    def named(self) -> list[tuple[str, Session]]:
        return ([(OPEN, self.current)] if self.current is not None else []) + self.added

    def recompute(self) -> None:
        self.table_data, self.refusal = None, None
        named = self.named()
        if named:
            names = [n for n, _ in named]
            if len(set(names)) != len(names):
                names = [f"{n} ({i + 1})" for i, n in enumerate(names)]
            try:
                self.table_data = content_table([s for _, s in named], names)
            except SpecscopeError as exc:
                self.refusal = str(exc)
        self._show()

    # -- output --------------------------------------------------------------------------
    def _show(self) -> None:
        self.clear_btn.setEnabled(bool(self.added))
        self.refused.setVisible(bool(self.refusal))
        self.refused.setText(self.refusal or "")
        t = self.table_data
        if t is None:
            self.table.setRowCount(0)
            self.headline.setText(EMPTY_HINT)
            self.differ.setText("")
            self.notes.setText("")
            return
        self.headline.setText(f"{t['model'] or '?'} · {t['regime']} · {len(t['drafters'])} drafter"
                              f"{'s' if len(t['drafters']) != 1 else ''} · classes {', '.join(t['classes'])}")
        rows = sorted(t["rows"], key=lambda r: t["classes"].index(r["content_class"]))
        self.table.setRowCount(len(rows))
        for i, r in enumerate(rows):
            for j, text in enumerate(cells(r)):
                item = QtWidgets.QTableWidgetItem(text)
                if j >= 2:
                    item.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(i, j, item)
        self.differ.setText("\n".join(differ_lines(t)))
        self.notes.setText(" ".join(t["notes"]))

    def apply_theme(self, theme: ChartTheme) -> None:
        self.theme = theme  # plain text cells: nothing themed to redraw
