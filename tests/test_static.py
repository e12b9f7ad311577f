"""Static checks on the checkout's own source: ruff and mypy (configured in pyproject.toml) are clean, and no module
uses another module's private (``_x``) names.

They read files, not the installed package, so they need the checkout: CI runs them from its clone.
"""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "specscope"

pytestmark = pytest.mark.skipif(not SRC.is_dir(), reason="needs the checkout's src/")


def ruff(*paths: str, config: Path = ROOT / "pyproject.toml") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(config), *paths],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_ruff_is_clean():
    r = ruff("src", "tests")
    assert r.returncode == 0, r.stdout + r.stderr


def test_ruff_would_catch_an_unused_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n")
    r = ruff(str(bad))
    assert r.returncode == 1 and "F401" in r.stdout, r.stdout + r.stderr


@pytest.mark.slow  # mypy over the package and a planted error (~40 s); CI runs it with the slow set, and `python -m mypy` is the quick way
def test_mypy_is_clean_and_catches_what_it_should(tmp_path):
    """One mypy run (it takes ~30 s): the package is clean, and three planted files fail where they should. The key
    strings are checked in one place: code that reads a case key its record lacks fails mypy, and so does a summary
    built without one of its keys (all required), and an event emitted with a field its kind does not have
    (``specscope.events``). The bodies of unannotated functions are checked too (``check_untyped_defs``): a wrong call
    inside one fails."""
    bad = tmp_path / "misspelled.py"
    bad.write_text("from specscope.profiler.session.records import Case, Summary\n\n\n"
                   "def content(case: Case) -> str:\n    return case[\"contnet_class\"]\n\n\n"
                   "def untyped(x):\n    return len(3)\n\n\n"
                   "def partial() -> Summary:\n    return {\"k\": 2}\n")
    # an emit site with a misspelled field: the run's protocol as it is, one field name changed
    protocol = (SRC / "profiler" / "run" / "protocol.py").read_text()
    site = '"mode": "plain", "repeat": r, "tok_s": tps}'
    assert protocol.count(site) == 1
    planted = tmp_path / "planted_protocol.py"
    planted.write_text(protocol.replace(site, site.replace('"tok_s"', '"tok_sec"')))
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir",
                        str(tmp_path / "mypy-cache"), str(SRC), str(bad), str(planted)],
                       capture_output=True, text=True, cwd=ROOT, timeout=300, env={**os.environ, "MYPYPATH": str(ROOT / "src")})
    errors = [line for line in r.stdout.splitlines() if ": error:" in line]
    assert not [line for line in errors if not line.startswith(str(tmp_path))], r.stdout[-4000:] + r.stderr[-2000:]
    assert 'TypedDict "Case" has no key "contnet_class"' in r.stdout, r.stdout
    assert 'Argument 1 to "len" has incompatible type "int"' in r.stdout, r.stdout
    missing = next((line for line in r.stdout.splitlines() if "Missing keys" in line), "")
    assert '"regime"' in missing and '"plain_tok_s_ci95"' in missing, r.stdout  # every key required, its own and its intervals
    at_site = [line for line in errors if line.startswith(str(planted))]
    assert len(at_site) == 1 and "StatusEvent | RunStartedEvent" in at_site[0], r.stdout  # that site, and only it


# -- no module reaches into another's private names --------------------------------------------------------


def module_name(path: Path, src: Path) -> str:
    rel = path.relative_to(src.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def resolve(mod: str, level: int, current: str, is_pkg: bool) -> str:
    if level == 0:
        return mod
    base = current.split(".")
    if not is_pkg:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([mod] if mod else []))


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def violations(src: Path) -> list[str]:
    modules = {module_name(p, src): p for p in src.rglob("*.py")}
    out = []
    for name, path in sorted(modules.items()):
        tree = ast.parse(path.read_text(), str(path))
        is_pkg = path.name == "__init__.py"
        aliases: dict[str, str] = {}  # local name -> module it stands for
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = resolve(node.module or "", node.level, name, is_pkg)
                for a in node.names:
                    full = f"{target}.{a.name}"
                    if full in modules:
                        aliases[a.asname or a.name] = full
                    elif private(a.name) and target in modules and target != name:
                        out.append(f"{path.relative_to(src.parent)}:{node.lineno}: imports {a.name} from {target}")
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in modules and a.asname:
                        aliases[a.asname] = a.name
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and private(node.attr):
                base = node.value
                if isinstance(base, ast.Name) and base.id in aliases and aliases[base.id] != name:
                    out.append(f"{path.relative_to(src.parent)}:{node.lineno}: uses {aliases[base.id]}.{node.attr}")
                elif isinstance(base, ast.Attribute):
                    dotted = ast.unparse(base)
                    if dotted in modules and dotted != name:
                        out.append(f"{path.relative_to(src.parent)}:{node.lineno}: uses {dotted}.{node.attr}")
    return out



def test_no_module_uses_another_modules_private_names():
    assert violations(SRC) == []


def test_the_private_name_check_catches_both_spellings(tmp_path):
    pkg = tmp_path / "specscope"
    (pkg / "core").mkdir(parents=True)
    for f in (pkg / "__init__.py", pkg / "core" / "__init__.py"):
        f.write_text("")
    (pkg / "core" / "a.py").write_text("_state = {}\ndef _helper():\n    return 1\n")
    (pkg / "core" / "b.py").write_text("from .a import _helper\n")
    (pkg / "core" / "c.py").write_text("from specscope.core import a\n\n\ndef f():\n    return a._state\n")
    (pkg / "core" / "d.py").write_text("from . import a\n\n\ndef g():\n    return a.__name__, a._helper  # noqa\n")
    found = violations(pkg)
    assert len(found) == 3, found
    assert any("b.py:1: imports _helper" in v for v in found) and any("c.py:5: uses specscope.core.a._state" in v
                                                                       for v in found)
