"""Barrier timing of a model's blocks: an ``Instrumenter`` swaps each block's class for a timed subclass
while inside ``with``, and owns everything the timed forwards need (mode, per-block times, the stack of
open spans, which blocks were entered).

Modes, set per forward with ``arm``: ``None`` (every block passes through: the whole-graph ruler),
``"time"`` (every block runs between ``mx.eval`` barriers and its exclusive time, its wall minus the timed
blocks inside it, is added to its block) and ``"skip"`` (the modules of one block return zeros that
still depend on their input: the barrier-free estimate by difference).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import mlx.core as mx
import mlx.nn as nn

from specscope.engine_adapter.clock import ms_since
from specscope.engine_adapter.model.blocks import Structure
from specscope.engine_adapter.model.block_names import BLOCK_NAMES

SkipHook = Callable[[nn.Module, str, mx.array], mx.array]


def arrays_in(obj: Any, out: list[mx.array] | None = None) -> list[mx.array]:
    """The arrays in ``obj`` (an array, or nested lists / tuples of them), in order."""
    out = [] if out is None else out
    if isinstance(obj, mx.array):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            arrays_in(o, out)
    return out


class Instrumenter:
    """Times the blocks of ``structure`` while inside ``with`` (see the module's docstring).

    ``extra_blocks`` are timed beside the compute blocks by a caller's own spans (``open_span`` /
    ``close_span``: the distributed engine's collectives). ``on_skip(module, block_name, zeros)`` may replace
    what a skipped block returns (the distributed engine: a block that holds a collective still issues it).
    """

    def __init__(self, structure: Structure, extra_blocks: tuple[str, ...] = (), on_skip: SkipHook | None = None):
        self.structure = structure
        self.extra_blocks = tuple(extra_blocks)
        self.on_skip = on_skip
        self.mode: str | None = None
        self.skip: str | None = None
        self.acc: dict[str, float] = {}
        self.stack: list[float] = []
        self.called: set[tuple[int, str]] = set()
        self._block_name: dict[int, str] = {}
        self._subclasses: dict[type, type] = {}
        self._saved: list[tuple[nn.Module, type]] = []

    def __enter__(self) -> Instrumenter:
        self._saved = []
        for b in self.structure.blocks:
            mod = b.module
            self._saved.append((mod, mod.__class__))
            self._block_name[id(mod)] = b.block_name
            mod.__class__ = self._timed(mod.__class__)
        return self

    def __exit__(self, *exc: object) -> None:
        for mod, cls in self._saved:
            mod.__class__ = cls
        self._saved, self._block_name = [], {}
        self.mode, self.skip, self.acc, self.stack, self.called = None, None, {}, [], set()

    def arm(self, mode: str | None, skip: str | None = None) -> None:
        """Set the mode of the next forward (``skip``: the block skipped) and zero its per-block times."""
        self.mode, self.skip = mode, skip
        self.acc = {c: 0.0 for c in [*BLOCK_NAMES, *self.extra_blocks]}
        self.stack = []

    def uncalled(self) -> list[str]:
        """Blocks (and tied-head roles) that a timed forward never entered."""
        called = self.called
        out = [f"{b.path} ({b.block_name})" for b in self.structure.blocks if (id(b.module), b.block_name) not in called]
        out += [f"{b.path} ({r})" for b in self.structure.blocks for r in b.roles if (id(b.module), r) not in called]
        return out

    # -- spans: exclusive time, nested ----------------------------------------------------------------------

    def open_span(self) -> None:
        """Start a timed section (call right before reading the clock)."""
        self.stack.append(0.0)

    def close_span(self, block_name: str, ms: float) -> None:
        """End the innermost section, ``ms`` long: its time minus the sections inside it goes to ``block_name``
        and its whole time is taken out of the enclosing section's."""
        inner = self.stack.pop()
        self.acc[block_name] = self.acc.get(block_name, 0.0) + ms - inner
        if self.stack:
            self.stack[-1] += ms

    def _time(self, module: nn.Module, block: str, fn: Callable[[], Any], args: tuple) -> Any:
        """Run ``fn`` between barriers; add its exclusive time (minus timed blocks inside it) to ``block``."""
        mx.eval(arrays_in(args))
        self.open_span()
        t0 = time.perf_counter()
        out = fn()
        mx.eval(arrays_in(out))
        ms = ms_since(t0)
        self.close_span(block, ms)
        self.called.add((id(module), block))
        return out

    def _skip_output(self, module: nn.Module, block: str, args: tuple) -> mx.array:
        """What a skipped block returns: zeros that still depend on its input.

        The dependence matters: MLX evaluates lazily, so an output that ignored
        its input would also skip everything upstream of it. The input is the first
        array passed, positionally or by keyword (Falcon-H1, PLaMo 2 name it).
        """
        x = arrays_in(args)[0]
        if block == "output_head":
            rows = module.weight.shape[0]
            out = mx.broadcast_to(x[..., :1] * 0, (*x.shape[:-1], rows))
        else:
            out = x * 0
        return self.on_skip(module, block, out) if self.on_skip is not None else out

    def _timed(self, cls: type) -> type:
        """The timed subclass of ``cls`` (one per class), reading this instrumenter's mode."""
        if cls in self._subclasses:
            return self._subclasses[cls]
        inst = self
        tied_head = getattr(cls, "as_linear", None)

        def __call__(mod, *args, **kwargs):
            block = inst._block_name[id(mod)]  # every instance of this subclass is a block
            mode = inst.mode
            if mode == "skip" and inst.skip == block:
                return inst._skip_output(mod, block, (*args, *kwargs.values()))
            if mode != "time":
                return cls.__call__(mod, *args, **kwargs)
            # inputs passed by keyword are evaluated before the clock starts too
            return inst._time(mod, block, lambda: cls.__call__(mod, *args, **kwargs), (*args, *kwargs.values()))

        attrs: dict[str, Any] = {"__call__": __call__}
        if tied_head is not None:
            head = tied_head

            def as_linear(mod, x):  # tied output head
                mode = inst.mode
                if mode == "skip" and inst.skip == "output_head":
                    return mx.broadcast_to(x[..., :1] * 0, (*x.shape[:-1], mod.weight.shape[0]))
                if mode != "time":
                    return head(mod, x)
                return inst._time(mod, "output_head", lambda: head(mod, x), (x,))

            attrs["as_linear"] = as_linear
        sub = type(f"Timed{cls.__name__}", (cls,), attrs)
        self._subclasses[cls] = sub
        return sub
