"""How ``check``, ``capture`` and ``trace`` run their measurement: in the worker (``run.measurement``), as ``run``,
``roofline`` and ``tune`` do, its events through the pump and folded into a session (``-o``/``--session`` keeps it).
The CLI's process never opens the engine."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Callable

from specscope.errors import SpecscopeError

from specscope.profiler.run.runner import run_worker

if TYPE_CHECKING:
    from specscope.events import Event, StatusEvent
    from specscope.profiler.run.measure_config import Measurement
    from specscope.profiler.session.session import Session


def run_in_worker(cfg: "Measurement", on_status: Callable[["StatusEvent"], None], out_path: str | None = None,
                  on_event: Callable[["Event", "Session"], None] | None = None) -> "Session":
    """Measure ``cfg`` in the worker; ``on_status`` sees each ``status`` event, ``on_event`` every event. Returns the
    session (complete, or incomplete: stopped, or the worker died); a failure (an input the worker refused, an
    engine error) is a ``SpecscopeError`` with the worker's message."""

    def seen(ev, session) -> None:
        if ev["event"] == "status":
            on_status(ev)
        if on_event is not None:
            on_event(ev, session)

    res = run_worker(cfg, on_event=seen, autosave=out_path)
    s = res.session
    raise_if_failed(res)
    return s


def raise_if_failed(res) -> None:
    """A worker's failure as the command's error: the worker's message (an internal one with the worker's traceback
    on stderr first, so it can be reported)."""
    s = res.session
    if s.status == "failed":
        msg = s.data["errors"][-1] if s.data["errors"] else "the worker failed"
        if s.data.get("internal_errors"):  # a specscope bug: show the worker's traceback so it can be reported
            if res.stderr.strip():
                print(res.stderr.rstrip(), file=sys.stderr)
            msg = f"internal error (a bug in specscope; the traceback is above): {msg}"
        raise SpecscopeError(msg)


def stopped_by_user(s: "Session") -> bool:
    return "stopped by the user" in s.data["errors"]


def incomplete_exit(kind: str, s: "Session", out_path: str | None = None) -> int:
    """Say why a measurement did not complete (what was measured is kept in ``out_path``); 130 when the user stopped
    it, else 1."""
    why = "; ".join(s.data["errors"][-1:]) or "no result"
    print(f"specscope: {kind} {s.status}: {why}" + (f" (what was measured is in {out_path})" if out_path else ""),
          file=sys.stderr)
    return 130 if stopped_by_user(s) else 1
