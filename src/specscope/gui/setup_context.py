"""The setup panel's context rows: none, N tokens of a shipped document, or N tokens of the user's own file, for a
single run; shown from a loaded session or the saved settings, and turned into the RunConfig's context fields."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6 import QtWidgets

from specscope.profiler.run.context import KINDS as CONTEXT_KINDS

from .records import ContextFields

if TYPE_CHECKING:
    PanelBase = QtWidgets.QWidget
else:
    PanelBase = object

CONTEXT_MODES = [("none", "none"), ("shipped", "shipped text"), ("file", "my file")]


class ContextChoice(PanelBase):
    """The Context and Context file rows, mixed into ``SetupPanel``."""

    changed: Any  # SetupPanel's signal

    def _context_rows(self, form: QtWidgets.QFormLayout) -> None:
        """Context for a single run (``run --context N --context-kind K`` or ``--context-file FILE``): none, N tokens
        of a shipped document, or N tokens of the user's own text. The Context page sweeps several sizes."""
        row = QtWidgets.QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        self.context_mode = QtWidgets.QComboBox()
        for key, label in CONTEXT_MODES:
            self.context_mode.addItem(label, key)
        self.context_mode.setToolTip("tokens of a long document put before every case's prompt, prefilled once, timed on "
                                     "its own and copied per case and mode (docs: Long context)")
        self.context_size = QtWidgets.QLineEdit("4k")
        self.context_size.setToolTip("context size in tokens: 4096 or 4k")
        self.context_size.setMaximumWidth(64)
        self.context_kind = QtWidgets.QComboBox()
        self.context_kind.addItems(list(CONTEXT_KINDS))
        self.context_kind.setToolTip("which shipped document: mixed is a third each of English, code and Chinese")
        for w in (self.context_mode, self.context_size, self.context_kind):
            row.addWidget(w)
        cw = QtWidgets.QWidget()
        cw.setLayout(row)
        form.addRow("Context", cw)
        frow = QtWidgets.QHBoxLayout()
        frow.setContentsMargins(0, 0, 0, 0)
        self.context_file = QtWidgets.QLineEdit()
        self.context_file.setPlaceholderText("your own UTF-8 text")
        self.context_file_btn = QtWidgets.QPushButton("…")
        self.context_file_btn.setFixedWidth(32)
        self.context_file_btn.clicked.connect(self._browse_context_file)
        frow.addWidget(self.context_file, 1)
        frow.addWidget(self.context_file_btn)
        fw = QtWidgets.QWidget()
        fw.setLayout(frow)
        form.addRow("Context file", fw)
        self.context_mode.currentIndexChanged.connect(self._context_changed)
        self.context_size.textChanged.connect(lambda *_: self.changed.emit())
        self.context_kind.currentIndexChanged.connect(lambda *_: self.changed.emit())
        self.context_file.textChanged.connect(lambda *_: self.changed.emit())
        self._context_changed()

    def _context_changed(self, *_):
        mode = self.context_mode.currentData()
        self.context_size.setEnabled(mode != "none")
        self.context_kind.setEnabled(mode == "shipped")
        self.context_file.setEnabled(mode == "file")
        self.context_file_btn.setEnabled(mode == "file")
        self.changed.emit()

    def _browse_context_file(self):
        f, _ = QtWidgets.QFileDialog.getOpenFileName(self, "Choose a context file (UTF-8 text)", str(Path.home()),
                                                     "Text (*.txt *.md *.py *.json *.*)")
        if f:
            self.context_file.setText(f)

    def set_context(self, n: int = 0, kind: str = "mixed", file: str | None = None) -> None:
        """Show a context choice (a loaded session's, or the saved settings')."""
        self.context_mode.setCurrentIndex(self.context_mode.findData("none" if not n else "file" if file else "shipped"))
        if n:
            self.context_size.setText(f"{n // 1024}k" if n % 1024 == 0 else str(n))
        if kind in CONTEXT_KINDS:
            self.context_kind.setCurrentText(kind)
        if file:
            self.context_file.setText(str(file))

    def context_fields(self) -> ContextFields:
        """The RunConfig fields of the context choice. A size that is not one, or a file mode without a file, is
        refused with the reason (the app shows it; nothing starts)."""
        from specscope.errors import SpecscopeError
        from specscope.profiler.run.context import parse_size

        mode = self.context_mode.currentData()
        kind = self.context_kind.currentText()
        if mode == "none":
            return {"context": 0, "context_kind": kind, "context_file": None}
        n = parse_size(self.context_size.text())
        if n <= 0:
            raise SpecscopeError(f"Context: {self.context_size.text()!r} tokens; give a size above 0 (e.g. 4k), or "
                                 "choose no context")
        if mode == "file":
            f = self.context_file.text().strip()
            if not f:
                raise SpecscopeError("Context: choose the context file (or another kind of context)")
            return {"context": n, "context_kind": kind, "context_file": f}
        return {"context": n, "context_kind": kind, "context_file": None}
