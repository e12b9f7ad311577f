"""The setup panel's model choice: the model box (models found on disk, recent paths, the built-in demo), its
inspection line, picking a folder, and describing the model a shown session measured."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from PySide6 import QtCore, QtWidgets

from specscope.profiler.session.records import SessionData

from specscope.demo_labels import demo_kind

from .inspector import DEMO, DEMO_RANDOM, DEMOS, Inspector, describe_line
from .model_finder import find_models, label_for, looks_like_model

if TYPE_CHECKING:
    from .views.common import PlainLabel

    PanelBase = QtWidgets.QWidget
else:
    PanelBase = object

MAX_RECENT = 8


def session_model_entry(cfg: dict, model: dict) -> str | None:
    """The model box entry for a session's model: the built-in demo it ran (trained or random), else its path. A
    ``--shape`` slice is a folder of the user's, named by its path."""
    if cfg.get("demo") and demo_kind(model.get("demo")) != "shape":
        return DEMO_RANDOM if demo_kind(model.get("demo")) == "synthetic" else DEMO
    return cfg.get("model_path") or model.get("path") or cfg.get("model")


class ModelChoice(PanelBase):
    """The Model group's behaviour and the recent-models list, mixed into ``SetupPanel``."""

    model_changed: Any  # SetupPanel's signals
    changed: Any
    settings: QtCore.QSettings
    inspector: Inspector
    model_combo: QtWidgets.QComboBox
    compat: PlainLabel
    k: Any
    draft_model: QtWidgets.QLineEdit
    max_tokens: Any
    cases: Any
    warmup: Any
    repeats: Any
    discard_first: Any
    greedy: QtWidgets.QCheckBox
    temp: Any
    top_p: Any
    seed: Any
    set_drafter: Callable[[str], None]
    set_context: Callable[..., None]

    def recent(self) -> list[str]:
        v: Any = self.settings.value("recent_models", [])  # a list, or one str where one was stored
        if isinstance(v, str):
            v = [v]
        return [str(x) for x in (v or [])]

    def add_recent(self, path: str) -> None:
        if path in DEMOS:
            return
        r = [p for p in self.recent() if p != path]
        self.settings.setValue("recent_models", ([path] + r)[:MAX_RECENT])

    def refresh_models(self, select: str | None = None) -> None:
        cur = select or self.model_path()
        self.model_combo.blockSignals(True)
        self.model_combo.clear()
        self.model_combo.addItem(DEMOS[DEMO][0], DEMO)
        if cur == DEMO_RANDOM:  # offered where a shown session ran it (or it was picked before)
            self.model_combo.addItem(DEMOS[DEMO_RANDOM][0], DEMO_RANDOM)
        for label, path in find_models(self.recent()):
            self.model_combo.addItem(label, path)
            self.model_combo.setItemData(self.model_combo.count() - 1, path, QtCore.Qt.ItemDataRole.ToolTipRole)
        self.model_combo.blockSignals(False)
        if cur:
            self.set_model(cur, inspect=False)

    def model_path(self) -> str | None:
        return self.model_combo.currentData()

    def set_model(self, path: str, inspect: bool = True) -> None:
        i = self.model_combo.findData(path)
        if i < 0:
            self.model_combo.blockSignals(True)
            self.model_combo.addItem(DEMOS[path][0] if path in DEMOS else label_for(path), path)
            self.model_combo.setItemData(self.model_combo.count() - 1, path, QtCore.Qt.ItemDataRole.ToolTipRole)
            self.model_combo.blockSignals(False)
            i = self.model_combo.count() - 1
        if i == self.model_combo.currentIndex():
            if inspect:
                self._model_picked()
        else:
            self.model_combo.setCurrentIndex(i)

    def _model_picked(self, *_):
        path = self.model_path()
        if not path:
            return
        self.compat.setText("inspecting…")
        self.inspector.inspect(path)
        self.model_changed.emit(path)
        self.changed.emit()

    def show_session(self, data: SessionData) -> None:
        """Describe the model a shown session measured (opened from a file, ``gui --session`` or the History
        page), from the session's own record of it: the model box picks it (or names it, when its folder is
        not on this machine) and the line under it says what the session says, never a stale inspection of
        the model picked before. The drafter and k, the protocol (tokens, cases, warm-ups, repeats, discarded
        cases) and the sampling follow the session too, so Run repeats it."""
        cfg = data.get("config") or {}
        model = data.get("model") or {}
        path = session_model_entry(cfg, model)
        if not path:
            return
        self.inspector.current = None  # an inspection still running for the previous pick is dropped
        self.model_combo.blockSignals(True)
        i = self.model_combo.findData(path)
        if i < 0 and path in DEMOS:
            self.model_combo.addItem(DEMOS[path][0], path)
            i = self.model_combo.count() - 1
        elif i < 0:
            missing = not Path(path).exists()
            label = (model.get("name") or label_for(path)) + ("  (not on this machine)" if missing else "")
            self.model_combo.addItem(label if missing else label_for(path), path)
            i = self.model_combo.count() - 1
            self.model_combo.setItemData(i, path, QtCore.Qt.ItemDataRole.ToolTipRole)
        self.model_combo.setCurrentIndex(i)
        self.model_combo.blockSignals(False)
        line = describe_line(model) if model else (model.get("name") or str(path))
        self.compat.setText(f"This session's model: {line}")
        self.compat.setProperty("state", "session")
        drafter = (cfg.get("drafter") or {}).get("name") if isinstance(cfg.get("drafter"), dict) else cfg.get("drafter")
        if drafter:
            self.set_drafter(drafter)
        if drafter in ("draft", "dflash"):  # its draft model or DFlash folder too (none: the demo's own, the placeholder)
            self.draft_model.setText(cfg.get("draft_model") or "")
        if cfg.get("num_draft_tokens"):
            self.k.setValue(int(cfg["num_draft_tokens"]))
        self._show_protocol(cfg)
        if not cfg.get("sweep"):  # a single run's context (a sweep's sizes are the Context page's)
            self.set_context(int(cfg.get("context") or 0), cfg.get("context_kind") or "mixed", cfg.get("context_file"))
        self.model_changed.emit(path)
        self.changed.emit()

    def _show_protocol(self, cfg: dict) -> None:
        """The session's protocol and sampling into the setup (what it does not record keeps the user's setting)."""
        for box, key in ((self.max_tokens, "max_tokens"), (self.warmup, "warmup"), (self.repeats, "repeats"),
                         (self.discard_first, "discard_first"), (self.seed, "seed")):
            if isinstance(cfg.get(key), int):
                box.setValue(int(cfg[key]))
        if "cases" in cfg:
            self.cases.setValue(int(cfg.get("cases") or 0))  # none: "all"
        if isinstance(cfg.get("temp"), (int, float)):
            self.greedy.setChecked(float(cfg["temp"]) == 0.0)
            if cfg["temp"]:
                self.temp.setValue(float(cfg["temp"]))
                self.top_p.setValue(float(cfg.get("top_p") or 1.0))

    def _inspected(self, path: str, d: dict) -> None:
        if path == self.model_path():
            self.compat.setText(describe_line(d))
            self.compat.setProperty("state", "ok")

    def _inspect_failed(self, path: str, msg: str) -> None:
        if path == self.model_path():
            self.compat.setText(f"⚠ {msg}")

    def _browse(self):
        d = QtWidgets.QFileDialog.getExistingDirectory(self, "Choose a model folder (with config.json)")
        if d:
            self.pick_folder(d)

    def pick_folder(self, d: str) -> bool:
        if not looks_like_model(d):
            self.compat.setText(f"⚠ {d} has no config.json: not a model folder")
            return False
        self.add_recent(d)
        self.set_model(d)
        return True
