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


class Tile(QtWidgets.QFrame):
    """A metric: small caption, big value, small note."""

    def __init__(self, caption: str, parent=None):
        super().__init__(parent)
        self.setObjectName("tile")
        self.setFrameShape(QtWidgets.QFrame.Shape.StyledPanel)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(10, 6, 10, 6)
        lay.setSpacing(0)
        self.caption = plain_label(caption, wrap=False, selectable=False)
        self.caption.setObjectName("tileCaption")
        self.value = plain_label("—", wrap=False)
        self.value.setObjectName("tileValue")
        self.note = plain_label("", wrap=True)
        self.note.setObjectName("tileNote")
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
