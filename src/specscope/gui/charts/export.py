"""Render any chart offscreen from a Session, for reports and the docs' images.

    chart_image(name, session, width=900, height=420, fmt="png") -> bytes

The charts are the very widgets the app shows, fed by the same data functions
(``gui.charts.data``), so the app and the report never disagree. Works whether
or not a QApplication exists (one is created, offscreen, if needed). Exported
images always use the light palette (reports are printed on white).
"""

from __future__ import annotations

import os
from typing import Any, Mapping

from specscope.profiler.session.records import Summary
from .records import ChartTheme

NAMES = ("throughput", "acceptance", "tokens_per_round", "breakdown", "division", "probe", "verify_cost", "tune")
SESSION_CHARTS = {"verify_cost", "tune"}  # drawn from measurements the session holds beside the run (roofline, tune)


def _ensure_app():
    from PySide6 import QtWidgets

    app = QtWidgets.QApplication.instance()
    if app is None:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        app = QtWidgets.QApplication(["specscope-export"])
    elif not isinstance(app, QtWidgets.QApplication):
        raise RuntimeError("chart_image needs a QApplication (a QGuiApplication is running)")
    return app


def chart_data(name: str, session, summary: Summary | None = None):
    """Exactly what the app draws for chart ``name`` (one assembly: ``data.all_chart_data``)."""
    from . import data

    if name not in NAMES:
        raise ValueError(f"unknown chart {name!r}; choose one of {', '.join(NAMES)}")
    if name in SESSION_CHARTS:
        from . import cost_data

        if name == "verify_cost":
            return cost_data.verify_curve_data(session.data.get("roofline"))
        return cost_data.tune_data(session.data.get("tune"))
    charts: Mapping[str, Any] = data.all_chart_data(session, summary)  # the chart's name is a key of ChartData
    return charts[name]


def build_chart(name: str, session, theme: ChartTheme | None = None, summary: Summary | None = None):
    """A chart widget filled from ``session`` (not shown)."""
    from . import CHARTS
    from .common import LIGHT

    if name not in CHARTS:
        raise ValueError(f"unknown chart {name!r}; choose one of {', '.join(NAMES)}")
    d = chart_data(name, session, summary)
    w = CHARTS[name](theme or LIGHT)
    w.set_data(d)
    return w


def paint_png(w, width: int, height: int, text_antialiasing: bool = True) -> bytes | None:
    """PNG bytes of chart widget ``w`` (laid out at ``width``×``height``) painted on its theme's background;
    ``None`` where the PNG could not be encoded."""
    from PySide6 import QtCore, QtGui

    img = QtGui.QImage(int(width), int(height), QtGui.QImage.Format.Format_ARGB32)
    img.fill(QtGui.QColor(w.theme["bg"]))
    painter = QtGui.QPainter(img)
    try:
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
        if text_antialiasing:
            painter.setRenderHint(QtGui.QPainter.RenderHint.TextAntialiasing)
        w.render(painter)
    finally:
        painter.end()
    buf = QtCore.QBuffer()
    buf.open(QtCore.QIODevice.OpenModeFlag.WriteOnly)
    saved = img.save(buf, "PNG")  # type: ignore[call-overload]  # PySide6's stub wants bytes; it takes only str
    return bytes(buf.data().data()) if saved else None


def chart_image(name: str, session, width: int = 900, height: int = 420, fmt: str = "png") -> bytes:
    """PNG (or SVG) bytes of chart ``name`` drawn from ``session``."""
    fmt = fmt.lower()
    if fmt not in ("png", "svg"):
        raise ValueError(f"unsupported image format {fmt!r}; use 'png' or 'svg'")
    if name not in NAMES:
        raise ValueError(f"unknown chart {name!r}; choose one of {', '.join(NAMES)}")
    if width < 50 or height < 50:
        raise ValueError("chart images must be at least 50×50 pixels")
    app = _ensure_app()
    from PySide6 import QtCore, QtGui

    w = build_chart(name, session)
    try:
        w.setAttribute(QtCore.Qt.WidgetAttribute.WA_DontShowOnScreen, True)
        w.resize(int(width), int(height))
        w.show()
        app.processEvents()
        # Data ranges depend on the final size for text items; set the data once more now that it is laid out.
        w.set_data(chart_data(name, session))
        app.processEvents()
        if fmt == "svg":
            from PySide6 import QtSvg

            buf = QtCore.QBuffer()
            buf.open(QtCore.QIODevice.OpenModeFlag.WriteOnly)
            gen = QtSvg.QSvgGenerator()
            gen.setOutputDevice(buf)
            gen.setSize(QtCore.QSize(int(width), int(height)))
            gen.setViewBox(QtCore.QRect(0, 0, int(width), int(height)))
            gen.setTitle(f"specscope {name}")
            painter = QtGui.QPainter(gen)
            try:
                w.render(painter)
            finally:
                painter.end()
            return bytes(buf.data().data())
        png = paint_png(w, width, height)
        if png is None:
            raise RuntimeError("could not encode the chart as PNG")
        return png
    finally:
        w.close()
        w.deleteLater()
