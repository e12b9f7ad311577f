"""The setup panel: model, where it runs, drafter, k, sampling, suite, budget. Settings persist via QSettings.

The model choice (``setup_models``) and the context rows (``setup_context``) are mixed in from their own modules."""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore, QtWidgets

from specscope.drafter_kinds import DRAFTER_KINDS
from specscope.profiler.analysis.sequential import UNTIL_DECIDED_CASES
from specscope.profiler.run.config import MAX_K, RunConfig, resolve_drafter_alias
from specscope.profiler.run.context import KINDS as CONTEXT_KINDS
from specscope.profiler.run.launch import BACKENDS, MAX_LOCAL_RANKS

from .inspector import DEMO, DEMOS, Inspector, demo_variant
from .preflight_line import PreflightLine
from .records import DistributedFields
from .setup_context import ContextChoice
from .setup_models import ModelChoice
from .views.common import PlainLabel

# the run's drafters, and after DFlash its alias for a DFlash2 folder (run.config.DRAFTER_ALIASES; a run records dflash)
DRAFTERS = [("auto", "Auto (MTP if present)")] + [(d.name, d.title) for d in DRAFTER_KINDS] + [
    ("dflash2", "DFlash2 drafter (candidate selector)")]
FOLDER_DRAFTERS = {"draft": ("Draft model", "demo draft model"), "dflash": ("DFlash folder", "demo's trained DFlash drafter"),
                   "dflash2": ("DFlash2 folder", "demo's trained DFlash2 drafter")}
WHERE = [("local", "This machine"), ("ranks", "N ranks on this machine"), ("hosts", "Several machines (hosts)")]


class SetupPanel(ModelChoice, ContextChoice, QtWidgets.QWidget):
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
        w: QtWidgets.QSpinBox | QtWidgets.QDoubleSpinBox
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
        self._build_model()
        _box, form = self._group("Pre-flight")  # the machine checked for the picked model, before Run (gui.preflight_line)
        self.preflight = PreflightLine(self.preflight_args)
        form.addRow(self.preflight)
        self._build_where()
        self._build_drafter()
        self._build_sampling()
        self._build_protocol()
        self.model_changed.connect(self.preflight.schedule)
        self.drafter.currentIndexChanged.connect(self.preflight.schedule)
        self.preflight.schedule()
        self._layout.addStretch(1)

    def _build_model(self) -> None:
        """The model picker, Browse… and the compatibility line under them."""
        _box, form = self._group("Model")
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

    def _build_where(self) -> None:
        """This machine, or N local ranks / hosts (a distributed run) with their backend."""
        _box, form = self._group("Where")
        self.where = QtWidgets.QComboBox()
        for key, label in WHERE:
            self.where.addItem(label, key)
        self.where.setToolTip("This machine: one process. N ranks / hosts: the target is sharded (tensor parallel) "
                              "over MLX distributed ranks started by mlx.launch; drafting is replicated on every rank. "
                              "docs: Several machines")
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

    def _build_drafter(self) -> None:
        """The drafter, k, the draft model and the oracle's and MTP's settings."""
        _box, form = self._group("Drafter")
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

    def _build_sampling(self) -> None:
        _box, form = self._group("Sampling")
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

    def _build_protocol(self) -> None:
        """The suite, cases, tokens, context, warm-up, repeats and what else each run measures."""
        _box, form = self._group("Protocol")
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
        self.max_tokens = self._spin(2, 8192, RunConfig.max_tokens)
        form.addRow("Max new tokens", self.max_tokens)
        self._context_rows(form)
        self.warmup = self._spin(0, 20, RunConfig.warmup)
        form.addRow("Warm-up runs", self.warmup)
        self.repeats = self._spin(1, 50, RunConfig.repeats)
        self.repeats.setToolTip("measured repeats per case, plain and speculative in ABBA order; "
                                "rates are pooled over repeats (tokens ÷ time), shown with their spread")
        form.addRow("Repeats", self.repeats)
        self.discard_first = self._spin(0, 99, 0)
        self.discard_first.setToolTip("the first N cases are measured and kept in the session, marked, "
                                      "but left out of the summary (the machine settling in)")
        form.addRow("Discard first", self.discard_first)
        self._cooldown_rows(form)
        self.breakdown = QtWidgets.QCheckBox("Per-block breakdown")
        self.breakdown.setChecked(True)
        form.addRow(self.breakdown)
        self.until_decided = QtWidgets.QCheckBox("Run until decided")
        self.until_decided.setToolTip("measure the cases one at a time and stop as soon as the prediction's verdict is "
                                      "decided (agrees / off), at a level corrected for looking after every case; "
                                      f"at most {UNTIL_DECIDED_CASES} cases (the suite again after its last), or "
                                      "the cases above")
        self.until_decided.toggled.connect(lambda _: self.changed.emit())
        form.addRow(self.until_decided)

    def _cooldown_rows(self, form: QtWidgets.QFormLayout) -> None:
        """Cool down before each case, and its timeout (enabled with it)."""
        self.cooldown = QtWidgets.QCheckBox("Cool down before each case")
        self.cooldown.setToolTip("before each case, wait until the clock probe is back within 2% of its best "
                                 "(at most the timeout)")
        self.cooldown_timeout = self._spin(5, 3600, 120, suffix=" s")

        def cooldown_toggled(on: bool) -> None:
            self.cooldown_timeout.setEnabled(on)
            self.changed.emit()

        self.cooldown.toggled.connect(cooldown_toggled)
        form.addRow(self.cooldown)
        self.cooldown_timeout.setEnabled(False)
        form.addRow("Cooldown timeout", self.cooldown_timeout)

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
        f.setRowVisible(self.draft_row, key in FOLDER_DRAFTERS)  # dflash, dflash2: the drafter folder
        label = f.labelForField(self.draft_row)  # the field names what it holds: a draft model or a DFlash folder
        name, placeholder = FOLDER_DRAFTERS.get(key, FOLDER_DRAFTERS["draft"])
        if isinstance(label, QtWidgets.QLabel):
            label.setText(name)
        self.draft_model.setPlaceholderText(placeholder)
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

    def distributed(self) -> DistributedFields:
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

    def preflight_args(self) -> tuple:
        """What the pre-flight line checks: the picked model, drafter and draft model."""
        return self.model_path(), self.drafter.currentData(), self.draft_model.text().strip() or None

    def config(self) -> RunConfig:
        path = self.model_path()
        demo = path in DEMOS
        key, draft_model = resolve_drafter_alias(  # dflash2: dflash with its folder (refused with the reason)
            self.drafter.currentData(), (self.draft_model.text().strip() or None)
            if self.drafter.currentData() in FOLDER_DRAFTERS else None, demo)
        return RunConfig(
            model=None if demo else path,
            demo=demo,
            demo_variant=demo_variant(path),
            drafter=key,
            draft_model=draft_model,
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
            until="decided" if self.until_decided.isChecked() else None,
            cooldown_timeout_s=float(self.cooldown_timeout.value()),
            breakdown=self.breakdown.isChecked(),
            oracle_p=self.oracle_p.value(),
            oracle_draft_ms=self.oracle_ms.value(),
            mtp_hidden=self.mtp_hidden.currentText(),
            ignore_preflight=self.preflight.insist.isChecked(),
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
        s.setValue("until_decided", self.until_decided.isChecked())
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
        self.until_decided.setChecked(val("until_decided", False, bool))
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
        if model not in DEMOS and not Path(model).exists():
            model = DEMO
        self.set_model(model, inspect=True)
