"""The setup panel's pre-flight line: ``specscope preflight --json`` for the picked model, run in a process of its own
(the app never imports MLX), one line before Run with every check in its tooltip, and the box to run past a failed
pre-flight (``RunConfig.ignore_preflight``)."""

from __future__ import annotations

import json
import sys

from PySide6 import QtCore, QtWidgets

from specscope.drafter_kinds import DRAFTER_NAMES
from specscope.profiler.run.runner import worker_env

from .inspector import DEMOS, demo_variant
from .run_process import discard, qt_env
from .views.common import ElidingLabel

# a check waits this long after the last change of the pick (and the first one until the window is up): each check
# starts a Python process that imports MLX
SETTLE_MS = 1500


def preflight_command(path: str | None, drafter: str = "auto", draft_model: str | None = None) -> list[str]:
    args = ["--demo"] if path in DEMOS else (["--model", path] if path else [])
    if drafter in DRAFTER_NAMES:
        args += ["--drafter", drafter]
    if drafter in ("draft", "dflash") and draft_model:
        args += ["--draft-model", draft_model]
    return [sys.executable, "-m", "specscope.profiler.cli", "preflight", *args, "--json"]


def summary_line(report: dict) -> str:
    """One line for the panel: the status, and the checks that fail or warn (what stops a run first)."""
    checks = report.get("checks") or []
    named = {s: ", ".join(c["name"] for c in checks if c.get("status") == s) for s in ("fail", "warn")}
    unchecked = sum(c.get("status") == "not checked" for c in checks)
    parts = []
    if named["fail"]:
        parts.append(f"✗ a run stops here unless you tick the box below: {named['fail']} fail")
    if named["warn"]:
        parts.append(("⚠ " if not named["fail"] else "") + f"{named['warn']} warn")
    text = "; ".join(parts) or f"✓ all {len(checks) - unchecked} checks pass"
    return "Pre-flight: " + text + (f" ({unchecked} not checked)" if unchecked else "")


def details(report: dict) -> str:
    """Every check with its evidence and fix (the tooltip)."""
    lines = []
    for c in report.get("checks") or []:
        lines.append(f"{c['status'].upper()}  {c['name']}: {c['evidence']}")
        if c.get("fix") and c["status"] in ("warn", "fail"):
            lines.append(f"      fix: {c['fix']}")
    return "\n".join(lines)


class PreflightLine(QtWidgets.QWidget):
    """One check at a time; a result for a pick that changed meanwhile is dropped."""

    checked = QtCore.Signal(dict)

    def __init__(self, args=lambda: (None, "auto", None), parent=None) -> None:
        """``args()``: the (model path, drafter, draft model) picked now."""
        super().__init__(parent)
        self.proc: QtCore.QProcess | None = None
        self.report: dict | None = None
        self.args = args
        self._args: tuple = ()
        self._timer = QtCore.QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(SETTLE_MS)
        self._timer.timeout.connect(lambda: self.check(*self.args()))
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        row = QtWidgets.QHBoxLayout()
        self.label = ElidingLabel("Pre-flight: not run yet", max_lines=2)  # two lines whatever the text; all in the tooltip
        self.label.setObjectName("preflight")
        self.again = QtWidgets.QPushButton("Check again")
        self.again.setToolTip("run the pre-flight again (`specscope preflight`)")
        self.again.clicked.connect(lambda: self.check(*self.args()))
        row.addWidget(self.label, 1)
        row.addWidget(self.again, 0, QtCore.Qt.AlignmentFlag.AlignTop)
        lay.addLayout(row)
        self.insist = QtWidgets.QCheckBox("Run even if the pre-flight fails")
        self.insist.setToolTip("a failed pre-flight stops a run before it measures anything (its numbers would measure "
                               "the machine); ticked, the run goes on and the session and report say so "
                               "(--ignore-preflight)")
        lay.addWidget(self.insist)
        app = QtWidgets.QApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.shutdown)

    def schedule(self, *_) -> None:
        """Check once the pick has settled (every change restarts the wait)."""
        self._timer.start()

    def check(self, path: str | None = None, drafter: str = "auto", draft_model: str | None = None) -> None:
        self._timer.stop()
        self._args = (path, drafter, draft_model)
        self.shutdown()
        self.label.setText("Pre-flight: checking the machine…")
        p = QtCore.QProcess(self)
        env = worker_env()
        if demo_variant(path) == "random":
            env["SPECSCOPE_DEMO"] = "random"
        p.setProcessEnvironment(qt_env(env))
        cmd = preflight_command(path, drafter, draft_model)
        p.finished.connect(lambda code, st, p=p, args=self._args: self._done(p, args, code))
        self.proc = p
        p.start(cmd[0], cmd[1:])

    def _done(self, p: QtCore.QProcess, args: tuple, code: int) -> None:
        try:
            out = bytes(p.readAllStandardOutput().data()).decode("utf-8", "replace")
            err = bytes(p.readAllStandardError().data()).decode("utf-8", "replace")
        except RuntimeError:  # the process went with its widget (the window closed): nobody to tell
            return
        if p is self.proc:
            self.proc = None
        p.deleteLater()
        if args != self._args:
            return  # stale: the pick changed meanwhile
        if code in (0, 1):  # 1: a check failed; the report is on stdout either way
            try:
                self.show_report(json.loads(out))
                return
            except json.JSONDecodeError:
                pass
        msg = next((ln for ln in reversed(err.strip().splitlines()) if ln.strip()), "the pre-flight could not run")
        self.report = None
        self.label.setText("Pre-flight: not checked — " + msg.replace("specscope: error: ", ""))
        self.label.setToolTip("")

    def show_report(self, report: dict) -> None:
        self.report = report
        self.label.setText(summary_line(report))
        self.label.setToolTip(details(report))
        self.label.setProperty("state", {"pass": "ok", "warn": "warn", "fail": "error"}.get(str(report.get("status")), ""))
        self.label.style().unpolish(self.label)
        self.label.style().polish(self.label)
        self.checked.emit(report)

    def hideEvent(self, event) -> None:  # noqa: N802 (Qt naming): a closing window ends a check still running
        if self.proc is not None:
            self.shutdown()
            self.label.setText("Pre-flight: not checked yet")
        self._timer.stop()
        super().hideEvent(event)

    def showEvent(self, event) -> None:  # noqa: N802
        if self.report is None and self.proc is None:
            self.schedule()
        super().showEvent(event)

    def shutdown(self) -> None:
        if self.proc is not None:
            old, self.proc = self.proc, None
            discard(old)
