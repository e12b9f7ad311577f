"""Renderers: one module per output format, each ``render(session) -> str | bytes``.

The format comes from the output file's extension. Formats that draw charts
(HTML, PDF) use the app's own chart code, which lives in ``gui/`` (Qt), so
they are imported only when asked for; ``profiler`` itself stays Qt-free.

Privacy: HTML, PDF, CSV and trace reports are meant to be shared, so every text
in them goes through ``redact`` (the home directory, and anything that looks
like ``/Users/NAME``, ``/home/NAME``, ``/root`` or ``C:\\Users\\NAME``, becomes
``~``). The ``.json`` format is the session itself, exactly as ``specscope run
-o`` saves it (it must load back unchanged), so it keeps the paths as measured.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from specscope.errors import SpecscopeError

from ..optional import import_part
from ..session import atomic_write

_HOME_PATTERNS = [
    re.compile(r"(?<![\w.~])/Users/[^/\s\"'<>]+"),
    re.compile(r"(?<![\w.~])/home/[^/\s\"'<>]+"),
    re.compile(r"(?<![\w.~])/root(?=/|\s|$|[\"'<>),;:])"),
    re.compile(r"(?<![\w])[A-Za-z]:\\Users\\[^\\\s\"'<>]+", re.IGNORECASE),
]


def redact(text: str) -> str:
    """Show paths relative to ``~``: no home directory or user name leaks into a report."""
    if not text:
        return text
    home = os.path.expanduser("~").rstrip("/\\")
    if home and home != "~" and len(home) > 1:  # the home folder itself, only as a whole path component
        text = re.sub(r"(?<![\w.~])" + re.escape(home) + r"(?![^/\\\s\"'<>),;:])", "~", text)
    for pat in _HOME_PATTERNS:
        text = pat.sub("~", text)
    return text


# Longest suffix first: ".trace.json" must win over ".json".
FORMATS = {
    ".trace.json": "specscope.profiler.renderers.trace",
    ".json": "specscope.profiler.renderers.json_renderer",
    ".csv": "specscope.profiler.renderers.csv_renderer",
    ".html": "specscope.gui.reports.html",
    ".htm": "specscope.gui.reports.html",
    ".pdf": "specscope.gui.reports.pdf",
}


def renderer_for(path: str | Path):
    name = Path(path).name.lower()
    for ext, module in FORMATS.items():
        if name.endswith(ext):
            return import_part(module, f"the {ext} report")
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
