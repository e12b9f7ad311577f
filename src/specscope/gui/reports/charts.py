"""Chart images for reports, drawn by the app's own chart code, offscreen.

``draw(charts, name, session)`` puts a chart's PNG bytes into a ``Charts`` set, or the reason it could not be
drawn into the set's ``left_out``, so the report can say "chart unavailable" (and why) instead of failing. The
reasons travel with the charts they belong to: nothing is kept between two reports.
"""

from __future__ import annotations

import base64
from typing import Any

from specscope.errors import SpecscopeError
from specscope.display import offscreen_if_headless
from specscope.profiler.renderers.plugins import import_error_message
from specscope.profiler.renderers.html_common import esc

NAMES = ("throughput", "acceptance", "tokens_per_round", "breakdown", "division", "probe", "verify_cost", "tune")



class Charts(dict):
    """A report's chart images by key (PNG bytes), and ``left_out``: the charts that could not be drawn, and why."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.left_out: dict[str, str] = {}

    def merge(self, other: "Charts") -> "Charts":
        self.update(other)
        self.left_out.update(other.left_out)
        return self

    def leave_out(self, name: str, exc: BaseException) -> None:
        self.left_out[name] = f"{type(exc).__name__}: {exc}"

    def warnings(self) -> list[str]:
        """What the report had to leave out, said to the user beside it."""
        return [f"chart {name} left out: {why}" for name, why in sorted(self.left_out.items())]


def ensure_app():
    """A Qt application for offscreen drawing; headless Linux gets the offscreen platform."""
    offscreen_if_headless()
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    if app is None:
        app = QApplication(["specscope-report"])
    return app


def draw(charts: Charts, name: str, session, width: int = 900, height: int = 420) -> None:
    """``charts[name]``: the chart's PNG bytes, or ``None`` with the reason in ``charts.left_out[name]``."""
    charts[name] = None
    try:
        ensure_app()
        from specscope.gui.charts.export import chart_image

        data = chart_image(name, session, width=width, height=height, fmt="png")
        if not data:
            raise ValueError("the chart drew nothing")
        charts[name] = bytes(data)
    except ImportError as exc:
        if (exc.name or "").startswith("specscope"):  # a broken installation is not a chart to skip
            raise SpecscopeError(import_error_message(exc, "report charts")) from None
        charts.leave_out(name, exc)
    except Exception as exc:  # a missing chart must never cost the whole report
        charts.leave_out(name, exc)


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
