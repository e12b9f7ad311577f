"""History page: the sessions the app autosaved, newest first.

Each file is read with ``Session.load`` in a background thread (``history_reader``; one file at a time, so a folder of
many long sessions never blocks the window) and remembered by size and modification time, so a
refresh rereads only new or changed files. A file that cannot be read gets a row that says why.
Double-click (or Open) reopens a session; two selected rows can be compared.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from specscope.profiler.analysis.formatting import rate

from ..text import home_relative
from .common import plain_label, sortable_table
from ..records import HistoryEntry
from .history_reader import SessionReader
from ..charts.records import ChartTheme

COLUMNS = ["Date", "Model", "Drafter", "k", "Regime", "Status", "Plain\ntok/s", "Spec\ntok/s", "Measured\nspeedup",
           "Accept-\nance", "Energy\nratio"]
C_DATE, C_MODEL, C_DRAFTER, C_K, C_REGIME, C_STATUS, C_PLAIN, C_SPEC, C_SPEEDUP, C_P, C_ENERGY = range(len(COLUMNS))
NUMERIC = {C_K, C_PLAIN, C_SPEC, C_SPEEDUP, C_P, C_ENERGY}
HEADER_TIPS = {C_K: "draft tokens per round", C_STATUS: "how the run ended, and cases measured / planned",
               C_PLAIN: "plain decoding, tokens per second", C_SPEC: "speculative decoding, tokens per second",
               C_SPEEDUP: "speculative ÷ plain tok/s, measured end to end", C_P: "share of drafted tokens accepted",
               C_ENERGY: "speculative ÷ plain joules per token (below 1: speculation spends less); — where energy "
                         "could not be read (the row's tooltip says why)"}
ERROR_SPAN = (C_MODEL, len(COLUMNS) - C_MODEL)  # an unreadable file's reason spans Model … Acceptance
SORT_ROLE = QtCore.Qt.ItemDataRole.UserRole + 1
PATH_ROLE = QtCore.Qt.ItemDataRole.UserRole + 2
UNREADABLE = "unreadable"


def _energy_cell(ratio: float | None) -> tuple[str, float]:
    return ("—", -1.0) if ratio is None else (f"{ratio:.2f}×", float(ratio))


def _date_text(ts: float | None) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M") if ts else "—"


class HistoryView(QtWidgets.QWidget):
    """Autosaved sessions: date, model, drafter, k, regime, status and the headline numbers."""

    open_requested = QtCore.Signal(str)
    compare_requested = QtCore.Signal(str, str)  # older, newer

    def __init__(self, theme: ChartTheme, folder, parent=None):
        """``folder``: the autosave folder, or a callable returning it (read at each refresh)."""
        super().__init__(parent)
        self.theme = theme
        self._folder = folder
        self._cache: dict[str, tuple[tuple, HistoryEntry]] = {}  # path -> ((size, mtime_ns), entry)
        self._rows: dict[str, int] = {}  # path -> source row
        self._entries: dict[str, HistoryEntry] = {}
        self._pending: set[str] = set()
        self._gen = 0
        self._stale = True
        self._reader = SessionReader()
        self._timer = QtCore.QTimer(self)
        self._timer.setInterval(40)
        self._timer.timeout.connect(self._collect)

        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(8, 8, 8, 8)
        top = QtWidgets.QHBoxLayout()
        self.where = plain_label("", wrap=True)
        self.where.setObjectName("muted")
        top.addWidget(self.where, 1)
        self.open_btn = QtWidgets.QPushButton("Open")
        self.open_btn.setToolTip("Reopen the selected session (or double-click a row)")
        self.compare_btn = QtWidgets.QPushButton("Compare")
        self.compare_btn.setToolTip("Select two sessions (Ctrl+click) to put them side by side")
        self.refresh_btn = QtWidgets.QPushButton("Refresh")
        self.refresh_btn.setToolTip("Read the folder again (new and changed files only)")
        self.open_btn.clicked.connect(self._open_selected)
        self.compare_btn.clicked.connect(self._compare_selected)
        self.refresh_btn.clicked.connect(self.refresh)
        for b in (self.open_btn, self.compare_btn, self.refresh_btn):
            top.addWidget(b)
        lay.addLayout(top)

        self.model, self.proxy, self.table = sortable_table(self, COLUMNS, SORT_ROLE)
        for col, tip in HEADER_TIPS.items():
            self.model.horizontalHeaderItem(col).setToolTip(tip)
        self.table.sortByColumn(0, QtCore.Qt.SortOrder.DescendingOrder)
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(QtCore.Qt.TextElideMode.ElideMiddle)
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 10)
        self.proxy.layoutChanged.connect(self._apply_spans)  # sorting moves the unreadable rows
        hh = self.table.horizontalHeader()
        hh.setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.Interactive)
        hh.setStretchLastSection(False)  # the Model column takes the spare width (_spread)
        self._model_width = 100
        self.table.doubleClicked.connect(lambda idx: self._open_row(idx.row()))
        self.table.selectionModel().selectionChanged.connect(lambda *_: self._selection_changed())
        lay.addWidget(self.table, 1)
        self.note = plain_label("", wrap=True)
        self.note.setObjectName("muted")
        lay.addWidget(self.note)
        self._update_buttons()

    # -- the folder ------------------------------------------------------------------
    def folder(self) -> Path:
        f = self._folder() if callable(self._folder) else self._folder
        return Path(f)

    def busy(self) -> bool:
        """True while files are still being read (screenshots and tests wait for it)."""
        return bool(self._pending) or (self._stale and self.isVisible())

    def mark_stale(self) -> None:
        """The folder changed (a run finished): reread now if the page is on screen, else when it is shown."""
        self._stale = True
        if self.isVisible():
            self.refresh()

    def showEvent(self, e: QtGui.QShowEvent) -> None:  # noqa: N802 (Qt naming)
        super().showEvent(e)
        if self._stale:
            QtCore.QTimer.singleShot(0, self.refresh)

    def refresh(self) -> None:
        self._stale = False
        self._gen += 1
        self._reader.gen = self._gen
        folder = self.folder()
        try:
            files = [p for p in folder.glob("*.json") if p.is_file()]
        except OSError as exc:
            files = []
            self.note.setText(f"cannot list {home_relative(folder)}: {exc.strerror or exc}")
        stamps: dict[str, tuple[tuple[int | None, int | None], float | None]] = {}
        for p in files:
            try:
                st = p.stat()
                stamps[str(p)] = ((st.st_size, st.st_mtime_ns), st.st_mtime)
            except OSError:
                stamps[str(p)] = ((None, None), None)
        selected = set(self.selected_paths())
        self.table.setSortingEnabled(False)
        self.model.setRowCount(0)
        self._rows.clear()
        self._entries.clear()
        self._pending.clear()
        # newest first, so the files read first are the ones the user most likely wants
        for path in sorted(stamps, key=lambda k: stamps[k][1] or 0, reverse=True):
            stamp, mtime = stamps[path]
            cached = self._cache.get(path)
            if cached and cached[0] == stamp:
                entry = cached[1]
            else:
                entry = {"path": path, "file": Path(path).name, "mtime": mtime, "loading": True}
                self._pending.add(path)
                self._reader.submit(self._gen, path)
            self._rows[path] = self.model.rowCount()
            self.model.appendRow(self._make_row(entry))
            self._entries[path] = entry
        for k in list(self._cache):
            if k not in stamps:
                del self._cache[k]
        self.table.setSortingEnabled(True)
        self._fit_columns()
        self._reselect(selected)
        self._update_where()
        if self._pending:
            self._timer.start()
        self._update_buttons()

    def _collect(self) -> None:
        for gen, path, entry in self._reader.drain():
            stamp = None
            try:
                st = os.stat(path)
                stamp = (st.st_size, st.st_mtime_ns)
            except OSError:
                pass
            if stamp is not None:
                self._cache[path] = (stamp, entry)
            if gen != self._gen or path not in self._rows:
                continue
            self._pending.discard(path)
            self._entries[path] = entry
            row = self._rows[path]
            for col, item in enumerate(self._make_row(entry)):
                self.model.setItem(row, col, item)
        self._apply_spans()
        if not self._pending:
            self._timer.stop()
            self._fit_columns()
            self._update_where()
            self._update_buttons()

    # -- rows ------------------------------------------------------------------------
    def _make_row(self, e: HistoryEntry) -> list[QtGui.QStandardItem]:
        ts = e.get("started") or e.get("mtime")
        if e.get("loading"):
            cells = [(_date_text(ts), ts or 0), (f"reading {e['file']}…", "")] + [("", "")] * (len(COLUMNS) - 2)
            tip = home_relative(e["path"])
        elif e.get("error"):
            cells = ([(_date_text(ts), ts or 0), (f"{UNREADABLE}: {e['error']}", "")]
                     + [("", "")] * (C_STATUS - C_MODEL - 1) + [(UNREADABLE, UNREADABLE)]
                     + [("", -1)] * (len(COLUMNS) - C_STATUS - 1))
            tip = f"{home_relative(e['path'])}\n{e['error']}"
        else:
            model = e["model"] + (f" (random weights, {e['shape']} shape)" if e.get("shape")
                                  else " (demo)" if e.get("demo") else "")
            status = f"{e['status']} · {e['cases_done']}/{e['cases_total']}"
            cells = [
                (_date_text(ts), ts or 0),
                (model, model.lower()),
                (e["drafter"], e["drafter"]),
                (str(e["k"]), e["k"]),
                (e["regime"], e["regime"]),
                (status, e["status"]),
                ("—", -1.0) if e["plain_tok_s"] is None else (rate(e["plain_tok_s"]), float(e["plain_tok_s"])),
                ("—", -1.0) if e["spec_tok_s"] is None else (rate(e["spec_tok_s"]), float(e["spec_tok_s"])),
                ("—", -1.0) if e["measured_speedup"] is None else (f"{e['measured_speedup']:.3f}×", e["measured_speedup"]),
                ("—", -1.0) if e["p"] is None else (f"{e['p'] * 100:.1f}%", e["p"]),
                _energy_cell(e.get("energy_ratio")),
            ]
            tip = f"{home_relative(e['path'])}\n{e['acceptance']}\n{e.get('energy') or ''}".rstrip()
            if e.get("last_error") and e["status"] in ("failed", "incomplete"):
                tip += f"\n{e['status']}: {e['last_error']}"
        items = []
        muted = QtGui.QColor(self.theme.get("muted", "#6e7781"))
        bad = QtGui.QColor("#ff7b72" if self.theme.get("name") == "dark" else "#cf222e")
        for col, (text, key) in enumerate(cells):
            it = QtGui.QStandardItem(text)
            it.setData(key, SORT_ROLE)
            it.setData(e["path"], PATH_ROLE)
            it.setToolTip(tip)
            if col in NUMERIC:
                it.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
            if e.get("loading"):
                it.setForeground(muted)
            elif e.get("error"):
                it.setForeground(bad if col in (C_MODEL, C_STATUS) else muted)
            elif col == C_STATUS and e["status"] in ("failed", "incomplete"):
                it.setForeground(bad)
            items.append(it)
        return items

    def _apply_spans(self, *_) -> None:
        self.table.clearSpans()
        first, n = ERROR_SPAN
        for r in range(self.proxy.rowCount()):
            path = self._path_at(r)
            e = self._entries.get(path) if path is not None else None
            if e and e.get("error"):
                self.table.setSpan(r, first, 1, n)

    def _fit_columns(self) -> None:
        self.table.clearSpans()  # spanned reasons must not widen the Model column
        self.table.resizeColumnsToContents()
        hh = self.table.horizontalHeader()
        for col in range(len(COLUMNS)):  # a long model or regime name never pushes the numbers off screen
            hh.resizeSection(col, min(hh.sectionSize(col), 240))
        # the Model column fits the model names, not the reasons spanning it on unreadable rows
        fm = self.table.fontMetrics()
        names = [self.model.item(r, C_MODEL).text() for r in range(self.model.rowCount())
                 if not ((e := self._entries.get(self.model.item(r, 0).data(PATH_ROLE))) and e.get("error"))]
        self._model_width = max(100, min(240, max((fm.horizontalAdvance(t) for t in names), default=0) + 16))
        self._spread()
        self._apply_spans()

    def _spread(self) -> None:
        """The Model column: as wide as its names need, plus whatever width the table has to spare."""
        hh = self.table.horizontalHeader()
        others = sum(hh.sectionSize(c) for c in range(len(COLUMNS)) if c != C_MODEL)
        hh.resizeSection(C_MODEL, max(self._model_width, self.table.viewport().width() - others))

    def resizeEvent(self, e: QtGui.QResizeEvent) -> None:  # noqa: N802 (Qt naming)
        super().resizeEvent(e)
        QtCore.QTimer.singleShot(0, self._spread)  # after the table has its new size

    def _update_where(self) -> None:
        n = len(self._entries)
        bad = sum(1 for e in self._entries.values() if e.get("error"))
        text = f"Autosaved sessions in {home_relative(self.folder())} · {n} file{'s' if n != 1 else ''}"
        if bad:
            text += f" ({bad} unreadable)"
        if self._pending:
            text += f" · reading {len(self._pending)}…"
        self.where.setText(text)
        if not n:
            self.note.setText("No sessions yet: every run is saved here automatically.")
        else:
            self.note.setText("Double-click a session to reopen it; select two (Ctrl+click) and press Compare "
                              "to put them side by side.")

    # -- selection and actions -----------------------------------------------------------
    def entry(self, path: str) -> HistoryEntry | None:
        return self._entries.get(path)

    def row_count(self) -> int:
        return self.model.rowCount()

    def row_texts(self) -> list[list[str]]:
        """The table as shown, in display order (for tests)."""
        return [[self.proxy.index(r, c).data() or "" for c in range(len(COLUMNS))] for r in range(self.proxy.rowCount())]

    def _path_at(self, proxy_row: int) -> str | None:
        return self.proxy.index(proxy_row, 0).data(PATH_ROLE)

    def selected_paths(self) -> list[str]:
        rows = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        return [p for p in (self._path_at(r) for r in rows) if p]

    def select_paths(self, paths) -> None:
        self._reselect(set(paths))

    def _reselect(self, paths: set) -> None:
        sm = self.table.selectionModel()
        sm.clearSelection()
        flags = QtCore.QItemSelectionModel.SelectionFlag.Select | QtCore.QItemSelectionModel.SelectionFlag.Rows
        for r in range(self.proxy.rowCount()):
            if self._path_at(r) in paths:
                sm.select(self.proxy.index(r, 0), flags)

    def _readable(self, path: str) -> bool:
        e = self._entries.get(path)
        return e is None or (not e.get("error") and not e.get("loading"))

    def _selection_changed(self) -> None:
        self._update_buttons()
        sel = self.selected_paths()
        if len(sel) == 1:
            e = self._entries.get(sel[0])
            text = home_relative(sel[0])
            if e and e.get("error"):
                text += f" · {UNREADABLE}: {e['error']}"
            self.note.setText(text)
        elif len(sel) == 2:
            self.note.setText("Two sessions selected: press Compare to put them side by side.")
        else:
            self._update_where()

    def _update_buttons(self) -> None:
        sel = self.selected_paths()
        self.open_btn.setEnabled(len(sel) == 1 and self._readable(sel[0]))
        self.compare_btn.setEnabled(len(sel) == 2 and all(self._readable(p) for p in sel))

    def _open_row(self, proxy_row: int) -> None:
        path = self._path_at(proxy_row)
        if not path:
            return
        e = self._entries.get(path)
        if e and e.get("error"):
            self.note.setText(f"{e['file']} cannot be opened: {e['error']}")
            return
        self.open_requested.emit(path)

    def _open_selected(self) -> None:
        sel = self.selected_paths()
        if len(sel) == 1:
            self.open_requested.emit(sel[0])

    def _compare_selected(self) -> None:
        sel = self.selected_paths()
        if len(sel) != 2:
            return
        # older first: the deltas then read as "what changed since"
        def when(p):
            e = self._entries.get(p)
            return (e.get("started") or e.get("mtime") or 0) if e else 0

        a, b = sorted(sel, key=when)
        self.compare_requested.emit(a, b)

    def apply_theme(self, theme: ChartTheme) -> None:
        self.theme = theme
        for path, row in self._rows.items():
            e = self._entries.get(path)
            if e is not None:
                for col, item in enumerate(self._make_row(e)):
                    self.model.setItem(row, col, item)
