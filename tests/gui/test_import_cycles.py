"""No import cycle among siblings inside the app: import-linter's ``acyclic_siblings`` contract on ``specscope.gui``
(a package and each of its sub-packages: their direct children may not import each other round in a circle,
imports inside functions included)."""

import os
import subprocess
import sys
from pathlib import Path

CONTRACT = """[tool.importlinter]
root_package = "specscope"

[[tool.importlinter.contracts]]
name = "no cycle among siblings in the app"
type = "acyclic_siblings"
ancestors = ["specscope.gui"]
"""


def lint(tmp_path: Path, pythonpath: Path | None = None) -> tuple[int, str]:
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text(CONTRACT, encoding="utf-8")
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = str(pythonpath)
    r = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                        "sys.exit(lint_imports_command())", "--config", str(cfg), "--no-cache"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=300, env=env)
    return r.returncode, r.stdout + r.stderr


def test_no_cycle_among_siblings_in_the_app(tmp_path):
    rc, out = lint(tmp_path)
    assert rc == 0, out
    assert "1 kept, 0 broken" in out, out


def test_the_contract_catches_a_cycle(tmp_path):
    """views -> command_process -> views, the second import inside a function: the contract fails."""
    gui = tmp_path / "src" / "specscope" / "gui"
    (gui / "views").mkdir(parents=True)
    (gui.parent / "__init__.py").write_text("")
    (gui / "__init__.py").write_text("")
    (gui / "views" / "__init__.py").write_text("")
    (gui / "views" / "page.py").write_text("from ..command_process import run\n")
    (gui / "command_process.py").write_text("def run():\n    from .views import page\n    return page\n")
    rc, out = lint(tmp_path, pythonpath=tmp_path / "src")
    assert rc != 0, out
    assert "0 kept, 1 broken" in out, out
