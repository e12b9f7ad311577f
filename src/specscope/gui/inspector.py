"""Asynchronous ``specscope inspect --json`` for the compatibility line (the GUI never imports the engine)."""

from __future__ import annotations

import json
import sys

import shiboken6
from PySide6 import QtCore

from specscope.profiler.run.runner import worker_env

from .run_process import discard, qt_env

DEMO = "__demo__"  # the built-in demo (the tiny trained one, unless SPECSCOPE_DEMO=random)
DEMO_RANDOM = "__demo_random__"  # the random (synthetic) demo, as a session recorded with it ran
DEMOS = {DEMO: ("Built-in demo (tiny trained)", None), DEMO_RANDOM: ("Built-in demo (random)", "random")}


def demo_variant(path: str | None) -> str | None:
    """The engine's ``demo_variant`` for a model box entry that is a built-in demo."""
    return DEMOS[path][1] if path in DEMOS else None


def inspect_command(path: str) -> list[str]:
    args = ["--demo"] if path in DEMOS else [path]
    return [sys.executable, "-m", "specscope.profiler.cli", "inspect", *args, "--json"]


class Inspector(QtCore.QObject):
    """One inspect at a time; a result for a path that is no longer picked is dropped."""

    result = QtCore.Signal(str, dict)  # path, description
    failed = QtCore.Signal(str, str)   # path, message

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.current: str | None = None
        self.proc: QtCore.QProcess | None = None
        self.cache: dict[str, dict] = {}

    def inspect(self, path: str) -> None:
        self.current = path
        if path in self.cache:
            self.result.emit(path, self.cache[path])
            return
        if self.proc is not None:
            old, self.proc = self.proc, None
            discard(old)
        p = QtCore.QProcess(self)
        env = worker_env()
        if demo_variant(path) == "random":
            env["SPECSCOPE_DEMO"] = "random"
        p.setProcessEnvironment(qt_env(env))
        cmd = inspect_command(path)
        p.finished.connect(lambda code, st, p=p, path=path: self._done(p, path, code))
        self.proc = p
        # Started from the event loop, not now: the app's start picks the last model (an inspection) and then,
        # with --session, the session's model, which drops that inspection before it has cost a process (one
        # that would compete with the window's first paint on a small machine).
        QtCore.QTimer.singleShot(0, self, lambda p=p, path=path, cmd=cmd: self._start(p, path, cmd))

    def _start(self, p: QtCore.QProcess, path: str, cmd: list[str]) -> None:
        if p is not self.proc:
            return  # replaced or shut down meanwhile
        if path != self.current:  # dropped meanwhile (a session's own model is shown)
            self.proc = None
            p.deleteLater()
            return
        p.start(cmd[0], cmd[1:])

    def _done(self, p: QtCore.QProcess, path: str, code: int) -> None:
        if not shiboken6.isValid(p) or not shiboken6.isValid(self):
            # a window deleted mid-inspect: the process object, dying, kills its child and says it finished
            return
        out = bytes(p.readAllStandardOutput().data()).decode("utf-8", "replace")
        err = bytes(p.readAllStandardError().data()).decode("utf-8", "replace")
        if p is self.proc:
            self.proc = None
        p.deleteLater()
        if path != self.current:
            return  # stale: the pick changed meanwhile
        if code == 0:
            try:
                d = json.loads(out)
                self.cache[path] = d
                self.result.emit(path, d)
                return
            except json.JSONDecodeError:
                pass
        msg = next((ln for ln in reversed(err.strip().splitlines()) if ln.strip()), "inspect failed")
        self.failed.emit(path, msg.replace("specscope: error: ", ""))

    def shutdown(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.waitForFinished(1000)
            self.proc = None


def describe_line(d: dict) -> str:
    """One line for the setup panel from an inspect description."""
    parts = []
    if d.get("name"):
        parts.append(d["name"] + (f" @ {d['revision'][:7]}" if d.get("revision") else ""))
    if d.get("model_type"):
        parts.append(d["model_type"])
    if d.get("layers"):
        lay = f"{d['layers']} layers"
        if d.get("hybrid"):
            lay += f" ({d.get('linear_attention_layers', 0)} linear + {d.get('full_attention_layers', 0)} full attention)"
        parts.append(lay)
    if d.get("experts"):
        parts.append(f"{d['experts']} experts, {d.get('experts_per_token', '?')} per token")
    q = d.get("quantization") or {}
    if q.get("bits"):
        parts.append(f"{q['bits']}-bit")
    mtp = d.get("mtp") or {}
    parts.append("MTP head available" if mtp.get("available") else "no MTP head")
    mem = d.get("memory_estimate_bytes")
    if mem:
        parts.append(f"needs ≈ {mem / 2**30:.2f} GiB" if mem >= 2**30 else f"needs ≈ {mem / 2**20:.0f} MiB")
    sysmem = d.get("system_memory_bytes")
    limit = d.get("memory_limit_fraction") or 0.9
    if mem and sysmem and mem > limit * sysmem:
        parts.append(f"⚠ more than {limit:.0%} of {sysmem / 2**30:.0f} GiB memory")
    demo = d.get("demo")
    if isinstance(demo, dict) and demo.get("kind") == "shape":
        parts.append(f"random weights at {demo.get('shape')}'s released dimensions ({d.get('layers', '?')} layers): "
                     "real timings, meaningless text and acceptance")
    elif demo:
        from specscope.demo_labels import TRAINED_NOTE, demo_kind

        parts.append(TRAINED_NOTE if demo_kind(demo) == "trained" else "synthetic demo: real timings, meaningless text and acceptance")
    comp = d.get("compatibility") or {}
    if comp.get("class") == "refused":
        parts.insert(0, f"⛔ refused: {comp['reasons'][0]}")
    elif comp.get("class") == "supported with caveats":
        parts.append("⚠ supported with caveats: " + "; ".join(comp.get("reasons") or []))
    elif comp.get("class"):
        parts.append("✓ supported")
    return " · ".join(parts)
