"""Light/dark palette following the OS, and the app's style sheet."""

from __future__ import annotations

import sys

from PySide6 import QtCore, QtGui, QtWidgets

from .charts.common import DARK, LIGHT


def is_dark(app: QtWidgets.QApplication) -> bool:
    try:
        scheme = app.styleHints().colorScheme()
        if scheme == QtCore.Qt.ColorScheme.Dark:
            return True
        if scheme == QtCore.Qt.ColorScheme.Light:
            return False
    except AttributeError:  # Qt < 6.5
        pass
    return app.palette().color(QtGui.QPalette.ColorRole.Window).lightness() < 128


def chart_theme(app) -> dict:
    return DARK if is_dark(app) else LIGHT


def dark_palette() -> QtGui.QPalette:
    p = QtGui.QPalette()
    c = QtGui.QColor
    R = QtGui.QPalette.ColorRole
    for role, col in (
        (R.Window, "#0d1117"), (R.WindowText, "#e6edf3"), (R.Base, "#161b22"), (R.AlternateBase, "#1c2128"),
        (R.ToolTipBase, "#161b22"), (R.ToolTipText, "#e6edf3"), (R.Text, "#e6edf3"), (R.Button, "#21262d"),
        (R.ButtonText, "#e6edf3"), (R.BrightText, "#ff7b72"), (R.Highlight, "#1f6feb"), (R.HighlightedText, "#ffffff"),
        (R.Link, "#58a6ff"), (R.PlaceholderText, "#6e7681"), (R.Mid, "#30363d"), (R.Dark, "#010409"),
    ):
        p.setColor(role, c(col))
    p.setColor(QtGui.QPalette.ColorGroup.Disabled, R.Text, c("#6e7681"))
    p.setColor(QtGui.QPalette.ColorGroup.Disabled, R.ButtonText, c("#6e7681"))
    return p


def apply_palette(app: QtWidgets.QApplication) -> dict:
    """Use the platform's own palette on macOS (it follows the OS); Fusion + matching palette elsewhere."""
    if sys.platform != "darwin":
        app.setStyle("Fusion")
        if is_dark(app):
            app.setPalette(dark_palette())
        else:
            app.setPalette(app.style().standardPalette())
    theme = chart_theme(app)
    app.setStyleSheet(style_sheet(theme))
    return theme


def style_sheet(t: dict) -> str:
    dark = t["name"] == "dark"
    card = "#161b22" if dark else "#f6f8fa"
    border = "#30363d" if dark else "#d0d7de"
    return f"""
    #verdict {{ background: {card}; border: 1px solid {border}; border-radius: 8px; }}
    #verdictHead {{ font-size: 15pt; font-weight: 600; }}
    #verdictDetail, #muted, #tileCaption, #tileNote {{ color: {t['muted']}; }}
    #errorBanner {{ color: {'#ff7b72' if dark else '#cf222e'}; font-weight: 600; }}
    #tile {{ background: {card}; border: 1px solid {border}; border-radius: 8px; }}
    #tileValue {{ font-size: 17pt; font-weight: 600; }}
    #tileCaption {{ font-size: 9pt; }}
    #tileNote {{ font-size: 9pt; }}
    #sectionTitle {{ font-weight: 600; }}
    #prompt {{ font-weight: 600; }}
    QGroupBox {{ font-weight: 600; }}
    #compat {{ color: {t['muted']}; font-weight: normal; }}
    """
