"""The layers are mechanical: import-linter contracts (pyproject.toml) on the installed package.

gui -> profiler -> engine_adapter, never upward; no Qt in the core or the engine; no MLX in the
app (directly or through anything it imports); the shared leaves import no layer; no import cycle among the
modules of any package, imports inside functions included; inside the profiler and the engine, each sub-package
imports only the floors under it (the profiler: cli, renderers, run, analysis, session; the engine: distributed and
tune_runs, machine_probe, engine, measure, decode, drafters, model, cache).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "pyproject.toml"


def lint(config: Path, pythonpath: Path | None = None) -> tuple[int, str]:
    """Run import-linter's own command on ``config`` (a fresh analysis, no cache)."""
    env = {**os.environ, "COLUMNS": "250"}  # import-linter wraps its report at the terminal's width
    if pythonpath:
        env["PYTHONPATH"] = str(pythonpath)
    r = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                        "sys.exit(lint_imports_command())", "--config", str(config), "--no-cache"],
                       capture_output=True, text=True, cwd=config.parent, timeout=300, env=env)
    return r.returncode, r.stdout + r.stderr


def stub_contract_modules(src: Path) -> None:
    """Empty stand-ins, under ``src``, for every module the contracts name (import-linter refuses a contract
    naming a module that does not exist), packages where the real one is a package."""
    import tomllib

    contracts = tomllib.loads(CONFIG.read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
    names = {m for c in contracts for key in ("source_modules", "forbidden_modules", "layers", "ancestors")
             for m in c.get(key, []) if m.startswith("specscope")}
    # a layers contract with containers names its layers relative to them, siblings split by "|"
    names |= {f"{box}.{part.strip()}" for c in contracts for box in c.get("containers", [])
              for layer in c["layers"] for part in layer.replace(":", "|").split("|")}
    for name in sorted(names):
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            here = src.joinpath(*parts[:i])
            if (ROOT / "src").joinpath(*parts[:i]).is_dir() or i < len(parts):
                here.mkdir(exist_ok=True)
                if not (here / "__init__.py").exists():
                    (here / "__init__.py").write_text("")
            elif not here.with_suffix(".py").exists():
                here.with_suffix(".py").write_text("")


def test_import_contracts_hold():
    rc, out = lint(CONFIG)
    assert rc == 0, out
    assert "9 kept, 0 broken" in out, out


def lint_planted(tmp_path: Path, files: dict[str, str]) -> tuple[int, str]:
    """The project's contracts on a stand-in package: ``files`` (paths under src/, their text) planted among empty
    modules for everything the contracts name."""
    src = tmp_path / "src"
    for rel, text in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    stub_contract_modules(src)
    cfg = tmp_path / "pyproject.toml"
    contracts = CONFIG.read_text(encoding="utf-8").split("[tool.importlinter]", 1)[1].split("[tool.pytest", 1)[0]
    cfg.write_text("[tool.importlinter]" + contracts)
    return lint(cfg, pythonpath=src)


def test_contracts_catch_a_violation(tmp_path):
    """The same contracts fail on a package where the core imports the app (so the check above can fail)."""
    rc, out = lint_planted(tmp_path, {
        "specscope/profiler/cli/main.py": "import specscope.gui\n",
        "specscope/profiler/analysis/summary.py": "",
        "specscope/profiler/session/session.py": "from specscope.profiler.analysis import summary\n",  # data computing figures
        "specscope/profiler/run/config.py": "",
        "specscope/profiler/analysis/stats.py": "from specscope.profiler.run import config\n",  # analysis over a run
        "specscope/engine_adapter/cache/rollback.py": "from ..decode import decoding\n",  # the floor under decoding
        "specscope/engine_adapter/decode/decoding.py": "",
    })
    assert rc != 0, out
    assert "specscope.profiler is not allowed to import specscope.gui" in out, out
    assert "specscope.profiler.session is not allowed to import specscope.profiler.analysis" in out, out
    assert "specscope.profiler.analysis.stats -> specscope.profiler.run.config" in out, out
    assert "specscope.engine_adapter.cache.rollback -> specscope.engine_adapter.decode.decoding" in out, out


def test_contracts_catch_a_cycle_hidden_in_a_function(tmp_path):
    """views -> command_process -> views, the second import inside a function: the acyclic contract fails."""
    rc, out = lint_planted(tmp_path, {
        "specscope/gui/views/__init__.py": "",
        "specscope/gui/views/page.py": "from ..command_process import run\n",
        "specscope/gui/command_process.py": "def run():\n    from .views import page\n    return page\n",
    })
    assert rc != 0, out
    assert "8 kept, 1 broken" in out and "No cycles are allowed in specscope.gui" in out, out


def test_contracts_keep_running_engines_out_of_the_analysis_floor(tmp_path):
    """analysis -> the engine's tune runs (running an engine from the figures' floor, as run_tune once did): the
    analysis contract fails, though the core may import the engine."""
    rc, out = lint_planted(tmp_path, {
        "specscope/profiler/analysis/tune.py": "from specscope.engine_adapter import tune_runs\n",
    })
    assert rc != 0, out
    assert "8 kept, 1 broken" in out, out
    assert "specscope.profiler.analysis is not allowed to import specscope.engine_adapter" in out, out


def test_profiler_imports_no_mlx_at_module_level():
    """import-linter sees imports inside functions too; this checks what loading the core actually imports."""
    code = (
        "import sys, specscope.profiler.cli.main, specscope.profiler.session.session, specscope.profiler.analysis.stats, "
        "specscope.profiler.run.protocol, specscope.profiler.run.runner, specscope.profiler.run.suite, "
        "specscope.profiler.analysis.verdict, specscope.profiler.analysis.summary_text, specscope.profiler.renderers; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('mlx', 'mlx_lm', 'PySide6', 'pyqtgraph')]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("group, names", [("specscope.renderers", {"json", "csv", "trace.json", "html", "htm", "pdf"}),
                                          ("specscope.commands", {"gui", "bench-gui"})])
def test_plugins_are_registered(group, names):
    from specscope.profiler.renderers.plugins import registered

    assert names <= set(registered(group))
