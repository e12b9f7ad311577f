"""Import parts of specscope that live outside the core (the app, chart-drawing renderers).

A failed import gets a message that names its real cause: a third-party library that is
missing (PySide6, pyqtgraph) is a missing dependency; one of specscope's own modules that
is missing is a broken installation, never "needs PySide6".
"""

from __future__ import annotations

import importlib
from types import ModuleType

from specscope.errors import SpecscopeError

QT_LIBRARIES = ("PySide6", "shiboken6", "pyqtgraph")


def import_error_message(exc: ImportError, purpose: str) -> str:
    missing = (getattr(exc, "name", None) or "").strip()
    top = missing.split(".")[0]
    if top == "specscope":
        return (f"specscope is installed incompletely: its module {missing!r} is missing ({purpose}); "
                "reinstall with `pip install .` (or `pip install --force-reinstall specscope`)")
    if top in QT_LIBRARIES:
        return f"{purpose} needs {top}, which is not installed: {exc}; reinstall with `pip install .`"
    return f"{purpose} could not be loaded: {type(exc).__name__}: {exc}"


def import_part(module: str, purpose: str) -> ModuleType:
    """Import ``module`` or raise a SpecscopeError that says why it is unavailable."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise SpecscopeError(import_error_message(exc, purpose)) from None
