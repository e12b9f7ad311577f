"""The app's live lines (the model line's inspect, the pre-flight line) are measured in the worker, as the Run button's
run is (gui.one_shot): the worker's command and event lines, one query at a time, a stale answer dropped, a bad pick
answered with its message, and no gui module starting a ``specscope`` command of its own."""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest
from PySide6 import QtCore

import specscope.gui
from specscope.demo_labels import TRAINED_NOTE
from specscope.gui.inspector import DEMO, DEMO_RANDOM, Inspector, describe_line
from specscope.gui.preflight_line import PreflightLine

WORKER = "specscope.profiler.run.worker"
GUI = Path(specscope.gui.__file__).parent
MODULE = re.compile(r"^specscope(\.\w+)+$")  # a module path, as ``python -m`` takes it


def _record(inspector: Inspector) -> list[tuple]:
    seen: list[tuple] = []
    inspector.result.connect(lambda path, d: seen.append(("result", path, d)))
    inspector.failed.connect(lambda path, msg: seen.append(("failed", path, msg)))
    return seen


def _running(obj) -> bool:
    p = obj.query.proc if obj.query is not None else None
    return p is not None and p.state() == QtCore.QProcess.ProcessState.Running


def test_the_model_line_is_the_workers_inspect_and_a_changed_pick_drops_the_first(qtbot):
    ins = Inspector()
    seen = _record(ins)
    ins.inspect(DEMO)
    qtbot.waitUntil(lambda: _running(ins), timeout=30000)
    assert ins.proc is not None and ins.proc.arguments()[:2] == ["-m", WORKER]  # the process the Run button starts
    ins.inspect(DEMO_RANDOM)  # the pick changes while the first is measured: its answer never arrives
    qtbot.waitUntil(lambda: bool(seen), timeout=120000)
    qtbot.wait(200)
    assert [(kind, path) for kind, path, _ in seen] == [("result", DEMO_RANDOM)], seen
    assert "synthetic demo" in describe_line(seen[0][2])  # the random variant's environment reached the worker
    ins.inspect(DEMO_RANDOM)  # known now: answered from the cache, no process
    assert ins.query is None and seen[-1][:2] == ("result", DEMO_RANDOM) and len(seen) == 2


def test_the_trained_demo_is_described(qtbot):
    ins = Inspector()
    seen = _record(ins)
    ins.inspect(DEMO)
    qtbot.waitUntil(lambda: bool(seen), timeout=120000)
    kind, _path, d = seen[0]
    assert kind == "result" and d["name"] and d["layers"] and TRAINED_NOTE in describe_line(d)
    assert ins.query is None  # done: nothing left running


def test_a_model_that_is_not_there_says_why(qtbot, tmp_path):
    ins = Inspector()
    seen = _record(ins)
    missing = str(tmp_path / "no-such-model")
    ins.inspect(missing)
    qtbot.waitUntil(lambda: bool(seen), timeout=120000)
    assert seen == [("failed", missing, f"model path does not exist: {missing}")]


def test_shutdown_ends_the_query_and_leaves_no_process(qtbot):
    ins = Inspector()
    seen = _record(ins)
    ins.inspect(DEMO)
    qtbot.waitUntil(lambda: _running(ins), timeout=30000)
    pid = ins.proc.processId()
    ins.shutdown()  # as the window's close does
    assert ins.query is None and ins.proc is None
    assert not os.path.exists(f"/proc/{pid}") or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    qtbot.wait(300)
    assert seen == []  # a dropped query says nothing


def test_a_pick_the_preflight_refuses_says_why_on_its_line(qtbot):
    line = PreflightLine()
    qtbot.addWidget(line)
    line.check(None, "draft", None)  # a draft model drafter without its draft model
    qtbot.waitUntil(lambda: line.query is None, timeout=30000)
    assert line.label.text() == "Pre-flight: not checked — --drafter draft needs --draft-model"
    assert line.report is None


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_hiding_the_line_ends_its_check(qtbot):
    line = PreflightLine()
    qtbot.addWidget(line)
    line.show()
    line.check(DEMO)
    qtbot.waitUntil(lambda: _running(line), timeout=30000)
    pid = line.query.proc.processId()
    line.hide()  # the window closes
    assert line.query is None and line.label.text() == "Pre-flight: not checked yet"
    assert not os.path.exists(f"/proc/{pid}") or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]


def _launches(path: Path) -> list[str]:
    """What a module names to run besides the worker: a specscope module path in its code (docstrings aside), a
    ``python -m specscope…`` line, or the ``specscope`` command handed to a process start."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
            s = n.value.strip()
            if (MODULE.match(s) or re.search(r"-m\s+specscope", s)) and s != WORKER and not s.endswith("-m " + WORKER):
                found.append(f"{path.name}:{n.lineno}: {s!r}")
        if isinstance(n, ast.Call) and isinstance(n.func, (ast.Attribute, ast.Name)) and n.args:
            name = n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id
            first = n.args[0]
            program = first.elts[0] if isinstance(first, (ast.List, ast.Tuple)) and first.elts else first
            if name in ("start", "startDetached", "Popen", "run", "call", "check_call", "check_output", "execute") \
                    and isinstance(program, ast.Constant) and program.value == "specscope":
                found.append(f"{path.name}:{n.lineno}: runs the specscope command")
    return found


def test_no_gui_module_runs_specscope_but_the_worker():
    found = [hit for p in sorted(GUI.rglob("*.py")) for hit in _launches(p)]
    assert found == [], "the app runs measurements in the worker (gui.run_process, gui.one_shot), nothing else: " \
                        + "; ".join(found)


def test_the_check_sees_a_cli_command_line(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text('import sys\n\ndef cmd(p):\n    """Runs ``python -m specscope.profiler.cli``."""\n'
                   '    return [sys.executable, "-m", "specscope.profiler.cli", "inspect", p, "--json"]\n'
                   'def go(proc):\n    proc.start("specscope", ["preflight", "--json"])\n')
    assert sorted(h.split(": ", 1)[1] for h in _launches(bad)) == ["'specscope.profiler.cli'", "runs the specscope command"]
