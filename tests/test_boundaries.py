"""The package boundary is mechanical: core is Qt-free, the GUI never touches MLX."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
QT = ("PySide6", "PyQt5", "PyQt6", "pyqtgraph", "shiboken6")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


@pytest.mark.parametrize("package", ["engine_adapter", "profiler"])
def test_core_never_imports_qt(package):
    bad = {str(p.relative_to(ROOT)): imported_modules(p) & set(QT) for p in (ROOT / package).rglob("*.py")}
    assert not {k: v for k, v in bad.items() if v}


def test_gui_never_imports_mlx_or_engine():
    bad = {
        str(p.relative_to(ROOT)): imported_modules(p) & {"mlx", "mlx_lm", "engine_adapter"} - {"engine_adapter"}
        for p in (ROOT / "gui").rglob("*.py")
    }
    assert not {k: v for k, v in bad.items() if v}


def test_profiler_imports_no_mlx_at_module_level():
    code = (
        "import sys, profiler.cli, profiler.session, profiler.stats, profiler.protocol, profiler.runner, "
        "profiler.suite, profiler.verdict, profiler.summary_text, profiler.renderers; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('mlx', 'mlx_lm', 'PySide6', 'pyqtgraph')]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
