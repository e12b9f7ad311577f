"""The setup panel's model line: the picked model's description (``inspect``), measured in the worker as the Run
button's run is (``one_shot.OneShot``; the GUI never imports the engine)."""

from __future__ import annotations

from PySide6 import QtCore

from specscope.profiler.run.query_configs import InspectConfig

from .one_shot import OneShot

DEMO = "__demo__"  # the built-in demo (the tiny trained one, unless SPECSCOPE_DEMO=random)
DEMO_RANDOM = "__demo_random__"  # the random (synthetic) demo, as a session recorded with it ran
DEMOS = {DEMO: ("Built-in demo (tiny trained)", None), DEMO_RANDOM: ("Built-in demo (random)", "random")}


def demo_variant(path: str | None) -> str | None:
    """The engine's ``demo_variant`` for a model box entry that is a built-in demo."""
    return DEMOS[path][1] if path in DEMOS else None


def inspect_config(path: str) -> InspectConfig:
    """What the worker inspects for a model box entry (a folder, a cached repo id, a built-in demo)."""
    if path in DEMOS:
        return InspectConfig(demo=True, demo_variant=demo_variant(path))
    return InspectConfig(model=path)


class Inspector(QtCore.QObject):
    """One inspect at a time; a result for a path that is no longer picked is dropped."""

    result = QtCore.Signal(str, dict)  # path, description
    failed = QtCore.Signal(str, str)   # path, message

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.current: str | None = None
        self.query: OneShot | None = None
        self.cache: dict[str, dict] = {}

    @property
    def proc(self) -> QtCore.QProcess | None:
        """The worker of the inspection under way (None: none is)."""
        return self.query.proc if self.query is not None else None

    def inspect(self, path: str) -> None:
        self.current = path
        if path in self.cache:
            self.result.emit(path, self.cache[path])
            return
        self._drop()
        q = OneShot(inspect_config(path), self)
        q.answered.connect(lambda ev, q=q, path=path: self._done(q, path, ev["inspect"], None))
        q.failed.connect(lambda msg, q=q, path=path: self._done(q, path, None, msg))
        self.query = q
        # Started from the event loop, not now: the app's start picks the last model (an inspection) and then,
        # with --session, the session's model, which drops that inspection before it has cost a process (one
        # that would compete with the window's first paint on a small machine).
        QtCore.QTimer.singleShot(0, self, lambda q=q, path=path: self._start(q, path))

    def _start(self, q: OneShot, path: str) -> None:
        if q is not self.query:
            return  # replaced or shut down meanwhile
        if path != self.current:  # dropped meanwhile (a session's own model is shown)
            self._drop()
            return
        q.start()

    def _done(self, q: OneShot, path: str, description: dict | None, message: str | None) -> None:
        if q is self.query:
            self.query = None
        q.deleteLater()
        if path != self.current:
            return  # stale: the pick changed meanwhile
        if description is not None:
            self.cache[path] = description
            self.result.emit(path, description)
        else:
            self.failed.emit(path, message or "inspect failed")

    def _drop(self) -> None:
        if self.query is not None:
            old, self.query = self.query, None
            old.cancel()

    def shutdown(self) -> None:
        self._drop()


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
