"""Light/dark palette following the OS, and the app's style sheet.

The scheme comes from ``QStyleHints.colorScheme()`` (Qt >= 6.5); where the platform does not say
(older Qt, some Linux desktops, the offscreen platform) from the lightness of the platform's own
palette. ``SPECSCOPE_THEME=dark`` (or ``light``) forces one, e.g. for screenshots.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Mapping

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from .charts.common import DARK, LIGHT
from .charts.records import ChartTheme

THEME_ENV = "SPECSCOPE_THEME"
_platform_dark: bool | None = None  # the platform palette's lightness, read before the app replaces it


def forced_scheme() -> str | None:
    """"dark" or "light" when ``SPECSCOPE_THEME`` forces one, else None (follow the OS)."""
    v = os.environ.get(THEME_ENV, "").strip().lower()
    return v if v in ("dark", "light") else None


def _palette_is_dark(app: QtWidgets.QApplication) -> bool:
    global _platform_dark
    live = app.palette().color(QtGui.QPalette.ColorRole.Window).lightness() < 128
    if sys.platform == "darwin":  # the app never replaces the palette there: it follows the OS live
        return live
    if _platform_dark is None:  # first look, before apply_palette installs its own palette
        _platform_dark = live
    return _platform_dark


def is_dark(app: QtWidgets.QApplication) -> bool:
    forced = forced_scheme()
    if forced:
        return forced == "dark"
    try:
        scheme = app.styleHints().colorScheme()
        if scheme == QtCore.Qt.ColorScheme.Dark:
            return True
        if scheme == QtCore.Qt.ColorScheme.Light:
            return False
    except AttributeError:  # Qt < 6.5
        pass
    return _palette_is_dark(app)


def chart_theme(app) -> ChartTheme:
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


STYLE_SET = "specscopeStyle"  # an app property: the style apply_palette set


def apply_palette(app: QtWidgets.QApplication) -> ChartTheme:
    """Use the platform's own palette on macOS (it follows the OS); Fusion + matching palette elsewhere.

    Each setter re-polishes every widget the app holds, so one that would change nothing is skipped: a second window
    (or a scheme switch back and forth) pays for its own widgets only. Setting them every time made the n-th window
    of a test process take 0.3 s + 0.25 s per window still alive (2.5 s with six)."""
    if sys.platform != "darwin":
        _palette_is_dark(app)  # note the platform's own palette before replacing it
        if app.property(STYLE_SET) != "Fusion":  # not style().name(): under a style sheet that is Qt's proxy, unnamed
            app.setStyle("Fusion")
            app.setProperty(STYLE_SET, "Fusion")
        palette = dark_palette() if is_dark(app) else app.style().standardPalette()
        if app.palette() != palette:
            app.setPalette(palette)
    theme = chart_theme(app)
    sheet = style_sheet(theme)
    if app.styleSheet() != sheet:
        app.setStyleSheet(sheet)
    return theme


def style_sheet(t: ChartTheme) -> str:
    dark = t["name"] == "dark"
    card = "#161b22" if dark else "#f6f8fa"
    border = "#30363d" if dark else "#d0d7de"
    return f"""
    #verdict {{ background: {card}; border: 1px solid {border}; border-radius: 8px; }}
    #verdictHead {{ font-size: 15pt; font-weight: 600; }}
    #compareHead {{ font-size: 13pt; font-weight: 600; }}
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


# -- switching a running app between light and dark --------------------------------------------------------

def _colour_map(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[int, QtGui.QColor]:  # dict: an old colour (RGBA) -> its new one
    """Every colour of the old chart theme (as RGBA) to the same role's colour in the new one."""
    out: dict[int, QtGui.QColor] = {}

    def colour(v):
        return QtGui.QColor(*v) if isinstance(v, tuple) else QtGui.QColor(v)

    for key, v in old.items():
        w = new.get(key)
        if key in ("name", "grid") or w is None:
            continue
        pairs = zip(v, w) if isinstance(v, list) else [(v, w)]
        for a, b in pairs:
            ca = colour(a)
            out.setdefault(ca.rgba(), colour(b))
    return out


def _swap(c: QtGui.QColor, cmap: dict) -> QtGui.QColor | None:
    n = cmap.get(c.rgba())
    return QtGui.QColor(n) if n is not None else None


def _swapped(style, make, cmap):
    """A copy of a pen or brush in the other palette's colour, or None if its colour is not a theme colour."""
    if style is None:
        return None
    style = make(style)
    n = _swap(style.color(), cmap)
    if n is None:
        return None
    style.setColor(n)
    return style


def _swap_pen(pen, cmap):
    return _swapped(pen, lambda p: QtGui.QPen(pg.mkPen(p)), cmap)


def _swap_brush(brush, cmap):
    return _swapped(brush, lambda b: QtGui.QBrush(pg.mkBrush(b)), cmap)


def restyle_charts(root: QtWidgets.QWidget, old: ChartTheme, new: ChartTheme) -> int:
    """Recolour the items already drawn in every chart under ``root`` from the ``old`` chart theme to ``new``.

    A chart's ``apply_theme`` restyles its frame (background, axes, title, legend); the curves, bars,
    markers and labels it made in ``build`` keep the colours they were made with. This maps each colour
    of the old theme to the same role's colour in the new one. Returns how many items changed.
    """
    if old is new or old.get("name") == new.get("name"):
        return 0
    cmap = _colour_map(old, new)
    changed = 0
    for chart in root.findChildren(pg.PlotWidget):
        for item in chart.getPlotItem().items + [i for it in chart.getPlotItem().items for i in it.childItems()]:
            changed += _restyle_item(item, cmap)
    return changed


def _restyle_item(item, cmap) -> int:
    n = 0
    if isinstance(item, pg.PlotDataItem):
        pen = _swap_pen(item.opts.get("pen"), cmap)
        if pen is not None:
            item.setPen(pen)
            n += 1
        sb = item.opts.get("symbolBrush")
        if sb is not None and not isinstance(sb, (list, tuple)):
            b = _swap_brush(sb, cmap)
            if b is not None:
                item.setSymbolBrush(b)
                n += 1
        sp = item.opts.get("symbolPen")
        if sp is not None and not isinstance(sp, (list, tuple)):
            p = _swap_pen(sp, cmap)
            if p is not None:
                item.setSymbolPen(p)
                n += 1
    elif isinstance(item, pg.BarGraphItem):
        kw = {}
        for key, swap in (("brush", _swap_brush), ("pen", _swap_pen)):
            v = item.opts.get(key)
            if v is not None and not isinstance(v, (list, tuple)):
                r = swap(v, cmap)
                if r is not None:
                    kw[key] = r
        if kw:
            item.setOpts(**kw)
            n += 1
    elif isinstance(item, pg.ErrorBarItem):
        pen = _swap_pen(item.opts.get("pen"), cmap)
        if pen is not None:
            item.setData(pen=pen)
            n += 1
    elif isinstance(item, pg.InfiniteLine):
        pen = _swap_pen(item.pen, cmap)
        if pen is not None:
            item.setPen(pen)
            n += 1
    elif isinstance(item, pg.FillBetweenItem):
        b = _swap_brush(item.brush(), cmap)
        if b is not None:
            item.setBrush(b)
            n += 1
    elif isinstance(item, pg.TextItem):
        c = _swap(QtGui.QColor(item.color), cmap)
        if c is not None:
            item.setColor(c)
            n += 1
    return n
