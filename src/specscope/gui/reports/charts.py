"""Chart images for reports, drawn by the app's own chart code, offscreen.

``image(name, session)`` returns PNG bytes, or ``None`` with the reason in
``last_error[name]`` so the report can say "chart unavailable" instead of failing.
"""

from __future__ import annotations

import base64

from specscope.errors import SpecscopeError
from specscope.profiler.cli.display import offscreen_if_headless
from specscope.profiler.renderers.plugins import import_error_message
from specscope.profiler.renderers.html_common import esc

NAMES = ("throughput", "acceptance", "tokens_per_round", "breakdown", "division", "probe", "verify_cost", "tune")

last_error: dict[str, str] = {}


def ensure_app():
    """A Qt application for offscreen drawing; headless Linux gets the offscreen platform."""
    offscreen_if_headless()
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    if app is None:
        app = QApplication(["specscope-report"])
    return app


def image(name: str, session, width: int = 900, height: int = 420) -> bytes | None:
    try:
        ensure_app()
        from specscope.gui.charts.export import chart_image

        data = chart_image(name, session, width=width, height=height, fmt="png")
        if not data:
            raise ValueError("the chart drew nothing")
        last_error.pop(name, None)
        return bytes(data)
    except ImportError as exc:
        if (exc.name or "").startswith("specscope"):  # a broken installation is not a chart to skip
            raise SpecscopeError(import_error_message(exc, "report charts")) from None
        last_error[name] = f"{type(exc).__name__}: {exc}"
        return None
    except Exception as exc:  # a missing chart must never cost the whole report
        last_error[name] = f"{type(exc).__name__}: {exc}"
        return None


def widget_png(widget, width: int, height: int) -> bytes | None:
    """PNG bytes of a report section's chart widget, shown offscreen at ``width``×``height`` and closed after
    (``ensure_app()`` first)."""
    from PySide6 import QtCore, QtWidgets

    from specscope.gui.charts.export import paint_png

    app = QtWidgets.QApplication.instance()
    assert app is not None, "ensure_app() comes first"
    widget.setAttribute(QtCore.Qt.WidgetAttribute.WA_DontShowOnScreen, True)
    widget.resize(int(width), int(height))
    widget.show()
    app.processEvents()
    png = paint_png(widget, width, height, text_antialiasing=False)
    widget.close()
    widget.deleteLater()
    return png


def section_figure(key: str, charts: dict, target: str, caption: str) -> str:
    """A section's chart ``charts[key]`` with its caption: inline for the screen, by file name for print."""
    data = charts.get(key)
    if not data:
        return f'<p class="unavailable muted">chart unavailable ({esc(key)})</p>'
    if target == "print":
        return (f'<p align="center"><img src="chart-{key}.png" width="640"></p>'
                f'<p class="muted" align="center"><small>{esc(caption)}</small></p>')
    b64 = base64.b64encode(data).decode("ascii")
    return f'<figure><img alt="{esc(key)}" src="data:image/png;base64,{b64}"><figcaption>{esc(caption)}</figcaption></figure>'
