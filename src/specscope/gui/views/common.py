"""Small shared widgets: a metric tile and a plain-text label."""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from specscope.profiler.analysis.formatting import DASH
from specscope.profiler.session.records import Summary
from specscope.profiler.analysis.formatting import fmt as _fmt

from ..text import ZWSP as ZWSP  # re-exported: tests/reliability reads it here
from ..text import breakable, clip


class PlainLabel(QtWidgets.QLabel):
    """A QLabel that never interprets its text as HTML and stays fast and narrow for any text."""

    def setText(self, text: str) -> None:  # noqa: N802 (Qt naming)
        super().setText(breakable(clip(str(text))))


def plain_label(text: str = "", wrap: bool = True, selectable: bool = True) -> QtWidgets.QLabel:
    """A QLabel that never interprets its text as HTML."""
    lab = PlainLabel()
    lab.setTextFormat(QtCore.Qt.TextFormat.PlainText)
    lab.setWordWrap(wrap)
    if selectable:
        lab.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
    lab.setText(text)
    return lab


class ElidingLabel(QtWidgets.QLabel):
    """Plain text wrapped to at most ``max_lines`` lines at the width it gets; what does not fit ends in "…"
    and the whole text becomes the tooltip. Its height is always ``max_lines`` lines, so a box of them keeps
    its size whatever the text (a resize repaints every chart beside it). The layout test recognises it by
    its ``elides`` property."""

    def __init__(self, text: str = "", max_lines: int = 1, parent=None):
        super().__init__(parent)
        self.max_lines = max_lines
        self._full = ""
        self._tip = ""
        self.elided = False
        self.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        self.setWordWrap(False)
        self.setProperty("elides", True)
        self.setAlignment(QtCore.Qt.AlignmentFlag.AlignLeft | QtCore.Qt.AlignmentFlag.AlignTop)
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Fixed)
        self.setText(text)

    def full_text(self) -> str:
        return self._full

    def text(self) -> str:  # noqa: D102 (the whole text, as set — what a reader of the widget's content wants)
        return self._full

    def shown_text(self) -> str:
        """The lines on screen, ending in "…" when elided."""
        return super().text()

    def setText(self, text: str) -> None:  # noqa: N802 (Qt naming)
        text = clip(str(text))
        if text == self._full and self.shown_text():
            return
        self._full = text
        self._relayout()

    def setToolTip(self, tip: str) -> None:  # noqa: N802 (Qt naming): the tooltip shown when nothing is elided
        self._tip = tip
        super().setToolTip(self._full if self.elided and not tip else tip)

    def _lines(self, width: int) -> tuple[list[str], bool]:
        text = self._full.replace("\n", "\u2028")
        layout = QtGui.QTextLayout(text, self.font())
        opt = QtGui.QTextOption()
        opt.setWrapMode(QtGui.QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        layout.setTextOption(opt)
        spans = []
        layout.beginLayout()
        while True:
            line = layout.createLine()
            if not line.isValid():
                break
            line.setLineWidth(max(1, width))
            spans.append((line.textStart(), line.textLength()))
        layout.endLayout()
        pieces = [text[a:a + n].replace("\u2028", "").rstrip() for a, n in spans]
        if len(pieces) <= self.max_lines:
            return pieces, False
        keep = pieces[: self.max_lines - 1]
        rest = text[spans[self.max_lines - 1][0]:].replace("\u2028", " ")
        last = self.fontMetrics().elidedText(" ".join(rest.split()) + " …", QtCore.Qt.TextElideMode.ElideRight, max(1, width))
        if not last.endswith("…"):
            last = last.rstrip(" …") + "…"
        return keep + [last], True

    def _relayout(self) -> None:
        self.ensurePolished()
        width = self.contentsRect().width()
        lines, self.elided = self._lines(width) if width > 0 and self._full else ([self._full], False)
        super().setText("\n".join(lines))
        super().setToolTip(self._tip or (self._full if self.elided else ""))

    def resizeEvent(self, e: QtGui.QResizeEvent) -> None:  # noqa: N802 (Qt naming)
        super().resizeEvent(e)
        self._relayout()

    def changeEvent(self, e: QtCore.QEvent) -> None:  # noqa: N802 (Qt naming): a style sheet changed the font
        super().changeEvent(e)
        if e.type() in (QtCore.QEvent.Type.FontChange, QtCore.QEvent.Type.StyleChange):
            self._relayout()

    def sizeHint(self) -> QtCore.QSize:  # noqa: N802 (Qt naming)
        self.ensurePolished()
        fm = self.fontMetrics()
        m = self.contentsMargins()
        first = self._full.split("\n", 1)[0]
        return QtCore.QSize(min(fm.horizontalAdvance(first), 40 * fm.averageCharWidth()) + m.left() + m.right(),
                            self.max_lines * fm.lineSpacing() + m.top() + m.bottom())

    def minimumSizeHint(self) -> QtCore.QSize:  # noqa: N802 (Qt naming)
        hint = self.sizeHint()
        return QtCore.QSize(self.fontMetrics().horizontalAdvance("…") * 4, hint.height())


class FittingLabel(ElidingLabel):
    """An ElidingLabel only as tall as its text needs at the width it gets, up to ``max_lines`` lines (then "…",
    the whole text in the tooltip): a short verdict takes one line, a long one never pushes the page under it
    off a small screen. ``set_max_lines`` changes the budget (the window's height decides it)."""

    def __init__(self, text: str = "", max_lines: int = 3, parent=None):
        super().__init__(text, max_lines, parent)
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Preferred)

    def set_max_lines(self, n: int) -> None:
        if n != self.max_lines:
            self.max_lines = n
            self._relayout()

    def _relayout(self) -> None:
        super()._relayout()
        shown = self.shown_text().count("\n") + 1 if self.shown_text() else 0
        if shown != getattr(self, "_shown_lines", None):  # a new height: the layout asks heightForWidth again
            self._shown_lines = shown
            self.updateGeometry()

    def hasHeightForWidth(self) -> bool:  # noqa: N802 (Qt naming)
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802 (Qt naming)
        self.ensurePolished()
        m = self.contentsMargins()
        inner = width - m.left() - m.right()
        n = len(self._lines(inner)[0]) if inner > 0 and self._full else (1 if self._full else 0)
        return n * self.fontMetrics().lineSpacing() + m.top() + m.bottom()

    def sizeHint(self) -> QtCore.QSize:  # noqa: N802 (Qt naming)
        hint = super().sizeHint()
        return QtCore.QSize(hint.width(), self.heightForWidth(self.width() if self.width() > 1 else hint.width()))

    def minimumSizeHint(self) -> QtCore.QSize:  # noqa: N802 (Qt naming): one line; the layout asks heightForWidth
        m = self.contentsMargins()
        return QtCore.QSize(self.fontMetrics().horizontalAdvance("…") * 4,
                            (self.fontMetrics().lineSpacing() if self._full else 0) + m.top() + m.bottom())


class Tile(QtWidgets.QFrame):
    """A metric: small caption, big value, small note (up to NOTE_LINES lines, then elided with a tooltip)."""

    NOTE_LINES = 3

    def __init__(self, caption: str, parent=None):
        super().__init__(parent)
        self.setObjectName("tile")
        self.setFrameShape(QtWidgets.QFrame.Shape.StyledPanel)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(10, 6, 10, 6)
        lay.setSpacing(0)
        self.caption = ElidingLabel(caption, 1)
        self.caption.setObjectName("tileCaption")
        self.value = plain_label("—", wrap=False)
        self.value.setObjectName("tileValue")
        self.note = ElidingLabel("", self.NOTE_LINES)
        self.note.setObjectName("tileNote")
        self.note.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.caption)
        lay.addWidget(self.value)
        lay.addWidget(self.note)
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Expanding, QtWidgets.QSizePolicy.Policy.Fixed)

    def set(self, value: str, note: str = "") -> None:
        self.value.setText(value)
        self.note.setText(note)


def fmt(x, spec: str = ".1f", suffix: str = "", none: str = DASH) -> str:
    """The core's one "format or dash" rule, with the app's default precision."""
    return _fmt(x, spec, suffix, none)


def sortable_table(owner: QtCore.QObject, columns: list[str], sort_role: int):
    """(model, proxy, view): a row-selecting table sorted by ``sort_role`` (raw values, not display text)."""
    model = QtGui.QStandardItemModel(0, len(columns), owner)
    model.setHorizontalHeaderLabels(columns)
    proxy = QtCore.QSortFilterProxyModel(owner)
    proxy.setSourceModel(model)
    proxy.setSortRole(sort_role)
    view = QtWidgets.QTableView()
    view.setModel(proxy)
    view.setSortingEnabled(True)
    view.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
    return model, proxy, view


def read_only_table(columns: list[str]) -> QtWidgets.QTableWidget:
    """A table the user reads, not edits: headed ``columns``, no row numbers, columns sized to their content."""
    table = QtWidgets.QTableWidget(0, len(columns))
    table.setHorizontalHeaderLabels(columns)
    table.verticalHeader().setVisible(False)
    table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
    table.horizontalHeader().setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
    return table


def headline_label(text: str) -> QtWidgets.QLabel:
    """A page's headline: plain text, its font a quarter larger, bold."""
    label = plain_label(text)
    f = label.font()
    f.setPointSizeF(f.pointSizeF() * 1.25)
    f.setBold(True)
    label.setFont(f)
    return label


def spin_box(low: int, high: int, value: int, prefix: str) -> QtWidgets.QSpinBox:
    box = QtWidgets.QSpinBox()
    box.setRange(low, high)
    box.setValue(value)
    box.setPrefix(prefix)
    return box


# The ledger (the run's own instrumented rounds) stands in for a curve or figure where nothing was timed apart: it is
# a consistency check, never a prediction, and says so wherever it stands in.
LEDGER_LABEL = "ledger (the run's own rounds), not a prediction"


def set_speedup_tile(tile: Tile, s: Summary, caption: str, extra: str = "") -> None:
    """A measured-speedup tile whose figure is the one its prediction error is judged against: the full rounds where
    some rounds drafted fewer than k (labelled so, the all-rounds figure beside it, labelled), else the measured one.
    The error and the verdict in the core's words (``prediction_error_text``, ``prediction_short``: each interval with
    its level and method)."""
    from specscope.profiler.analysis.verdict import prediction_error_text, prediction_short, tail_text

    full = tail_text(s) is not None
    tile.caption.setText(f"{caption}, full rounds" if full else caption)
    value = s.get("judged_measured_speedup") if full else s.get("measured_speedup")
    error = (f"prediction error {prediction_error_text(s) or '—'}" if s.get("predicted_speedup") is not None
             else "no prediction to judge")
    parts = [error, f"all rounds {fmt(s.get('measured_speedup'), '.3f', '×')}" if full else "", prediction_short(s)]
    note = " · ".join(x for x in parts if x and x != "—") + extra
    tile.set(fmt(value, ".3f", "×"), note)
    tile.setToolTip("\n".join(x for x in (note, tail_text(s) or "", (s.get("prediction_verdict") or {}).get("text") or "")
                              if x))
