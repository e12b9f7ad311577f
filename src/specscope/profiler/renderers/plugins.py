"""Parts of specscope that plug into the core: report renderers and commands the app provides.

They are registered as entry points in pyproject.toml (groups ``specscope.renderers`` and
``specscope.commands``) and looked up here by name, so the core never names the app. A
failed lookup or import gets a message that names its real cause: a third-party library
that is missing (PySide6, pyqtgraph) is a missing dependency; a part of specscope itself
that is missing is a broken installation, never "needs PySide6".
"""

from __future__ import annotations

import configparser
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specscope.errors import SpecscopeError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

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


def registered(group: str) -> dict[str, "EntryPoint"]:  # dict: keyed by the installed entry points' names
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=group)}


class _OwnEntry:
    """One of specscope's own entry points, read from its installed ``entry_points.txt``."""

    def __init__(self, name: str, value: str):
        self.name, self.value = name, value

    def load(self) -> Any:
        module, _, attr = self.value.partition(":")
        obj = importlib.import_module(module.strip())
        for part in filter(None, attr.strip().split(".")):
            obj = getattr(obj, part)
        return obj


def own_entry(group: str, name: str) -> _OwnEntry | None:
    """specscope's own registration of ``name`` in ``group``, read straight from its dist-info beside the package:
    importing ``importlib.metadata`` and scanning every installed distribution costs the app's start 20-50 ms here.
    None where the install has no single dist-info there (an editable install): then the full lookup."""
    import specscope

    found = list(Path(specscope.__file__).resolve().parents[1].glob("specscope-*.dist-info/entry_points.txt"))
    if len(found) != 1:
        return None
    cp = configparser.ConfigParser(delimiters=("=",), interpolation=None)
    cp.optionxform = str  # type: ignore[assignment,method-assign]  # names are case-sensitive
    try:
        cp.read(found[0], encoding="utf-8")
    except (OSError, configparser.Error):
        return None
    value = cp.get(group, name, fallback=None)
    return _OwnEntry(name, value) if value else None


def load(group: str, name: str, purpose: str):
    """The object registered as ``name`` in ``group``, or a SpecscopeError saying why it is unavailable."""
    ep: Any = own_entry(group, name) or registered(group).get(name)
    if ep is None:
        raise SpecscopeError(f"specscope is installed incompletely: nothing provides {name!r} in {group} "
                             f"({purpose}); {REINSTALL}")
    try:
        return ep.load()
    except ImportError as exc:
        raise SpecscopeError(import_error_message(exc, purpose)) from None
