"""The setup panel's pre-flight line: the pre-flight (``preflight``, ``specscope preflight``'s report) for the picked
model, measured in the worker as the Run button's run is (``one_shot.OneShot``; the app never imports MLX), one line
before Run with every check in its tooltip, and the box to run past a failed pre-flight (``RunConfig.ignore_preflight``)."""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from specscope.drafter_kinds import DRAFTER_NAMES
from specscope.errors import SpecscopeError
from specscope.profiler.run.config import resolve_drafter_alias
from specscope.profiler.run.query_configs import PreflightConfig

from .inspector import DEMOS, demo_variant
from .one_shot import OneShot
from .views.common import ElidingLabel

# a check waits this long after the last change of the pick (and the first one until the window is up): each check
# starts a Python process that imports MLX
SETTLE_MS = 1500


def preflight_config(path: str | None, drafter: str = "auto", draft_model: str | None = None) -> PreflightConfig:
    """What the worker checks for the pick: the model box entry (a folder, a cached repo id, a built-in demo, or none:
    the machine alone), the drafter, and its draft model where the drafter has one."""
    demo = path in DEMOS
    try:  # dflash2: the DFlash drafter with its folder; a pick the run would refuse is checked as auto (the run says why)
        drafter, draft_model = resolve_drafter_alias(drafter, draft_model, demo)
    except SpecscopeError:
        drafter, draft_model = "auto", None
    return PreflightConfig(model=None if demo else (path or None), demo=demo, demo_variant=demo_variant(path),
                           drafter=drafter if drafter in DRAFTER_NAMES else "auto",
                           draft_model=draft_model if drafter in ("draft", "dflash") and draft_model else None)


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
        self.query: OneShot | None = None  # the check under way
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
        self._args = args = (path, drafter, draft_model)
        self.shutdown()
        self.label.setText("Pre-flight: checking the machine…")
        q = OneShot(preflight_config(path, drafter, draft_model), self)
        q.answered.connect(lambda ev, q=q: self._done(q, args, ev["preflight"], None))
        q.failed.connect(lambda msg, q=q: self._done(q, args, None, msg))
        self.query = q
        q.start()

    def _done(self, q: OneShot, args: tuple, report: dict | None, message: str | None) -> None:
        if q is self.query:
            self.query = None
        q.deleteLater()
        if args != self._args:
            return  # stale: the pick changed meanwhile
        if report is not None:  # a failed check is a report too: the line says what fails
            self.show_report(report)
            return
        self.report = None
        self.label.setText("Pre-flight: not checked — " + (message or "the pre-flight could not run"))
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
        if self.query is not None:
            self.shutdown()
            self.label.setText("Pre-flight: not checked yet")
        self._timer.stop()
        super().hideEvent(event)

    def showEvent(self, event) -> None:  # noqa: N802
        if self.report is None and self.query is None:
            self.schedule()
        super().showEvent(event)

    def shutdown(self) -> None:
        if self.query is not None:
            old, self.query = self.query, None
            old.cancel()
