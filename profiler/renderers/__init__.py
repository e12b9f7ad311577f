"""Renderers: one module per output format, each ``render(session) -> str | bytes``.

The format comes from the output file's extension. Formats that draw charts
(HTML, PDF) use the app's own chart code, which lives in ``gui/`` (Qt), so
they are imported only when asked for; ``profiler`` itself stays Qt-free.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from engine_adapter.errors import SpecscopeError

from ..session import atomic_write

# Longest suffix first: ".trace.json" must win over ".json".
FORMATS = {
    ".trace.json": "profiler.renderers.trace",
    ".json": "profiler.renderers.json_renderer",
    ".csv": "profiler.renderers.csv_renderer",
    ".html": "gui.reports.html",
    ".htm": "gui.reports.html",
    ".pdf": "gui.reports.pdf",
}


def renderer_for(path: str | Path):
    name = Path(path).name.lower()
    for ext, module in FORMATS.items():
        if name.endswith(ext):
            try:
                return importlib.import_module(module)
            except ImportError as exc:
                raise SpecscopeError(f"{ext} reports need PySide6 (the app's chart code): {exc}") from None
    raise SpecscopeError(
        f"cannot tell the report format from {Path(path).name!r}; use one of {', '.join(sorted(set(FORMATS)))}"
    )


def render_to_file(session, path: str | Path) -> None:
    mod = renderer_for(path)
    out = mod.render(session)
    try:
        atomic_write(path, out)
    except OSError as exc:
        raise SpecscopeError(f"could not write {path}: {exc.strerror or exc}") from None
