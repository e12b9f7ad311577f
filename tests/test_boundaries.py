"""The package boundary is mechanical: core is Qt-free, the GUI never touches MLX."""

import ast
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import pytest

PKG = Path(str(files("specscope")))  # the installed package, not a checkout that might shadow it
QT = {"PySide6", "PyQt5", "PyQt6", "pyqtgraph", "shiboken6"}


def imported_modules(path: Path) -> set[str]:
    """Absolute module names a file imports (``a.b`` from ``import a.b`` and ``from a.b import c``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def tops(mods: set[str]) -> set[str]:
    return {m.split(".")[0] for m in mods}


@pytest.mark.parametrize("package", ["engine_adapter", "profiler"])
def test_core_never_imports_qt(package):
    bad = {str(p.relative_to(PKG)): tops(imported_modules(p)) & QT for p in (PKG / package).rglob("*.py")}
    assert not {k: v for k, v in bad.items() if v}


def test_gui_never_imports_mlx_or_engine():
    def forbidden(m: str) -> bool:
        if m.split(".")[0] in ("mlx", "mlx_lm"):
            return True
        return m.startswith("specscope.engine_adapter") and m != "specscope.engine_adapter.errors"

    bad = {str(p.relative_to(PKG)): {m for m in imported_modules(p) if forbidden(m)} for p in (PKG / "gui").rglob("*.py")}
    assert not {k: v for k, v in bad.items() if v}


def test_checker_sees_a_violation(tmp_path):
    """The check above can fail: a file importing mlx is caught."""
    f = tmp_path / "x.py"
    f.write_text("import os\nfrom mlx import core as mx\nimport specscope.engine_adapter.loader\n")
    assert {"mlx", "specscope.engine_adapter.loader"} <= imported_modules(f)


def test_profiler_imports_no_mlx_at_module_level():
    code = (
        "import sys, specscope.profiler.cli, specscope.profiler.session, specscope.profiler.stats, "
        "specscope.profiler.protocol, specscope.profiler.runner, specscope.profiler.suite, "
        "specscope.profiler.verdict, specscope.profiler.summary_text, specscope.profiler.renderers; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('mlx', 'mlx_lm', 'PySide6', 'pyqtgraph')]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
