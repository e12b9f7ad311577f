"""Small shared widgets: a metric tile and a plain-text label."""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets


def plain_label(text: str = "", wrap: bool = True, selectable: bool = True) -> QtWidgets.QLabel:
    """A QLabel that never interprets its text as HTML."""
    lab = QtWidgets.QLabel()
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


def fmt(x, spec: str = ".1f", suffix: str = "", none: str = "—") -> str:
    return none if x is None else f"{x:{spec}}{suffix}"
