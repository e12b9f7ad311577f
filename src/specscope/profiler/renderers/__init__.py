"""Renderers: one module per output format, each ``render(session) -> str | bytes``; one that can leave a part
out (a chart it could not draw) also has ``render_with_warnings(session) -> (str | bytes, [what was left out])``.

The format comes from the output file's extension. Every renderer is registered
as a ``specscope.renderers`` entry point named by its extension (pyproject.toml);
the ones that draw charts (HTML, PDF) live in the app (``gui/reports``) and are
imported only when asked for, so ``profiler`` itself never names the app.

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

from specscope.profiler.renderers.plugins import RENDERERS, load, registered
from specscope.profiler.session.file_io import atomic_write

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


def formats() -> list[str]:
    """Every registered report extension, with its dot."""
    return sorted("." + e for e in registered(RENDERERS))


def renderer_for(path: str | Path):
    """The renderer module for ``path``'s extension, from the ``specscope.renderers`` entry points.

    Names are extensions without the dot; the longest match wins (``trace.json`` over ``json``).
    """
    name = Path(path).name.lower()
    known = registered(RENDERERS)
    for ext in sorted(known, key=len, reverse=True):
        if name.endswith("." + ext):
            return load(RENDERERS, ext, f"the .{ext} report")
    listed = ", ".join(formats()) or "none registered: specscope is installed incompletely"
    raise SpecscopeError(f"cannot tell the report format from {Path(path).name!r}; use one of {listed}")


def render_to_file(session, path: str | Path) -> list[str]:
    """Render and write atomically; returns what the renderer could not include (e.g. a chart), to be said."""
    mod = renderer_for(path)
    with_warnings = getattr(mod, "render_with_warnings", None)
    out, warnings = with_warnings(session) if with_warnings else (mod.render(session), [])
    try:
        atomic_write(path, out)
        for side, text in side_tables(session, path, mod).items():
            atomic_write(side, text)
    except OSError as exc:
        raise SpecscopeError(f"could not write {path}: {exc.strerror or exc}") from None
    return list(warnings)


def side_tables(session, path: str | Path, mod=None) -> dict[Path, str]:  # dict: keyed by the tables' paths
    """Tables a one-table format writes beside the report (``r.csv`` → ``r.verify_cost.csv``, ``r.tune.csv``),
    from a renderer's optional ``extra_tables(session) -> {name: text}``."""
    mod = mod or renderer_for(path)
    p = Path(path)
    tables: dict[str, str] = getattr(mod, "extra_tables", lambda s: {})(session)
    return {p.with_name(f"{p.stem}.{name}{p.suffix}"): text for name, text in tables.items()}
