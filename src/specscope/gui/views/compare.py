"""Compare page: two sessions side by side, like ``specscope compare A B``.

Everything shown comes from ``profiler.analysis.compare.compare`` (Qt-free): every summary figure with the
two values, the delta (B − A), which way is better and who wins by how much; per-block
verify ÷ decode ratios, the breakdown and acceptance per content class. Sessions measured in
different sampling regimes are refused with compare's own message unless "Timings only" is ticked.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Mapping

from PySide6 import QtCore, QtGui, QtWidgets

from specscope.errors import SpecscopeError
from specscope.profiler.analysis.compare import compare
from specscope.profiler.analysis.formatting import rate
from specscope.profiler.analysis.summary import summarize
from specscope.profiler.analysis.records import ComparedFigure
from specscope.profiler.session.records import drafter_label, engine_facts

from ..text import home_relative
from .common import plain_label
from ..charts.records import ChartTheme

HEADERS = ["Figure", "A", "B", "Δ (B − A)", "Better", "Winner"]
PERCENT_KEYS = {"p", "prediction_error", "match_rate", "barrier_distortion"}
SECTIONS = [
    ("figures", "Summary", None),
    ("ratios", "Verify ÷ decode per block (lower is cheaper verify)", "×"),
    ("breakdown", "Breakdown per forward pass", None),
    ("acceptance_by_content_class", "Acceptance by content class", "%"),
]
EMPTY_HINT = ("Pick two sessions to compare: select two rows on the History page and press Compare, "
              "or use File → Compare sessions….")


FIGURE_MIN_PX, VALUE_MIN_PX = 200, 110  # the narrowest the Figure and the A, B, Δ columns get to fit the Winner
BREAK_EVEN_KEYS = {"break_even_verify_ms", "break_even_multiple"}
OUT_OF_REACH = "out of reach"


def out_of_reach(row: ComparedFigure, reach: Mapping[str, bool | None] | None = None) -> ComparedFigure:
    """A break-even out of reach is no verify time at all (the round's other terms alone reach E·T_decode, as a
    DFlash block of 15 drafts on the demo does): said in words, as the report and the verdict say it, with no delta
    and no winner. ``reach``: side -> the session's ``break_even_out_of_reach`` (the core gives None for the figure
    then); a value at or below zero (a session summarised before the flag) reads the same."""
    if row.get("key") not in BREAK_EVEN_KEYS:
        return row
    reach = reach or {}
    gone = [side for side, v in (("a", row.get("a")), ("b", row.get("b")))
            if reach.get(side) or (isinstance(v, (int, float)) and v <= 0)]
    if not gone:
        return row
    out: ComparedFigure = {**row, "delta": None, "relative": None, "by": None, "winner": None}
    if "a" in gone:
        out["a"] = OUT_OF_REACH
    if "b" in gone:
        out["b"] = OUT_OF_REACH
    return out


def _is_percent(row: ComparedFigure, unit: str | None) -> bool:
    return unit == "%" or row.get("key", "").split(".")[-1] in PERCENT_KEYS


def _decimals(unit: str) -> int:
    return {"tok/s": 1, "ms": 2}.get(unit, 3)


def fmt_value(x, unit: str, percent: bool) -> str:
    if x is None:
        return "—"
    if isinstance(x, str):  # a figure the measurement cannot vouch for, said in words ("below noise")
        return x
    if percent:
        return f"{x * 100:.1f}%"
    text = rate(x) if unit == "tok/s" else f"{x:.{_decimals(unit)}f}"  # 0.0316 tok/s, never "0.0"
    if unit == "×":
        return text + "×"
    return f"{text} {unit}" if unit else text


def _relative_meaningful(row: ComparedFigure) -> bool:
    """A relative change ("+3943%") only reads right when both values are on the same side of zero."""
    a, b = row.get("a"), row.get("b")
    return a is not None and b is not None and a != 0 and (a > 0) == (b > 0)


def fmt_delta(row: ComparedFigure, unit: str, percent: bool) -> str:
    d = row.get("delta")
    if d is None:
        return "—"
    if percent:
        return f"{d * 100:+.1f} pts"
    text = f"{d:+.{_decimals(unit)}f}" + ("×" if unit == "×" else f" {unit}" if unit else "")
    if (rel := row.get("relative")) is not None and _relative_meaningful(row):
        text += f" ({rel * 100:+.1f}%)"
    return text


def fmt_better(b) -> str:
    return {"higher": "higher", "lower": "lower", "abs-lower": "closer to 0"}.get(b, "—")


def fmt_winner(row: ComparedFigure) -> str:
    w = row.get("winner")
    if w is None:
        return "—"
    if w == "tie":  # intervals overlap (or there is none to judge by): no winner is named
        return "no measurable difference" if row.get("judged") != "no interval" else "— (no interval)"
    if row.get("by") and (row.get("better") == "abs-lower" or _relative_meaningful(row)):
        return f"{w} · {row['by']}"
    return str(w)


def describe(path: str | None, session) -> str:
    cfg = session.config
    model = (session.data.get("model") or {}).get("name") or cfg.get("model") or "?"
    drafter = drafter_label(cfg)
    started = session.data.get("started_at")
    when = datetime.fromtimestamp(started).strftime("%Y-%m-%d %H:%M") if isinstance(started, (int, float)) else ""
    engine = engine_facts(cfg)["name"]
    bits = [Path(path).name if path else "open session", model,
            f"{drafter}, k = {session.k}" + ("" if engine == "specscope" else f", engine {engine}"), session.regime,
            f"{len(session.cases)} case{'' if len(session.cases) == 1 else 's'}", session.status]
    if when:
        bits.insert(1, when)
    return " · ".join(bits)


class CompareView(QtWidgets.QWidget):
    def __init__(self, theme: ChartTheme, parent=None):
        super().__init__(parent)
        self.theme = theme
        self.a = self.b = None
        self.paths: tuple[str | None, str | None] = (None, None)
        self.result: dict | None = None
        self.refusal: str | None = None
        self.reach: dict[str, bool] = {}  # side -> its break-even is out of reach (the core gives no figure then)

        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(8, 8, 8, 8)
        top = QtWidgets.QHBoxLayout()
        names = QtWidgets.QVBoxLayout()
        names.setSpacing(2)
        self.label_a = plain_label("A: —", wrap=True)
        self.label_b = plain_label("B: —", wrap=True)
        for lab in (self.label_a, self.label_b):
            names.addWidget(lab)
        top.addLayout(names, 1)
        self.timings_only = QtWidgets.QCheckBox("Timings only")
        self.timings_only.setToolTip("Compare the timings alone, leaving out acceptance and everything that depends on it "
                                     "(needed when the sessions were measured in different sampling regimes)")
        self.timings_only.toggled.connect(lambda _: self.recompute())
        self.swap_btn = QtWidgets.QPushButton("Swap A ↔ B")
        self.swap_btn.clicked.connect(self.swap)
        self.pick_btn = QtWidgets.QPushButton("Pick sessions…")
        self.pick_btn.setToolTip("Choose two session files to compare")
        for w in (self.timings_only, self.swap_btn, self.pick_btn):
            top.addWidget(w, 0, QtCore.Qt.AlignmentFlag.AlignTop)
        lay.addLayout(top)

        self.headline = plain_label(EMPTY_HINT)
        self.headline.setObjectName("compareHead")
        lay.addWidget(self.headline)
        self.why = plain_label("")  # which term of the round model makes the faster one faster (analysis.why_faster)
        self.why.setWordWrap(True)
        self.why.hide()
        lay.addWidget(self.why)
        self.refused = plain_label("")
        self.refused.setObjectName("errorBanner")
        self.refused.hide()
        lay.addWidget(self.refused)

        self.table = QtWidgets.QTableWidget(0, len(HEADERS))
        self.table.setHorizontalHeaderLabels(HEADERS)
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 10)
        hh = self.table.horizontalHeader()
        hh.setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.Interactive)  # sized by _fit_columns
        hh.setStretchLastSection(True)
        self.table.viewport().installEventFilter(self)  # the columns refit to its width (_fit_columns)
        lay.addWidget(self.table, 1)
        self.notes = plain_label("")
        self.notes.setObjectName("muted")
        lay.addWidget(self.notes)
        self._update_enabled()

    # -- input -------------------------------------------------------------------------
    def set_sessions(self, a, b, paths=(None, None)) -> None:
        self.a, self.b = a, b
        self.paths = tuple(paths)
        self.recompute()

    def swap(self) -> None:
        if self.a is not None and self.b is not None:
            self.set_sessions(self.b, self.a, (self.paths[1], self.paths[0]))

    def recompute(self) -> None:
        self.result = self.refusal = None
        if self.a is None or self.b is None:
            self._show()
            return
        try:
            self.result = compare(self.a, self.b, names=("A", "B"), timings_only=self.timings_only.isChecked())
            self.reach = {side: bool(summarize(x).get("break_even_out_of_reach")) for side, x in (("a", self.a), ("b", self.b))}
        except SpecscopeError as exc:
            self.refusal = str(exc)
        self._show()

    # -- output --------------------------------------------------------------------------
    def _show(self) -> None:
        self._update_enabled()
        if self.a is None or self.b is None:
            self.label_a.setText("A: —")
            self.label_b.setText("B: —")
            self.headline.setText(EMPTY_HINT)
            self.why.hide()
            self.refused.hide()
            self.table.setRowCount(0)
            self.notes.setText("")
            return
        self.label_a.setText("A: " + describe(self.paths[0], self.a))
        self.label_b.setText("B: " + describe(self.paths[1], self.b))
        for lab, p in ((self.label_a, self.paths[0]), (self.label_b, self.paths[1])):
            lab.setToolTip(home_relative(p) if p else "")
        if self.refusal:
            self.headline.setText("Not compared.")
            self.why.hide()
            self.refused.setText(self.refusal + "  Tick “Timings only” to compare the timings alone.")
            self.refused.show()
            self.table.setRowCount(0)
            self.notes.setText("")
            return
        self.refused.hide()
        r = self.result
        why = r.get("why")
        self.headline.setText(r["headline"])
        self.why.setText(f"Why: {why['answer']}." if why else "")
        self.why.setVisible(bool(why))
        self._fill(r)
        self.notes.setText("\n".join(f"• {n}" for n in r["notes"]))

    def _fill(self, r: dict) -> None:
        t = self.table
        t.setRowCount(0)
        muted = QtGui.QColor(self.theme.get("muted", "#6e7781"))
        good = QtGui.QColor(self.theme.get("accept", "#1a7f37"))
        bold = QtGui.QFont(t.font())
        bold.setBold(True)
        right = QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter
        for key, title, default_unit in SECTIONS:
            rows = r.get(key) or []
            if not rows:
                continue
            n = t.rowCount()
            t.insertRow(n)
            head = QtWidgets.QTableWidgetItem(title)
            head.setFont(bold)
            head.setFlags(QtCore.Qt.ItemFlag.ItemIsEnabled)
            t.setItem(n, 0, head)
            t.setSpan(n, 0, 1, len(HEADERS))
            for row in (out_of_reach(x, self.reach) for x in rows):
                unit = row.get("unit", default_unit if default_unit not in (None, "%") else "")
                if default_unit == "×":
                    unit = "×"
                pct = _is_percent(row, default_unit)
                cells = [row["label"], fmt_value(row.get("a"), unit, pct), fmt_value(row.get("b"), unit, pct),
                         fmt_delta(row, unit, pct), fmt_better(row.get("better")), fmt_winner(row)]
                n = t.rowCount()
                t.insertRow(n)
                for col, text in enumerate(cells):
                    it = QtWidgets.QTableWidgetItem(text)
                    it.setToolTip(text)  # the whole text where a narrowed column elides it
                    it.setData(QtCore.Qt.ItemDataRole.UserRole, row.get("key"))
                    if col in (1, 2, 3):
                        it.setTextAlignment(right)
                    if col == 0:
                        it.setText("   " + text)
                    w = row.get("winner")
                    if col == 5:
                        if w == "tie" or w is None:
                            it.setForeground(muted)
                        else:
                            it.setForeground(good)
                    if (col == 1 and w == r["names"][0]) or (col == 2 and w == r["names"][1]):
                        it.setFont(bold)
                    if col == 4:
                        it.setForeground(muted)
                    t.setItem(n, col, it)
        self._fit_columns()

    def _fit_columns(self) -> None:
        """Columns sized to their content, then narrowed (long cells end in "…", the whole text in their tooltip)
        until the Winner column fits beside them: on a 13" window one long B value ("ruler bias …") pushed it
        out of view, behind a horizontal scroll bar."""
        t = self.table
        hh = t.horizontalHeader()
        t.resizeColumnsToContents()
        hh.resizeSection(0, min(max(hh.sectionSize(0), 220), 360))
        last = len(HEADERS) - 1
        room = t.viewport().width() - max(t.sizeHintForColumn(last), hh.sectionSizeHint(last))
        floors = {0: FIGURE_MIN_PX, 1: VALUE_MIN_PX, 2: VALUE_MIN_PX, 3: VALUE_MIN_PX}
        while sum(hh.sectionSize(c) for c in range(last)) > room:
            wide = max((c for c in floors if hh.sectionSize(c) > floors[c]), key=hh.sectionSize, default=None)
            if wide is None:
                break  # as narrow as they read: the table scrolls
            over = sum(hh.sectionSize(c) for c in range(last)) - room
            hh.resizeSection(wide, max(floors[wide], hh.sectionSize(wide) - over))

    def eventFilter(self, obj, ev) -> bool:  # noqa: N802 (Qt naming): the table's viewport, resized after the page
        if ev.type() == QtCore.QEvent.Type.Resize and obj is self.table.viewport() and self.table.rowCount():
            self._fit_columns()
        return False

    def _update_enabled(self) -> None:
        have = self.a is not None and self.b is not None
        self.swap_btn.setEnabled(have)

    # -- for tests and the window -------------------------------------------------------------
    def figure(self, key: str) -> ComparedFigure | None:
        """The first compare row whose key is ``key`` ("plain_tok_s", a block such as "moe", "verify.whole_ms")."""
        if not self.result:
            return None
        for section, _, _ in SECTIONS:
            for row in self.result.get(section) or []:
                if row.get("key") == key:
                    return row
        return None

    def row_texts(self) -> list[list[str]]:
        t = self.table
        return [[(item.text() if (item := t.item(r, c)) else "") for c in range(t.columnCount())] for r in range(t.rowCount())]

    def apply_theme(self, theme: ChartTheme) -> None:
        self.theme = theme
        if self.result:
            self._fill(self.result)
