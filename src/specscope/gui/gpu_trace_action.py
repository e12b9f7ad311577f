"""Run → Capture GPU trace…: ``specscope capture`` from the app, in the worker, started as the Run button starts it
(``run_process.WorkerProcess``; the UI never blocks).

First the worker is asked whether this machine can capture (``CaptureConfig.probe``: refused without Metal, nothing
loaded); where it cannot, its message is shown as it is and nothing else happens. On Metal the app asks for a folder
(a new subfolder is made inside one that is not empty), runs the capture for the model and ``k`` picked in the setup
panel, says where the traces are, and folds the capture's result into the window's session (the Checks page shows
it). The app never imports MLX: both steps are the worker's. Each step's events are folded into a session of its own
(``Session.apply``), which says how it ended.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from specscope.errors import SpecscopeError
from specscope.events import Event
from specscope.profiler.run.config import RunConfig
from specscope.profiler.run.events import finish_run
from specscope.profiler.run.tool_configs import CaptureConfig
from specscope.profiler.session.session import Session

from .text import clip, home_relative
from .run_process import WorkerProcess

UNAVAILABLE_TITLE = "GPU trace capture unavailable"


def capture_config(cfg: RunConfig, out_dir: Path) -> CaptureConfig:
    """The capture the setup panel asks for (its model resolved to a folder, the suite's first prompt) into ``out_dir``."""
    from specscope.profiler.run.suite import load_suite

    case = load_suite(cfg.suite)["cases"][0]
    model = name = None
    if not cfg.demo:
        from specscope.model_ref import resolve_model

        ref = resolve_model(str(cfg.model))
        model, name = str(ref.path), ref.label
    return CaptureConfig(out_dir=str(out_dir.resolve()), prompt=case["prompt"], prompt_id=case["id"], model=model,
                         model_name=name, demo=cfg.demo, k=cfg.num_draft_tokens, allow_oversize=cfg.allow_oversize)


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
        self.worker = WorkerProcess(self)
        self.worker.run_event.connect(self._on_event)
        self.worker.finished.connect(self._finished)
        self.session = Session()  # the step running (or last run): its events folded as a run's are
        self.stage: str | None = None  # "check" or "capture" while one runs
        self.cfg: RunConfig | None = None
        self.out_dir: Path | None = None
        self._made = False
        self.last_dialog: QtWidgets.QMessageBox | None = None

    def is_running(self) -> bool:
        return self.stage is not None

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
        self._run(CaptureConfig.probe(), "check")
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
        self.out_dir = out = output_dir_in(base)
        assert self.cfg is not None  # start() set it before the check that led here
        try:
            capture = capture_config(self.cfg, out)
            self._made = not out.exists()  # removed again if the capture writes nothing into it
            out.mkdir(parents=True, exist_ok=True)
        except (SpecscopeError, OSError) as exc:
            self._report(2, str(exc), "Capture GPU trace failed")
            return
        self._status(f"capturing GPU traces (decode, verify k = {capture.k}) into {home_relative(str(out))}…")
        self._run(capture, "capture")

    def _run(self, cfg: CaptureConfig, stage: str) -> None:
        self.session, self.stage = Session(), stage
        self.worker.start(cfg)

    def _on_event(self, ev: Event) -> None:
        self.session.apply(ev)
        if ev["event"] == "status" and self.stage == "capture":
            self._status(ev["message"])

    def _finished(self, code: int, stderr_tail: str, stopped: bool) -> None:
        stage, self.stage, s = self.stage, None, self.session
        finish_run(s, {0: None, -1: "killed or crashed", -2: stderr_tail}.get(code, f"exit code {code}"), stopped,
                   stderr_tail)  # as a run's end is settled (window_run)
        why = (s.data["errors"] or ["no result"])[-1]
        if stage == "check":
            if s.status == "complete":  # once the worker is done with this step's process (run_process)
                QtCore.QTimer.singleShot(0, self, self._capture)
            else:
                self._report(code or 2, why, UNAVAILABLE_TITLE, QtWidgets.QMessageBox.Icon.Warning)
            return
        if s.status != "complete" or "capture" not in s.data:
            if self._made and self.out_dir is not None and self.out_dir.is_dir() and not any(self.out_dir.iterdir()):
                self.out_dir.rmdir()  # made for this capture, nothing written
            self._report(code or 1, why, "Capture GPU trace failed")
            return
        self._keep(s.data["capture"])
        k, d = s.data["capture"]["description"]["k"], self.out_dir
        text = (f"GPU traces written to {home_relative(str(d))}:\n\n"
                f"decode.gputrace: one decode step (1 position)\n"
                f"verify-k{k}.gputrace: one verify forward ({k + 1} positions)\n"
                f"capture.json: what was captured\n\n"
                "Double-click a .gputrace to open it in Xcode.")
        self._report(0, text, "GPU traces captured", QtWidgets.QMessageBox.Icon.Information, folder=d)

    def _keep(self, result) -> None:
        """The capture joins the window's session (folded as the worker's event is), so the Checks page shows it."""
        if not self.window.is_running():
            self.window.model.apply({"event": "capture", "capture": result["description"], "out_dir": result["out_dir"]})
            self.window.model.flush()

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
        """The window closes: a capture still running is stopped (its folder keeps what was written)."""
        if self.is_running():
            self.worker.finished.disconnect(self._finished)
            self.worker.stop_and_wait()
            self.stage = None
