"""The main window: setup panel, Run/Stop, progress with ETA, verdict line, the pages, menus and status bar.

Running (``window_run``) and session files (``window_files``) are mixed in from their own modules."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6 import QtCore, QtGui, QtWidgets

from .gpu_trace_action import GpuCapture
from .fonts import missing_cjk_font_message
from .records import Snapshot
from .session_model import SessionModel
from .setup_panel import SetupPanel
from .theme import apply_palette, restyle_charts
from .status_bar import StatusBar
from .views.common import PlainLabel
from .views.verdict_bar import VerdictBar
from .run_process import WorkerProcess
from .window_files import SessionFiles, sessions_dir
from .window_run import RUN_TIP, RunControl
from .pages import PAGE_TITLES, PAGES, Pages  # noqa: F401 (PAGE_TITLES, PAGES: read from here too)

if TYPE_CHECKING:
    from .views.breakdown import BreakdownView
    from .views.cases import CasesView
    from .views.compare import CompareView
    from .views.context import ContextView
    from .views.division import DivisionView
    from .views.history import HistoryView
    from .views.live import LiveView
    from .views.tune import TuneView
    from .views.verify_cost import VerifyCostView

class _FirstPaint(QtCore.QObject):
    """Calls ``then`` once, when ``widget`` receives its first paint event."""

    def __init__(self, widget: QtWidgets.QWidget, then) -> None:
        super().__init__(widget)
        self._then = then
        widget.installEventFilter(self)

    def eventFilter(self, obj, ev) -> bool:  # noqa: N802 (Qt naming)
        if ev.type() == QtCore.QEvent.Type.Paint:
            obj.removeEventFilter(self)
            self._then()
        return False


class MainWindow(SessionFiles, RunControl, QtWidgets.QMainWindow):
    run_finished = QtCore.Signal(str)  # final session status
    setup: SetupPanel  # made in _build, after the pages that read its config
    views: Pages

    def __init__(self, settings: QtCore.QSettings | None = None, autosave_dir: str | None = None, parent=None):
        super().__init__(parent)
        self.setWindowTitle("specscope — speculative decoding profiler")
        self.settings = settings or QtCore.QSettings("specscope", "specscope")
        self.autosave_dir = Path(autosave_dir) if autosave_dir else None
        app = QtWidgets.QApplication.instance()
        assert isinstance(app, QtWidgets.QApplication), "the window needs a QApplication (make_app)"
        self.theme = apply_palette(app)
        self.model = SessionModel(self)
        self.worker = WorkerProcess(self)
        self.worker.run_event.connect(self._on_event)
        self.worker.finished.connect(self._on_worker_finished)
        self.worker.fault.connect(self.model.mark_incomplete)  # a distributed run's failed rank, named, before finished
        self.session_path: str | None = None
        self._run_started: float | None = None
        self._status_msg = ""
        self._build()
        self.model.snapshot.connect(self._on_snapshot)
        try:
            app.styleHints().colorSchemeChanged.connect(self._scheme_changed)
        except AttributeError:
            pass
        geo = self.settings.value("geometry")
        if isinstance(geo, (QtCore.QByteArray, bytes)):
            self.restoreGeometry(geo)
        else:
            self.resize(1440, 900)
        # the empty session is published by the model's next frame, not now: a window opened on a session (gui
        # --session, History) publishes that one at once and never draws the empty one first (10-15 ms of its start)
        self.model.mark_dirty()
        self._update_buttons()

    # -- building -----------------------------------------------------------------
    def _build(self) -> None:
        self._build_pages()
        self._build_dock()
        self._build_menus()
        self._build_status_bar()
        # Is there a font for the Chinese prompts? Asked once the window has first been painted: the question reads
        # the whole font database (some 25 ms here), which nothing on the first page needs.
        self.font_hint: str | None = None
        self._when_painted = _FirstPaint(self, lambda: QtCore.QTimer.singleShot(0, self, self._check_fonts))

        self.eta_timer = QtCore.QTimer(self)
        self.eta_timer.setInterval(1000)
        self.eta_timer.timeout.connect(self._update_progress)

    def _build_pages(self) -> None:
        """The verdict bar above the tabs of the pages."""
        central = QtWidgets.QWidget()
        outer = QtWidgets.QVBoxLayout(central)
        outer.setContentsMargins(8, 8, 8, 4)
        self.verdict = VerdictBar()
        outer.addWidget(self.verdict)
        self.tabs = QtWidgets.QTabWidget()
        self.tabs.setDocumentMode(True)
        # The pages are built when first shown or asked for (``views[key]``, ``self.breakdown``): a tab holds an
        # empty slot until then, and a page built late is given the current session at once (``_make_page``).
        self.views = Pages(self._make_page)
        self._slots: dict[str, QtWidgets.QWidget] = {}
        self._stale_pages: set[QtWidgets.QWidget] = set()  # pages a snapshot skipped while hidden in a run
        for key in PAGES:
            self._slots[key] = QtWidgets.QWidget()
            self.tabs.addTab(self._slots[key], PAGE_TITLES[key])
        self.views["live"]  # the page on screen when the window opens
        outer.addWidget(self.tabs, 1)
        self.tabs.currentChanged.connect(self._page_shown)
        self.setCentralWidget(central)

    def _build_dock(self) -> None:
        """The setup dock: the setup panel (scrolling) above Run/Stop, the progress bar and the run's status."""
        self.setup = SetupPanel(self.settings)
        dock_w = QtWidgets.QWidget()
        dl = QtWidgets.QVBoxLayout(dock_w)
        dl.setContentsMargins(0, 0, 0, 0)
        scroll = QtWidgets.QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.setup)
        scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        dl.addWidget(scroll, 1)
        dl.addWidget(self._run_box())
        self.dock = QtWidgets.QDockWidget("Setup")
        self.dock.setObjectName("setupDock")
        self.dock.setFeatures(QtWidgets.QDockWidget.DockWidgetFeature.DockWidgetMovable)
        self.dock.setWidget(dock_w)
        # wide enough for the panel beside its vertical scroll bar: no horizontal scroll bar at any window size
        bar = self.style().pixelMetric(QtWidgets.QStyle.PixelMetric.PM_ScrollBarExtent)
        self.dock.setMinimumWidth(max(330, self.setup.minimumSizeHint().width() + bar + 2 * scroll.frameWidth() + 2))
        self.addDockWidget(QtCore.Qt.DockWidgetArea.LeftDockWidgetArea, self.dock)

    def _run_box(self) -> QtWidgets.QWidget:
        """Run and Stop side by side, the progress bar and the status line under them."""
        runbox = QtWidgets.QWidget()
        rl = QtWidgets.QVBoxLayout(runbox)
        rl.setContentsMargins(8, 4, 8, 8)
        btns = QtWidgets.QHBoxLayout()
        self.run_btn = QtWidgets.QPushButton("Run")
        self.run_btn.setToolTip(RUN_TIP)
        self.run_btn.setDefault(True)
        self.stop_btn = QtWidgets.QPushButton("Stop")
        self.stop_btn.setToolTip("Stop and keep what was measured (Esc)")
        self.run_btn.clicked.connect(self.start_run)
        self.stop_btn.clicked.connect(self.stop_run)
        btns.addWidget(self.run_btn, 1)
        btns.addWidget(self.stop_btn, 1)
        rl.addLayout(btns)
        self.progress = QtWidgets.QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setValue(0)
        self.progress.setFormat("idle")
        self.progress.setTextVisible(True)
        rl.addWidget(self.progress)
        self.run_status = PlainLabel()
        self.run_status.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        self.run_status.setWordWrap(True)
        self.run_status.setObjectName("muted")
        rl.addWidget(self.run_status)
        return runbox

    def _action(self, text: str, slot, shortcut=None) -> QtGui.QAction:
        a = QtGui.QAction(text, self)
        if shortcut:
            a.setShortcut(QtGui.QKeySequence(shortcut))
        a.triggered.connect(slot)
        self.addAction(a)
        return a

    def _build_menus(self) -> None:
        """File, Run and View, their actions kept as ``act_*`` (their shortcuts work in every page)."""
        act = self._action
        self.act_run = act("&Run", self.start_run, "Ctrl+R")
        self.act_stop = act("&Stop", self.stop_run, "Esc")
        self.act_open = act("&Open session…", self.open_session_dialog, QtGui.QKeySequence.StandardKey.Open)
        self.act_save = act("&Save session as…", self.save_session_dialog, QtGui.QKeySequence.StandardKey.Save)
        self.act_export = act("&Export report…", self.export_dialog, "Ctrl+E")
        self.act_compare = act("&Compare sessions…", self.compare_sessions_dialog)
        self.run_finished.connect(self._history_stale)
        self.act_quit = act("&Quit", self.close, QtGui.QKeySequence.StandardKey.Quit)
        m = self.menuBar().addMenu("&File")
        for a in (self.act_open, self.act_save, self.act_export, self.act_compare):
            m.addAction(a)
        m.addSeparator()
        m.addAction(self.act_quit)
        r = self.menuBar().addMenu("&Run")
        r.addAction(self.act_run)
        r.addAction(self.act_stop)
        self.gpu_capture = GpuCapture(self)
        self.act_capture = act("Capture GPU &trace…", self.gpu_capture.start)
        r.addSeparator()
        r.addAction(self.act_capture)
        v = self.menuBar().addMenu("&View")
        for i, key in enumerate(PAGES):
            v.addAction(act(PAGE_TITLES[key], lambda checked=False, k=key: self.show_page(k), f"Ctrl+{i + 1}" if i < 9 else None))

    def _build_status_bar(self) -> None:
        self.status_bar = sb = StatusBar()
        self.setStatusBar(sb)
        self.sb_status, self.sb_device, self.sb_mlx, self.sb_mem = sb.session, sb.device, sb.mlx, sb.memory

    def _check_fonts(self) -> None:
        self.font_hint = missing_cjk_font_message()
        if self.font_hint:  # said once, in the status bar's message label
            self.statusBar().showMessage(self.font_hint)

    # -- pages ----------------------------------------------------------------------
    def _new_page(self, key: str) -> QtWidgets.QWidget:
        """The page ``key``, made and wired to the window (its module imported now: the app opens without them)."""
        session_data = lambda: self.model.session.data  # noqa: E731 (the pages read the current session's results)
        config = lambda: self.setup.config()  # noqa: E731
        page: QtWidgets.QWidget
        if key == "live":
            from .views.live import LiveView

            page = LiveView(self.theme)
        elif key == "breakdown":
            from .views.breakdown import BreakdownView

            page = BreakdownView(self.theme)
        elif key == "division":
            from .views.division import DivisionView

            page = DivisionView(self.theme, self.model)
        elif key in ("verify_cost", "tune", "context"):
            from .views.context import ContextView
            from .views.tune import TuneView
            from .views.verify_cost import VerifyCostView

            cls = {"verify_cost": VerifyCostView, "tune": TuneView, "context": ContextView}[key]
            measured = cls(self.theme, config=config, session=session_data)
            # run in the worker as Run is (window_run): its events folded into a session of its own
            measured.start_requested.connect(lambda key=key: self.start_page_measurement(key))
            measured.stop_requested.connect(self.stop_run)
            if isinstance(measured, (VerifyCostView, TuneView)):  # their n / K_max cover the setup's k (DFlash: 15)
                self.setup.k.valueChanged.connect(measured.follow_k)
                measured.follow_k(self.setup.k.value())
            page = measured
        elif key == "cases":
            from .views.cases import CasesView

            cases = CasesView(self.theme)
            self.model.cases_changed.connect(cases.update_cases)
            page = cases
        elif key == "history":
            from .views.history import HistoryView

            history = HistoryView(self.theme, lambda: self.autosave_dir or sessions_dir())
            history.open_requested.connect(self._open_from_history)
            history.compare_requested.connect(self.compare_paths)
            page = history
        elif key == "compare":
            from .views.compare import CompareView

            compare = CompareView(self.theme)
            compare.pick_btn.clicked.connect(self.compare_sessions_dialog)
            page = compare
        elif key == "content":  # drafters side by side per content class (views.content)
            from .views.content import ContentView

            content = ContentView(self.theme)
            content.set_current(self.model.session)
            self.model.status_changed.connect(lambda _status, page=content: page.set_current(self.model.session))
            self.model.session_replaced.connect(lambda page=content: page.set_current(self.model.session))
            page = content
        elif key == "checks":  # check's and capture's results (views.checks)
            from .views.checks import ChecksView

            page = ChecksView(self.theme, session_data)
        else:
            raise KeyError(key)
        return page

    def _make_page(self, key: str) -> QtWidgets.QWidget:
        """Build page ``key`` into its tab, in its slot's place (shown if the slot was current), and give it what
        the pages built at the start had by then: polished and asked its size hint while empty (as showing the
        window did to every page; a combo box or a scroll area keeps the size hint it first gave), the last
        snapshot, and the case rows for Cases."""
        page = self._new_page(key)
        self.views.add(key, page)
        slot = self._slots.pop(key)
        self.tabs.blockSignals(True)  # the same tab stays current: no other page is shown in between
        try:
            self.tabs.insertTab(self.tabs.indexOf(slot), page, PAGE_TITLES[key])  # hidden: the slot stays current
            page.ensurePolished()  # as showing the window did to every page, then asked each its size hint
            page.sizeHint()
            if self.tabs.currentWidget() is slot:
                self.tabs.setCurrentWidget(page)
            self.tabs.removeTab(self.tabs.indexOf(slot))
            if self.model.last_snapshot and hasattr(page, "update_snapshot"):
                page.update_snapshot(self.model.last_snapshot)
            if key == "cases" and self.model.last_cases is not None:
                page.update_cases(self.model.last_cases)  # type: ignore[attr-defined]
            if hasattr(page, "set_running"):  # its start button disabled if something runs already
                self._update_buttons()
        finally:
            self.tabs.blockSignals(False)
        slot.deleteLater()
        return page

    @property
    def live(self) -> LiveView:
        return self.views["live"]  # type: ignore[return-value]

    @property
    def breakdown(self) -> BreakdownView:
        return self.views["breakdown"]  # type: ignore[return-value]

    @property
    def division(self) -> DivisionView:
        return self.views["division"]  # type: ignore[return-value]

    @property
    def verify_cost(self) -> VerifyCostView:
        return self.views["verify_cost"]  # type: ignore[return-value]

    @property
    def tune(self) -> TuneView:
        return self.views["tune"]  # type: ignore[return-value]

    @property
    def context(self) -> ContextView:
        return self.views["context"]  # type: ignore[return-value]

    @property
    def cases(self) -> CasesView:
        return self.views["cases"]  # type: ignore[return-value]

    @property
    def history(self) -> HistoryView:
        return self.views["history"]  # type: ignore[return-value]

    @property
    def compare(self) -> CompareView:  # type: ignore[override]
        return self.views["compare"]  # type: ignore[return-value]

    def _history_stale(self, _status: str) -> None:
        """A run ended: History rereads its folder (not built yet: it reads it when first shown anyway)."""
        history = self.views.built().get("history")
        if history is not None:
            history.mark_stale()  # type: ignore[attr-defined]

    def show_page(self, key: str) -> None:
        key = (key or "live").lower()
        if key not in PAGE_TITLES:
            raise ValueError(f"unknown view {key!r}; choose one of {', '.join(PAGES)}")
        self.tabs.setCurrentWidget(self.views[key])

    def _page_shown(self, _index: int) -> None:
        v = self.tabs.currentWidget()
        slot = next((k for k, w in self._slots.items() if w is v), None)
        if slot is not None:  # first shown: built now, with the current session
            self.views[slot]
            return
        if v in self._stale_pages and self.model.last_snapshot and hasattr(v, "update_snapshot"):
            v.update_snapshot(self.model.last_snapshot)
            self._stale_pages.discard(v)

    def _scheme_changed(self, *_):
        app = QtWidgets.QApplication.instance()
        assert isinstance(app, QtWidgets.QApplication)  # the app's own window: a widget application
        old, self.theme = self.theme, apply_palette(app)
        for v in self.views.built().values():
            getattr(v, "apply_theme")(self.theme)  # every page has one (views.PAGES); the registry holds QWidgets
        restyle_charts(self, old, self.theme)  # curves and bars drawn before the switch
        self.model.flush()

    # -- running ----------------------------------------------------------------------
    # -- snapshot → status bar -------------------------------------------------------
    def _on_snapshot(self, snap: Snapshot) -> None:
        # Only the page on screen redraws now; the others catch up when shown (CPU spent
        # drawing hidden pages is CPU taken from the engine on a small machine).
        current = self.tabs.currentWidget()
        for v in self.views.built().values():
            if hasattr(v, "update_snapshot"):
                if v is current or not self.is_running():
                    v.update_snapshot(snap)
                    self._stale_pages.discard(v)
                else:
                    self._stale_pages.add(v)
        self.verdict.update_snapshot(snap)
        self.status_bar.update_snapshot(snap)

    # -- files ----------------------------------------------------------------------
    # -- screenshots & closing ---------------------------------------------------------
    def grab_png(self, path: str) -> bool:
        QtWidgets.QApplication.processEvents()
        self.model.flush()
        QtWidgets.QApplication.processEvents()
        return self.grab().save(path, "PNG")

    def resizeEvent(self, e: QtGui.QResizeEvent) -> None:  # noqa: N802 (Qt naming)
        self.verdict.fit_window_height(e.size().height())  # a long verdict leaves a small window's page its room
        super().resizeEvent(e)

    def closeEvent(self, e: QtGui.QCloseEvent) -> None:
        if self.is_running():
            self.worker.stop_and_wait()
            s = self.model.session
            if s.status == "running":
                self.model.mark_incomplete("window closed during the run")
            self.model.save_autosave()
        self.setup.inspector.shutdown()
        self.gpu_capture.shutdown()
        try:
            self.setup.save_settings()
            self.settings.setValue("geometry", self.saveGeometry())
            self.settings.sync()
        except RuntimeError:
            pass
        super().closeEvent(e)
