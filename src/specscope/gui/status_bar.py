"""The main window's status bar: messages on the left, the session's status, device, MLX versions and peak memory on
the right, never drawn over."""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from .records import Snapshot
from .views.common import ElidingLabel, PlainLabel

MEASURE_NAMES = {"roofline": "verify cost", "tune": "tune"}  # a measurement's session (config "measure"), by name


class StatusBar(QtWidgets.QStatusBar):
    """A status bar whose messages never cover the session information on its right.

    QStatusBar paints a message itself, cut off where the permanent widgets begin. Here a message is the
    text of an eliding label that takes the space left of them (the whole message in its tooltip)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.message = ElidingLabel("", 1)
        self.message.setObjectName("statusMessage")
        self.message.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Preferred)
        self.message.setAlignment(QtCore.Qt.AlignmentFlag.AlignLeft | QtCore.Qt.AlignmentFlag.AlignVCenter)
        self.addWidget(self.message, 1)
        self._clear = QtCore.QTimer(self)
        self._clear.setSingleShot(True)
        self._clear.timeout.connect(self.clearMessage)
        self.add_session_labels()

    def showMessage(self, text: str, timeout: int | None = 0) -> None:  # noqa: N802 (Qt naming)
        self.message.setText(text)
        self._clear.stop()
        if timeout is not None and timeout > 0:
            self._clear.start(timeout)

    def clearMessage(self) -> None:  # noqa: N802 (Qt naming)
        self.message.setText("")

    def currentMessage(self) -> str:  # noqa: N802 (Qt naming)
        return self.message.full_text()

    def add_session_labels(self) -> None:
        """The session information on the right: ``session`` (its status), ``device``, ``mlx`` and ``memory``."""
        self.device = _label("device: —")
        self.mlx = _label("MLX: —")
        self.memory = _label("peak memory: —")
        self.session = _label("no session")
        for w in (self.session, self.device, self.mlx, self.memory):
            self.addPermanentWidget(w)

    def update_snapshot(self, snap: Snapshot) -> None:
        env = snap.get("environment") or {}
        if env:
            self.device.setText(f"device: {env.get('device_name') or env.get('device', '?')}"
                                + (f" ({env['chip']})" if env.get("chip") else ""))
            self.mlx.setText(f"MLX {env.get('mlx', '?')} · mlx-lm {env.get('mlx_lm', '?')}")
            pk = env.get("peak_memory_bytes")
            self.memory.setText(f"peak memory: {pk / 2**20:.0f} MiB" if pk else "peak memory: —")
        n, total = snap.get("n_cases_done", 0), snap.get("n_cases", 0)
        measure = snap.get("measure")
        if snap.get("sweep"):  # a sweep's top level has no cases of its own: its points do
            self.session.setText(f"session: {snap.get('status')} · {snap['sweep']['status']}")
        elif measure:  # a verify cost or tune measurement: no cases
            self.session.setText(f"session: {snap.get('status')} · {MEASURE_NAMES.get(measure, measure)}")
        else:
            self.session.setText(f"session: {snap.get('status')} · {n}/{total} cases")


def _label(text: str) -> PlainLabel:
    lab = PlainLabel()
    lab.setText(text)
    lab.setTextFormat(QtCore.Qt.TextFormat.PlainText)
    return lab
