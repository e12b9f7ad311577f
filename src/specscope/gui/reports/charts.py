"""Chart images for reports, drawn by the app's own chart code, offscreen.

``image(name, session)`` returns PNG bytes, or ``None`` with the reason in
``last_error[name]`` so the report can say "chart unavailable" instead of failing.
"""

from __future__ import annotations


from specscope.errors import SpecscopeError
from specscope.profiler.display import offscreen_if_headless
from specscope.profiler.plugins import import_error_message

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
