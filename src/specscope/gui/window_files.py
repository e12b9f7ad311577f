"""The main window's session files: where sessions are autosaved, and opening, saving, exporting and comparing them
(File menu, History page), with the error box that says when one of those fails."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from PySide6 import QtCore, QtWidgets

from specscope.profiler.session.schema import SessionError
from specscope.profiler.session.session import Session
from specscope.profiler.analysis.session_file import save_session

from .text import clip, home_relative

if TYPE_CHECKING:
    from .session_model import SessionModel
    from .setup_panel import SetupPanel
    from .views.common import PlainLabel
    from .views.compare import CompareView

    WindowBase = QtWidgets.QMainWindow
else:
    WindowBase = object


def sessions_dir() -> Path:
    """Where the app autosaves sessions: the user data folder's ``specscope/sessions``
    (``~/.local/share/specscope/sessions`` on Linux, ``~/Library/Application Support/specscope/sessions`` on macOS).

    Qt's AppDataLocation adds the organisation and the application name, both "specscope", so earlier
    versions wrote to ``…/specscope/specscope/sessions``; that folder is moved here once, when this one does
    not exist yet (and kept where it is if the move fails)."""
    from platformdirs import user_data_dir

    d = Path(user_data_dir("specscope", appauthor=False)) / "sessions"
    legacy = Path(user_data_dir("specscope", appauthor=False)) / "specscope" / "sessions"
    if not d.exists() and legacy.is_dir():
        try:
            d.parent.mkdir(parents=True, exist_ok=True)
            legacy.rename(d)
        except OSError:
            return legacy
    d.mkdir(parents=True, exist_ok=True)
    return d


# a measurement's session (config "measure"): its page
MEASUREMENT_PAGES = {"roofline": "verify_cost", "tune": "tune", "bench": "checks"}


def page_of(s: Session) -> str:
    """The page that shows what session ``s`` measured: a sweep's figures are per context (its page, not an empty Live
    page), a verify cost or tune measurement has its own page, a check, a capture or a benchmark the Checks page; a
    run's is Live."""
    if s.data.get("sweep") and not s.cases:
        return "context"
    if (s.data.get("check") or s.data.get("capture") or s.data.get("benchmarks")) and not s.cases:  # their own session
        return "checks"
    return MEASUREMENT_PAGES.get(str(s.data.get("measure")), "live")


class SessionFiles(WindowBase):
    """The File menu's actions and the History page's requests, mixed into ``MainWindow``."""

    model: SessionModel
    setup: SetupPanel
    compare: CompareView
    run_status: PlainLabel
    progress: QtWidgets.QProgressBar
    session_path: str | None
    autosave_dir: Path | None
    _status_msg: str
    _last_dialog: Any
    is_running: Callable[[], bool]
    show_page: Callable[[str], None]

    def open_session(self, path: str) -> None:
        s = Session.load(path)
        self.session_path = path
        self.model.reset(s, autosave_path=None)
        self.setup.show_session(s.data)  # the panel describes the model this session measured
        self._status_msg = f"opened {home_relative(path)}"
        self.run_status.setText(self._status_msg)
        self.progress.setValue(1000 if s.status == "complete" else 0)
        self.progress.setFormat(f"opened ({s.status})")
        self.setWindowTitle(f"specscope — {Path(path).name}")
        page = page_of(s)
        if page != "live":
            self.show_page(page)

    def open_session_dialog(self) -> None:
        f, _ = QtWidgets.QFileDialog.getOpenFileName(self, "Open session", str(self.autosave_dir or sessions_dir()),
                                                     "specscope session (*.json)")
        if f:
            try:
                self.open_session(f)
            except SessionError as exc:
                self.show_error("Cannot open the session", str(exc))

    def _open_from_history(self, path: str) -> None:
        if self.is_running():
            self._status_msg = "a run is in progress: stop it before opening another session"
            self.run_status.setText(self._status_msg)
            return
        try:
            self.open_session(path)
        except SessionError as exc:
            self.show_error("Cannot open the session", str(exc))
            return
        self.show_page(page_of(self.model.session))

    def compare_paths(self, a: str, b: str) -> bool:
        """Put two session files side by side on the Compare page (A = ``a``, B = ``b``)."""
        try:
            sa, sb = Session.load(a), Session.load(b)
        except SessionError as exc:
            self.show_error("Cannot compare the sessions", str(exc))
            return False
        self.compare.set_sessions(sa, sb, (a, b))
        self.show_page("compare")
        return True

    def compare_sessions_dialog(self) -> None:
        files, _ = QtWidgets.QFileDialog.getOpenFileNames(
            self, "Compare two sessions (pick two; or one, to compare with the open session)",
            str(self.autosave_dir or sessions_dir()), "specscope session (*.json)")
        if len(files) == 1 and self.session_path and not self.is_running():
            files = [self.session_path, files[0]]
        if len(files) == 2:
            self.compare_paths(*files)
        elif files:
            self.show_error("Pick two sessions", f"Compare needs exactly two session files; {len(files)} were picked.")

    def save_session_dialog(self) -> None:
        f, _ = QtWidgets.QFileDialog.getSaveFileName(self, "Save session", "session.json", "specscope session (*.json)")
        if f:
            try:
                save_session(self.model.session, f)
                self._status_msg = f"saved {home_relative(f)}"
                self.run_status.setText(self._status_msg)
            except OSError as exc:  # unwritable folder, disk full: the old file (if any) is untouched
                self.show_error("Cannot save the session", f"Could not write {f}:\n{exc.strerror or exc}")

    def export_report(self, path: str) -> None:
        from specscope.profiler.renderers import render_to_file

        render_to_file(self.model.session, path)

    def export_dialog(self) -> None:
        f, _ = QtWidgets.QFileDialog.getSaveFileName(
            self, "Export report", "specscope-report.html",
            "HTML report (*.html);;PDF report (*.pdf);;CSV (*.csv);;JSON (*.json);;Perfetto trace (*.trace.json)")
        if not f:
            return
        try:
            self.export_report(f)
            self._status_msg = f"exported {home_relative(f)}"
            self.run_status.setText(self._status_msg)
        except Exception as exc:  # a renderer that is missing or fails: say so, keep the app alive
            self.show_error("Export failed", f"Could not write {f}:\n{type(exc).__name__}: {exc}")

    def show_error(self, title: str, text: str) -> None:
        """A critical message box over the window (not modal: the app goes on), its text plain and clipped."""
        box = QtWidgets.QMessageBox(QtWidgets.QMessageBox.Icon.Critical, title, clip(text), parent=self)
        box.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        box.open()
        self._last_dialog = box
