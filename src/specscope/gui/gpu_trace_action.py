"""Run → Capture GPU trace…: ``specscope capture`` from the app, in a QProcess (the UI never blocks).

First ``specscope capture --check`` says whether this machine has Metal; where it does not,
its message is shown as it is and nothing else happens. On Metal the app asks for a folder
(a new subfolder is made inside one that is not empty), runs the capture for the model and
``k`` picked in the setup panel, and says where the traces are. The app never imports MLX:
both steps are processes.
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from specscope.errors import SpecscopeError
from specscope.profiler.run.config import RunConfig
from specscope.profiler.run.runner import worker_env

from .text import error_text
from .text import clip, home_relative
from .run_process import qt_env

UNAVAILABLE_TITLE = "GPU trace capture unavailable"


def probe_command() -> list[str]:
    return [sys.executable, "-m", "specscope.profiler.cli", "capture", "--check"]


def capture_command(cfg: RunConfig, out_dir: str) -> list[str]:
    src = ["--demo"] if cfg.demo else ["--model", str(cfg.model)]
    cmd = [sys.executable, "-m", "specscope.profiler.cli", "capture", *src, "-k", str(cfg.num_draft_tokens),
           "-o", str(out_dir)]
    if cfg.suite:
        cmd += ["--suite", cfg.suite]
    if cfg.allow_oversize:
        cmd.append("--allow-oversize")
    return cmd


def output_dir_in(base: str) -> Path:
    """``base`` itself when it is empty, else a new ``specscope-capture-<time>`` folder inside it."""
    p = Path(base)
    if p.is_dir() and not any(p.iterdir()):
        return p
    stem = f"specscope-capture-{datetime.now():%Y%m%d-%H%M%S}"
    out, n = p / stem, 2
    while out.exists():
        out, n = p / f"{stem}-{n}", n + 1
    return out


class GpuCapture(QtCore.QObject):
    """One check-then-capture at a time, owned by the main window."""

    done = QtCore.Signal(int, str)  # exit code (0: traces written), what the user was told

    def __init__(self, window) -> None:
        super().__init__(window)
        self.window = window
        self.proc: QtCore.QProcess | None = None
        self.stage: str | None = None  # "check" or "capture"
        self.cfg: RunConfig | None = None
        self.out_dir: Path | None = None
        self.last_dialog: QtWidgets.QMessageBox | None = None

    def is_running(self) -> bool:
        return self.proc is not None

    # -- steps ------------------------------------------------------------------------------
    def start(self) -> bool:
        if self.is_running():
            self._tell("A GPU trace capture is already running.", "Capture GPU trace", QtWidgets.QMessageBox.Icon.Information)
            return False
        if self.window.is_running():
            self._tell("Stop the run first: a capture next to a run would disturb both.", "Capture GPU trace",
                       QtWidgets.QMessageBox.Icon.Information)
            return False
        try:
            self.cfg = self.window.setup.config()
            self.cfg.validate()
        except SpecscopeError as exc:
            self._tell(str(exc), "Cannot capture a GPU trace", QtWidgets.QMessageBox.Icon.Critical)
            return False
        self._status("checking whether this machine can capture GPU traces…")
        self._run(probe_command(), "check")
        return True

    def ask_folder(self) -> str:
        start = str(self.window.settings.value("captureDir", "") or Path.home())
        return QtWidgets.QFileDialog.getExistingDirectory(self.window, "Folder for the GPU traces", start)

    def _capture(self) -> None:
        base = self.ask_folder()
        if not base:
            self._status("GPU trace capture cancelled")
            return
        self.window.settings.setValue("captureDir", base)
        self.out_dir = output_dir_in(base)
        cfg = self.cfg
        assert cfg is not None  # start() set it before the check that led here
        k = cfg.num_draft_tokens
        self._status(f"capturing GPU traces (decode, verify k = {k}) into {home_relative(str(self.out_dir))}…")
        self._run(capture_command(cfg, str(self.out_dir)), "capture")

    def _run(self, cmd: list[str], stage: str) -> None:
        p = QtCore.QProcess(self)
        p.setProcessEnvironment(qt_env(worker_env()))
        p.finished.connect(lambda code, st, p=p: self._finished(p, code, st))
        p.errorOccurred.connect(lambda err, p=p: self._failed_to_start(p, err))
        self.proc, self.stage = p, stage
        p.start(cmd[0], cmd[1:])

    def _failed_to_start(self, p: QtCore.QProcess, err) -> None:
        if err == QtCore.QProcess.ProcessError.FailedToStart and p is self.proc:
            self.proc = None
            p.deleteLater()
            self._report(-1, f"could not start {sys.executable}: {p.errorString()}", "Capture GPU trace failed")

    def _finished(self, p: QtCore.QProcess, code: int, status) -> None:
        if p is not self.proc:
            return
        p.readAllStandardOutput()  # drained: the outcome is the exit code and stderr
        err = bytes(p.readAllStandardError().data()).decode("utf-8", "replace")
        self.proc = None
        p.deleteLater()
        if status == QtCore.QProcess.ExitStatus.CrashExit:
            code = code or -1
        if self.stage == "check":
            if code == 0:
                self._capture()
            else:
                self._report(code, error_text(err, code, "the Metal check"), UNAVAILABLE_TITLE,
                             QtWidgets.QMessageBox.Icon.Warning)
            return
        if code != 0:
            self._report(code, error_text(err, code, "the capture"), "Capture GPU trace failed")
            return
        assert self.cfg is not None  # start() set it before the check and the capture
        k = self.cfg.num_draft_tokens
        d = self.out_dir
        text = (f"GPU traces written to {home_relative(str(d))}:\n\n"
                f"decode.gputrace: one decode step (1 position)\n"
                f"verify-k{k}.gputrace: one verify forward ({k + 1} positions)\n"
                f"capture.json: what was captured\n\n"
                "Double-click a .gputrace to open it in Xcode.")
        self._report(0, text, "GPU traces captured", QtWidgets.QMessageBox.Icon.Information, folder=d)

    # -- telling ----------------------------------------------------------------------------
    def _status(self, text: str) -> None:
        if not self.window.is_running():
            self.window.run_status.setText(text)

    def _report(self, code: int, text: str, title: str, icon=QtWidgets.QMessageBox.Icon.Critical,
                folder: Path | None = None) -> None:
        self._status(text.splitlines()[0] if text else title)
        self._tell(text, title, icon, folder)
        self.done.emit(code, text)

    def _tell(self, text: str, title: str, icon, folder: Path | None = None) -> None:
        box = QtWidgets.QMessageBox(icon, title, clip(text), parent=self.window)
        box.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        if folder is not None:
            show = box.addButton("Open folder", QtWidgets.QMessageBox.ButtonRole.ActionRole)
            show.clicked.connect(lambda: QtGui.QDesktopServices.openUrl(QtCore.QUrl.fromLocalFile(str(folder))))
            box.addButton(QtWidgets.QMessageBox.StandardButton.Ok)
        box.open()
        self.last_dialog = box

    def shutdown(self) -> None:
        """The window closes: a capture still running is ended (its folder keeps what was written)."""
        p, self.proc = self.proc, None
        if p is not None:
            p.kill()
            p.waitForFinished(2000)
