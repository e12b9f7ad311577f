"""Small shared widgets: a metric tile and a plain-text label."""

from __future__ import annotations

import os
import re

from PySide6 import QtCore, QtGui, QtWidgets

from specscope.profiler.formatting import DASH
from specscope.profiler.formatting import fmt as _fmt

LABEL_MAX_CHARS = 2000  # a label shows at most this much of a (hostile or runaway) text
ZWSP = "\u200b"


def breakable(text: str, every: int = 80) -> str:
    """Insert a zero-width space into every run of more than ``every`` non-space characters.

    Qt lays out one unbreakable 200,000-character "word" for seconds to minutes (and a label sizes itself
    to its longest word: a window 17,000 px wide), so very long runs get invisible break points. Normal
    text (words, CJK, code lines with spaces) is unchanged.
    """
    if not text or len(text) <= every:
        return text
    return re.sub(r"\S{%d}(?=\S)" % every, lambda m: m.group(0) + ZWSP, text)


def home_relative(path) -> str:
    """A path as the user reads it: ``~/…`` under the home folder, unchanged elsewhere."""
    text = os.fspath(path)
    home = os.path.expanduser("~").rstrip("/\\")
    if not home or home == "~" or len(home) <= 1:
        return text
    if not os.path.isabs(os.path.expanduser(text)):
        return text  # relative to the working folder: already short, and no home path in it
    full = os.path.normpath(os.path.expanduser(text))
    if full == home:
        return "~"
    if full.startswith(home + os.sep):
        return "~" + os.sep + full[len(home) + 1:]
    return text


def clip(text: str, limit: int = LABEL_MAX_CHARS) -> str:
    if text and len(text) > limit:
        return text[:limit] + f"… (+{len(text) - limit:,} more characters)"
    return text


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

    def text(self) -> str:  # noqa: D102: the whole text, as set (what a reader of the widget's content wants)
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
