"""Work around a PySide6 refcount bug on Python < 3.12.

PySide6 6.12.0 wheels return ``None`` (and bools) from void/bool Qt methods
without taking a reference. On Python 3.12+ these objects are immortal (PEP 683)
so nothing happens; on 3.11 every such call lowers ``None``'s reference count
by one, and after enough calls (a few thousand chart redraws) the interpreter
aborts with "none_dealloc: deallocating None". We detect the leak with one Qt
call and, only if present, give ``None``/``True``/``False`` a very large
reference count, which is what 3.12 does for them anyway.
"""

from __future__ import annotations

import sys

_BOOST = 1 << 50
_done = False


def _leaks() -> bool:
    from PySide6 import QtCore

    obj = QtCore.QObject()
    before = sys.getrefcount(None)
    for _ in range(20):
        obj.setObjectName("x")  # a void method
    return sys.getrefcount(None) < before - 10


def protect_singletons() -> bool:
    """Return True if the workaround was applied."""
    global _done
    if _done or sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return False
    try:
        if not _leaks():
            return False
        import ctypes

        for obj in (None, True, False):
            cell = ctypes.c_ssize_t.from_address(id(obj))
            # ob_refcnt is the first field of a release-build PyObject; check before touching it.
            if abs(cell.value - (sys.getrefcount(obj) - 1)) > 1000:
                return False
            cell.value += _BOOST
        _done = True
        return True
    except Exception:  # never let a workaround stop the app
        return False
