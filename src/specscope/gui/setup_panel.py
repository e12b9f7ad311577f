"""The setup panel: model, where it runs, drafter, k, sampling, suite, budget. Settings persist via QSettings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6 import QtCore, QtWidgets

from specscope.profiler.run.config import MAX_K, RunConfig
from specscope.profiler.run.context import KINDS as CONTEXT_KINDS
from specscope.profiler.run.launch import BACKENDS, MAX_LOCAL_RANKS
from specscope.profiler.session.records import SessionData

from .inspector import DEMO, Inspector, describe_line
from .model_finder import find_models, label_for, looks_like_model
from .views.common import PlainLabel

DRAFTERS = [("auto", "Auto (MTP if present)"), ("mtp", "MTP head"), ("draft", "Draft model"), ("ngram", "N-gram (prompt lookup)"), ("oracle", "Oracle what-if")]
MAX_RECENT = 8
CONTEXT_MODES = [("none", "none"), ("shipped", "shipped text"), ("file", "my file")]
WHERE = [("local", "This machine"), ("ranks", "N ranks on this machine"), ("hosts", "Several machines (hosts)")]


class SetupPanel(QtWidgets.QWidget):
    model_changed = QtCore.Signal(str)
    changed = QtCore.Signal()

    def __init__(self, settings: QtCore.QSettings, parent=None):
        super().__init__(parent)
        self.settings = settings
        self.setAcceptDrops(True)
        self.inspector = Inspector(self)
        self.inspector.result.connect(self._inspected)
        self.inspector.failed.connect(self._inspect_failed)
        self._build()
        self.refresh_models()
        self.load_settings()
        self._drafter_changed()
        self._sampling_changed()
        self._where_changed()

    # -- layout -------------------------------------------------------------------
    def _group(self, title: str) -> tuple[QtWidgets.QGroupBox, QtWidgets.QFormLayout]:
        box = QtWidgets.QGroupBox(title)
        form = QtWidgets.QFormLayout(box)
        form.setFieldGrowthPolicy(QtWidgets.QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.setLabelAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
        self._layout.addWidget(box)
        return box, form

    def _spin(self, lo, hi, val, step=1, decimals=None, suffix=""):
        if decimals is None:
            w = QtWidgets.QSpinBox()
        else:
            w = QtWidgets.QDoubleSpinBox()
            w.setDecimals(decimals)
            w.setSingleStep(step)
        w.setRange(lo, hi)
        w.setValue(val)
        if suffix:
            w.setSuffix(suffix)
        w.valueChanged.connect(lambda *_: self.changed.emit())
        return w

    def _build(self):
        self._layout = QtWidgets.QVBoxLayout(self)
        self._layout.setContentsMargins(8, 8, 8, 8)
        self._layout.setSpacing(10)

        box, form = self._group("Model")
        row = QtWidgets.QHBoxLayout()
        self.model_combo = QtWidgets.QComboBox()
        self.model_combo.setSizeAdjustPolicy(QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.model_combo.setMinimumContentsLength(18)
        self.model_combo.setToolTip("Models found on disk (Hugging Face cache, LM Studio), recent paths, and the built-in demo.\n"
                                    "You can also drop a model folder onto this panel.")
        self.model_combo.currentIndexChanged.connect(self._model_picked)
        self.browse = QtWidgets.QPushButton("Browse…")
        self.browse.clicked.connect(self._browse)
        row.addWidget(self.model_combo, 1)
        row.addWidget(self.browse)
        form.addRow(row)
        self.compat = PlainLabel()
        self.compat.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        self.compat.setWordWrap(True)
        self.compat.setObjectName("compat")
        form.addRow(self.compat)

        box, form = self._group("Where")
        self.where = QtWidgets.QComboBox()
        for key, label in WHERE:
            self.where.addItem(label, key)
        self.where.setToolTip("This machine: one process. N ranks / hosts: the target is sharded (tensor parallel) "
                              "over MLX distributed ranks started by mlx.launch; drafting is replicated on every rank. "
                              "README: Several machines")
        self.where.currentIndexChanged.connect(self._where_changed)
        form.addRow("Run on", self.where)
        self.ranks = self._spin(1, MAX_LOCAL_RANKS, 2)
        self.ranks.setToolTip("processes on this machine, ring backend over loopback (for trying it out)")
        form.addRow("Ranks", self.ranks)
        self.hosts = QtWidgets.QLineEdit()
        self.hosts.setPlaceholderText("mac1.local,mac2.local or hosts.json")
        self.hosts.setToolTip("one rank per host (password-less ssh, the same Python environment at the same path), "
                              "or an mlx.launch hostfile (.json, e.g. from mlx.distributed_config; needed for JACCL)")
        self.hosts.textChanged.connect(lambda *_: self.changed.emit())
        form.addRow("Hosts", self.hosts)
        self.backend = QtWidgets.QComboBox()
        self.backend.addItems(list(BACKENDS))
        self.backend.setToolTip("ring: TCP over Ethernet or Thunderbolt; jaccl: Thunderbolt RDMA (needs a hostfile); "
                                "any: MLX picks")
        form.addRow("Backend", self.backend)
        self._where_form = form

        box, form = self._group("Drafter")
        self.drafter = QtWidgets.QComboBox()
        for key, label in DRAFTERS:
            self.drafter.addItem(label, key)
        self.drafter.currentIndexChanged.connect(self._drafter_changed)
        form.addRow("Drafter", self.drafter)
        self.k = self._spin(1, MAX_K, 2)
        self.k.setToolTip("draft tokens per round; verify runs k+1 positions")
        form.addRow("Draft tokens k", self.k)
        drow = QtWidgets.QHBoxLayout()
        self.draft_model = QtWidgets.QLineEdit()
        self.draft_model.setPlaceholderText("demo draft model")
        self.draft_browse = QtWidgets.QPushButton("…")
        self.draft_browse.setFixedWidth(32)
        self.draft_browse.clicked.connect(self._browse_draft)
        drow.addWidget(self.draft_model, 1)
        drow.addWidget(self.draft_browse)
        self.draft_row = QtWidgets.QWidget()
        self.draft_row.setLayout(drow)
        drow.setContentsMargins(0, 0, 0, 0)
        form.addRow("Draft model", self.draft_row)
        self.oracle_p = self._spin(0.0, 1.0, 0.75, 0.05, 2)
        self.oracle_ms = self._spin(0.0, 10000.0, 0.0, 0.5, 2, " ms")
        form.addRow("Oracle p", self.oracle_p)
        form.addRow("Oracle draft cost", self.oracle_ms)
        self.mtp_hidden = QtWidgets.QComboBox()
        self.mtp_hidden.addItems(["post-norm", "pre-norm"])
        form.addRow("MTP hidden", self.mtp_hidden)
        self._drafter_form = form

        box, form = self._group("Sampling")
        self.greedy = QtWidgets.QCheckBox("Greedy (temperature 0)")
        self.greedy.setChecked(True)
        self.greedy.toggled.connect(self._sampling_changed)
        form.addRow(self.greedy)
        self.temp = self._spin(0.0, 5.0, 0.7, 0.1, 2)
        self.top_p = self._spin(0.01, 1.0, 1.0, 0.05, 2)
        self.seed = self._spin(0, 2**31 - 1, 0)
        form.addRow("Temperature", self.temp)
        form.addRow("Top-p", self.top_p)
        form.addRow("Seed", self.seed)

        box, form = self._group("Protocol")
        srow = QtWidgets.QHBoxLayout()
        self.suite = QtWidgets.QLineEdit()
        self.suite.setPlaceholderText("built-in: 6 zh, 6 en, 6 code")
        sb = QtWidgets.QPushButton("…")
        sb.setFixedWidth(32)
        sb.clicked.connect(self._browse_suite)
        srow.addWidget(self.suite, 1)
        srow.addWidget(sb)
        srow.setContentsMargins(0, 0, 0, 0)
        sw = QtWidgets.QWidget()
        sw.setLayout(srow)
        form.addRow("Suite", sw)
        self.cases = self._spin(0, 999, 0)
        self.cases.setSpecialValueText("all")
        self.cases.setToolTip("run only the first N cases, spread across content classes (all = the whole suite)")
        form.addRow("Cases", self.cases)
        self.max_tokens = self._spin(2, 8192, 128)
        form.addRow("Max new tokens", self.max_tokens)
        self._context_rows(form)
        self.warmup = self._spin(0, 20, 1)
        form.addRow("Warm-up runs", self.warmup)
        self.repeats = self._spin(1, 50, 1)
        self.repeats.setToolTip("measured repeats per case, plain and speculative in ABBA order; "
                                "rates are medians over repeats, shown with their spread")
        form.addRow("Repeats", self.repeats)
        self.discard_first = self._spin(0, 99, 0)
        self.discard_first.setToolTip("the first N cases are measured and kept in the session, marked, "
                                      "but left out of the summary (the machine settling in)")
        form.addRow("Discard first", self.discard_first)
        self.cooldown = QtWidgets.QCheckBox("Cool down before each case")
        self.cooldown.setToolTip("before each case, wait until the clock probe is back within 2% of its best "
                                 "(at most the timeout)")
        self.cooldown.toggled.connect(lambda on: (self.cooldown_timeout.setEnabled(on), self.changed.emit()))
        form.addRow(self.cooldown)
        self.cooldown_timeout = self._spin(5, 3600, 120, suffix=" s")
        self.cooldown_timeout.setEnabled(False)
        form.addRow("Cooldown timeout", self.cooldown_timeout)
        self.breakdown = QtWidgets.QCheckBox("Per-block breakdown")
        self.breakdown.setChecked(True)
        form.addRow(self.breakdown)
        self._layout.addStretch(1)

    # -- long context -------------------------------------------------------------
    def _context_rows(self, form: QtWidgets.QFormLayout) -> None:
        """Context for a single run (``run --context N --context-kind K`` or ``--context-file FILE``): none, N tokens
        of a shipped document, or N tokens of the user's own text. The Context page sweeps several sizes."""
        row = QtWidgets.QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        self.context_mode = QtWidgets.QComboBox()
        for key, label in CONTEXT_MODES:
            self.context_mode.addItem(label, key)
        self.context_mode.setToolTip("tokens of a long document put before every case's prompt, prefilled once, timed on "
                                     "its own and copied per case and mode (README: Long context)")
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

    def context_fields(self) -> dict:
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

    # -- models -------------------------------------------------------------------
    def recent(self) -> list[str]:
        v: Any = self.settings.value("recent_models", [])  # a list, or one str where one was stored
        if isinstance(v, str):
            v = [v]
        return [str(x) for x in (v or [])]

    def add_recent(self, path: str) -> None:
        if path == DEMO:
            return
        r = [p for p in self.recent() if p != path]
        self.settings.setValue("recent_models", ([path] + r)[:MAX_RECENT])

    def refresh_models(self, select: str | None = None) -> None:
        cur = select or self.model_path()
        self.model_combo.blockSignals(True)
        self.model_combo.clear()
        self.model_combo.addItem("Built-in demo (tiny trained)", DEMO)
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
            self.model_combo.addItem(label_for(path), path)
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
        the model picked before. The drafter and k follow the session too, so Run repeats it."""
        cfg = data.get("config") or {}
        model = data.get("model") or {}
        demo = bool(cfg.get("demo"))
        path = DEMO if demo else (cfg.get("model_path") or model.get("path") or cfg.get("model"))
        if not path:
            return
        self.inspector.current = None  # an inspection still running for the previous pick is dropped
        self.model_combo.blockSignals(True)
        i = self.model_combo.findData(path)
        if i < 0:
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
        if cfg.get("num_draft_tokens"):
            self.k.setValue(int(cfg["num_draft_tokens"]))
        if not cfg.get("sweep"):  # a single run's context (a sweep's sizes are the Context page's)
            self.set_context(int(cfg.get("context") or 0), cfg.get("context_kind") or "mixed", cfg.get("context_file"))
        self.model_changed.emit(path)
        self.changed.emit()

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

    def _browse_draft(self):
        d = QtWidgets.QFileDialog.getExistingDirectory(self, "Choose a draft model folder")
        if d:
            self.draft_model.setText(d)

    def _browse_suite(self):
        f, _ = QtWidgets.QFileDialog.getOpenFileName(self, "Choose a prompt suite", "", "Suite (*.json)")
        if f:
            self.suite.setText(f)

    # drag and drop of a model folder
    def dragEnterEvent(self, e):
        if e.mimeData().hasUrls() and any(u.isLocalFile() for u in e.mimeData().urls()):
            e.acceptProposedAction()

    def dropEvent(self, e):
        for u in e.mimeData().urls():
            if u.isLocalFile() and Path(u.toLocalFile()).is_dir():
                self.pick_folder(u.toLocalFile())
                e.acceptProposedAction()
                return

    # -- options ----------------------------------------------------------------
    def _drafter_changed(self, *_):
        key = self.drafter.currentData()
        f = self._drafter_form
        f.setRowVisible(self.draft_row, key == "draft")
        f.setRowVisible(self.oracle_p, key == "oracle")
        f.setRowVisible(self.oracle_ms, key == "oracle")
        f.setRowVisible(self.mtp_hidden, key == "mtp")
        self.changed.emit()

    def _where_changed(self, *_):
        key = self.where.currentData()
        f = self._where_form
        f.setRowVisible(self.ranks, key == "ranks")
        f.setRowVisible(self.hosts, key == "hosts")
        f.setRowVisible(self.backend, key == "hosts")
        self.changed.emit()

    def set_where(self, key: str) -> None:
        i = self.where.findData(key)
        if i >= 0:
            self.where.setCurrentIndex(i)

    def set_ranks(self, n: int | None) -> None:
        """N ranks on this machine (``specscope gui --ranks N``); None or 0: this machine, one process."""
        if n:
            self.ranks.setValue(n)
            self.set_where("ranks")
        else:
            self.set_where("local")

    def distributed(self) -> dict:
        """The RunConfig fields of the Where choice (none set: a run in one process on this machine). Never
        raises: an empty or malformed host list is refused by ``RunConfig.validate`` with the reason."""
        key = self.where.currentData()
        if key == "ranks":
            return {"ranks": self.ranks.value()}
        if key == "hosts":
            text = self.hosts.text().strip()
            if text.lower().endswith(".json") and "," not in text:
                return {"hostfile": str(Path(text).expanduser()), "backend": self.backend.currentText()}
            return {"hosts": [h.strip() for h in text.split(",")], "backend": self.backend.currentText()}
        return {}

    def _sampling_changed(self, *_):
        g = self.greedy.isChecked()
        for w in (self.temp, self.top_p, self.seed):
            w.setEnabled(not g)
        self.changed.emit()

    def set_drafter(self, key: str) -> None:
        i = self.drafter.findData(key)
        if i >= 0:
            self.drafter.setCurrentIndex(i)

    def config(self) -> RunConfig:
        path = self.model_path()
        demo = path == DEMO
        key = self.drafter.currentData()
        return RunConfig(
            model=None if demo else path,
            demo=demo,
            drafter=key,
            draft_model=(self.draft_model.text().strip() or None) if key == "draft" else None,
            num_draft_tokens=self.k.value(),
            max_tokens=self.max_tokens.value(),
            temp=0.0 if self.greedy.isChecked() else self.temp.value(),
            top_p=1.0 if self.greedy.isChecked() else self.top_p.value(),
            seed=self.seed.value(),
            suite=self.suite.text().strip() or None,
            cases=self.cases.value() or None,
            warmup=self.warmup.value(),
            repeats=self.repeats.value(),
            discard_first=self.discard_first.value(),
            cooldown=self.cooldown.isChecked(),
            cooldown_timeout_s=float(self.cooldown_timeout.value()),
            breakdown=self.breakdown.isChecked(),
            oracle_p=self.oracle_p.value(),
            oracle_draft_ms=self.oracle_ms.value(),
            mtp_hidden=self.mtp_hidden.currentText(),
            **self.context_fields(),
            **self.distributed(),
        )

    # -- persistence --------------------------------------------------------------
    _SPINS = ("k", "max_tokens", "warmup", "repeats", "cases", "seed", "temp", "top_p", "oracle_p", "oracle_ms",
              "discard_first", "cooldown_timeout", "ranks")

    def save_settings(self) -> None:
        s = self.settings
        s.setValue("model", self.model_path() or DEMO)
        s.setValue("drafter", self.drafter.currentData())
        for name in self._SPINS:
            s.setValue(name, getattr(self, name).value())
        s.setValue("greedy", self.greedy.isChecked())
        s.setValue("breakdown", self.breakdown.isChecked())
        s.setValue("cooldown", self.cooldown.isChecked())
        s.setValue("draft_model", self.draft_model.text())
        s.setValue("suite", self.suite.text())
        s.setValue("mtp_hidden", self.mtp_hidden.currentText())
        s.setValue("where", self.where.currentData())
        s.setValue("hosts", self.hosts.text())
        s.setValue("backend", self.backend.currentText())
        s.setValue("context_mode", self.context_mode.currentData())
        s.setValue("context_size", self.context_size.text())
        s.setValue("context_kind", self.context_kind.currentText())
        s.setValue("context_file", self.context_file.text())
        s.sync()

    def load_settings(self) -> None:
        s = self.settings

        def val(key, default, typ):
            v = s.value(key, default)
            try:
                return typ(v) if typ is not bool else (v if isinstance(v, bool) else str(v).lower() == "true")
            except (TypeError, ValueError):
                return default

        for name in self._SPINS:
            w = getattr(self, name)
            w.setValue(val(name, w.value(), type(w.value())))
        self.greedy.setChecked(val("greedy", True, bool))
        self.breakdown.setChecked(val("breakdown", True, bool))
        self.cooldown.setChecked(val("cooldown", False, bool))
        self.draft_model.setText(val("draft_model", "", str))
        self.suite.setText(val("suite", "", str))
        self.mtp_hidden.setCurrentText(val("mtp_hidden", "post-norm", str))
        self.set_drafter(val("drafter", "auto", str))
        self.hosts.setText(val("hosts", "", str))
        backend = val("backend", "ring", str)
        self.backend.setCurrentText(backend if backend in BACKENDS else "ring")
        self.set_where(val("where", "local", str))
        self.context_size.setText(val("context_size", "4k", str))
        kind = val("context_kind", "mixed", str)
        self.context_kind.setCurrentText(kind if kind in CONTEXT_KINDS else "mixed")
        self.context_file.setText(val("context_file", "", str))
        i = self.context_mode.findData(val("context_mode", "none", str))
        self.context_mode.setCurrentIndex(max(i, 0))
        model = val("model", DEMO, str)
        if model != DEMO and not Path(model).exists():
            model = DEMO
        self.set_model(model, inspect=True)
