"""What users install: the wheel holds every module, and the installed command works from anywhere.

These tests run the package as installed (the `specscope` console script of this interpreter's
environment, from a folder outside the checkout), so a module or data file missing from the
wheel fails here even if the source tree has it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from importlib.resources import files
from pathlib import Path

import pytest

from specscope.errors import SpecscopeError
from specscope.profiler.renderers.plugins import RENDERERS, import_error_message, load

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "specscope"
FIXTURE = ROOT / "tests" / "fixtures" / "session_demo.json"
SOURCE_FILES = ("*.py", "*.json", "*.txt", "*.svg", "*.png", "*.css", "*.safetensors")


def source_files() -> set[str]:
    out = set()
    for pattern in SOURCE_FILES:
        out |= {"specscope/" + p.relative_to(SRC).as_posix() for p in SRC.rglob(pattern) if "__pycache__" not in p.parts}
    return out


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from a copy of the source tree (the checkout stays clean)."""
    tmp = tmp_path_factory.mktemp("wheel")
    tree = tmp / "tree"
    shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(".git", "__pycache__", "*.egg-info", "build", "dist",
                                                              ".pytest_cache", "docs", "tests"))
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(tmp / "dist"), str(tree)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    (whl,) = (tmp / "dist").glob("specscope-*.whl")
    return whl


def test_wheel_contains_every_module_and_data_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = source_files()
    assert {"specscope/gui/charts/common.py", "specscope/gui/reports/html.py", "specscope/assets/default_suite.json"} <= expected
    assert not expected - names, f"missing from the wheel: {sorted(expected - names)}"
    # only specscope's own top-level package, nothing generic like `gui` or `profiler` in site-packages
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"specscope"}
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "specscope = specscope.profiler.cli.main:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_wheel_ships_the_trained_demo_small(wheel):
    """`--demo` needs no build: the trained demo (target with its MTP head, draft, tokenizers) is in the wheel, small."""
    z = zipfile.ZipFile(wheel)
    demo = [i for i in z.infolist() if i.filename.startswith("specscope/assets/demo_trained/")]
    names = {i.filename.split("demo_trained/")[1] for i in demo}
    for part in ("tiny-trained-demo", "tiny-trained-demo-draft"):
        assert {f"{part}/config.json", f"{part}/tokenizer.json", f"{part}/model.safetensors"} <= names, names
    assert "tiny-trained-demo/model-mtp.safetensors" in names
    # the DFlash drafter trained for it (no tokenizer of its own: it reads the target's)
    assert {"tiny-trained-demo-dflash/config.json", "tiny-trained-demo-dflash/model.safetensors"} <= names, names
    # and the DFlash2 drafter (published DFlash2 format: convolutions, candidate selector)
    assert {"tiny-trained-demo-dflash2/config.json", "tiny-trained-demo-dflash2/model.safetensors"} <= names, names
    assert sum(i.file_size for i in demo) <= 12.5 * 2**20
    assert sum(i.compress_size for i in demo) <= 12 * 2**20


def test_tests_import_the_installed_package():
    """CI sets SPECSCOPE_EXPECT_INSTALLED: there the suite must test the wheel, not the checkout."""
    pkg = Path(str(files("specscope"))).resolve()
    if not os.environ.get("SPECSCOPE_EXPECT_INSTALLED"):
        pytest.skip("developer run (editable install allowed); CI checks this")
    assert pkg.is_relative_to(Path(sysconfig.get_paths()["purelib"]).resolve()), pkg
    assert not pkg.is_relative_to(ROOT.resolve()), pkg


def installed_command() -> str:
    exe = Path(sys.executable).parent / ("specscope.exe" if os.name == "nt" else "specscope")
    assert exe.exists(), f"no `specscope` command beside {sys.executable}: is the package installed?"
    return str(exe)


def clean_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    return env


@pytest.mark.slow  # run, app screenshot, HTML and PDF report by the installed command (~12 s; CI runs it): each
# step runs by default on its own (tests/profiler/cli, tests/gui/test_gui_command.py, tests/profiler/renderers)
def test_installed_command_end_to_end_from_outside_the_checkout(tmp_path):
    cmd = installed_command()

    def run(*args, timeout=600):
        r = subprocess.run([cmd, *args], cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=timeout)
        assert r.returncode == 0, f"specscope {' '.join(args)} failed:\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
        return r

    assert "usage: specscope" in run("--help").stdout
    run("run", "--demo", "--cases", "1", "--max-tokens", "4", "-o", "s.json", "--quiet")
    run("gui", "--session", "s.json", "--screenshot", "app.png")
    run("report", "s.json", "-o", "r.html")
    run("report", "s.json", "-o", "r.pdf")
    assert (tmp_path / "app.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "r.pdf").read_bytes()[:5] == b"%PDF-"
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "data:image/png" in html and "chart unavailable" not in html  # the charts were drawn
    assert not list(tmp_path.glob("*.tmp"))


def test_incomplete_install_is_named_as_such(wheel, tmp_path):
    """A wheel missing the app's chart package: the error says 'installed incompletely', not 'needs PySide6'."""
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    shutil.rmtree(target / "specscope" / "gui" / "charts")
    env = clean_env()
    env["PYTHONPATH"] = str(target)
    for args in (["report", str(FIXTURE), "-o", str(tmp_path / "r.html")],
                 ["gui", "--session", str(FIXTURE), "--screenshot", str(tmp_path / "a.png")]):
        r = subprocess.run([sys.executable, "-m", "specscope", *args], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 2, r.stderr
        assert "installed incompletely" in r.stderr and "specscope.gui.charts" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and "needs PySide6" not in r.stderr
        assert not (tmp_path / "r.html").exists()


def test_import_error_messages_name_the_cause():
    with pytest.raises(SpecscopeError, match="installed incompletely: nothing provides 'xyz'"):
        load(RENDERERS, "xyz", "the test part")
    qt = ModuleNotFoundError("No module named 'PySide6'", name="PySide6")
    assert "needs PySide6" in import_error_message(qt, "the .pdf report")
    other = ImportError("libGL.so.1: cannot open shared object file")
    msg = import_error_message(other, "the desktop app")
    assert "libGL.so.1" in msg and "installed incompletely" not in msg and "needs PySide6" not in msg
