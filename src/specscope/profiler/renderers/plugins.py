"""Parts of specscope that plug into the core: report renderers and commands the app provides.

They are registered as entry points in pyproject.toml (groups ``specscope.renderers`` and
``specscope.commands``) and looked up here by name, so the core never names the app. A
failed lookup or import gets a message that names its real cause: a third-party library
that is missing (PySide6, pyqtgraph) is a missing dependency; a part of specscope itself
that is missing is a broken installation, never "needs PySide6".
"""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points

from specscope.errors import SpecscopeError

RENDERERS = "specscope.renderers"
COMMANDS = "specscope.commands"
QT_LIBRARIES = ("PySide6", "shiboken6", "pyqtgraph")
REINSTALL = "reinstall with `pip install .` (or `pip install --force-reinstall specscope`)"


def import_error_message(exc: ImportError, purpose: str) -> str:
    missing = (getattr(exc, "name", None) or "").strip()
    top = missing.split(".")[0]
    if top == "specscope":
        return f"specscope is installed incompletely: its module {missing!r} is missing ({purpose}); {REINSTALL}"
    if top in QT_LIBRARIES:
        return f"{purpose} needs {top}, which is not installed: {exc}; {REINSTALL}"
    return f"{purpose} could not be loaded: {type(exc).__name__}: {exc}"


def registered(group: str) -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=group)}


def load(group: str, name: str, purpose: str):
    """The object registered as ``name`` in ``group``, or a SpecscopeError saying why it is unavailable."""
    ep = registered(group).get(name)
    if ep is None:
        raise SpecscopeError(f"specscope is installed incompletely: nothing provides {name!r} in {group} "
                             f"({purpose}); {REINSTALL}")
    try:
        return ep.load()
    except ImportError as exc:
        raise SpecscopeError(import_error_message(exc, purpose)) from None
