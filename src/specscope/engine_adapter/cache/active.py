"""The recorders open in this thread: the one place where the engine keeps state in a module.

Three recorders listen to a forward (and a tree verify, ``tree_verify.TreeForward``, reshapes one) without being handed anything by it: the verify's capture for rollback
(``capture.capturing``), the tap on the trunk's hidden states (``hidden.tapping``) and the record of which experts
each router picked (``measure.verify_curve.recording_routes``). What they hook is mlx-lm's: the ``__call__`` of a
``Conv1d``, a norm, a decoder layer or an expert bank whose class we swap, and the module-level
``gated_delta_update`` we wrap. mlx-lm calls those with its own arguments, so there is no argument through which a
recorder could be passed; the hook has to find the open recorder somewhere else, and this module is where.

Each slot is a ``contextvars.ContextVar``, not a plain global: a thread (and an asyncio task) sees only the
recorders it opened itself, so two runs recording at the same time in one process never record into each other's.
``Slot.open`` sets the slot for the ``with`` block and resets it on the way out, exception or not, so a recorder
left by a failed run is never the next run's; inside one thread, a block opened inside another shadows it and
hands back to it on exit. A recorder is only ever opened around the forwards that feed it (never across a
``yield`` of a generator, which would carry it to the consumer).

Everything else a run keeps lives on objects it holds: the stored long contexts are the model's
(``context.contexts_of``), the engine's held prompt is the engine's. The other module-level names in the engine are
constants, or memo tables of the subclasses made from mlx-lm's classes (the same for every run, no run's data).
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Generic, Iterator, TypeVar

T = TypeVar("T")


class Slot(Generic[T]):
    """One kind of recorder: the one open in the current thread or task, if any."""

    def __init__(self, name: str) -> None:
        self._var: ContextVar[T | None] = ContextVar(f"specscope_{name}", default=None)

    def get(self) -> T | None:
        """The recorder open here (None: none is, and the hook does nothing)."""
        return self._var.get()

    @contextmanager
    def open(self, recorder: T) -> Iterator[T]:
        """``recorder`` is the open one for the block (and only for this thread or task), the previous one after."""
        token = self._var.set(recorder)
        try:
            yield recorder
        finally:
            self._var.reset(token)


# Typed Any: each recorder's class lives in the module that records into it, which imports this one.
CAPTURE: Slot[Any] = Slot("capture")  # capture.Capture: the verify's references for rollback
TAP: Slot[Any] = Slot("tap")          # hidden.Tap: the trunk's hidden states
ROUTES: Slot[Any] = Slot("routes")    # dict: id(expert bank) -> the indices of each of its calls
TREE: Slot[Any] = Slot("tree")        # tree_verify.TreeForward: a tree verify's masks, positions and branch states
