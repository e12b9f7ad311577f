"""The worker's event stream: one reader, one ending. The events themselves are defined once, in ``specscope.events``.

The worker writes one JSON object per line. The CLI (``runner``) and the app (``gui.worker``)
both read it with :class:`EventReader`, fold it with ``Session.apply``, autosave on the same
events, give a stopping worker the same grace period, and decide how a run ended with the same
:func:`finish_run`.
"""

from __future__ import annotations

import json
from typing import Iterator, cast

from specscope.events import EVENT_TYPES, Event, required_fields

SCHEMA = EVENT_TYPES  # kind -> its record (``specscope.events``)

# Save points: the events after which the reader writes the session to disk while the worker waits for it. Writing
# a session (100-250 ms of one core's work on the demo) beside a measured pass slowed that pass: a process as busy
# as a save, running beside the worker on a 2-core machine, made its speculative rounds 29-35% and its plain steps
# 50-60% slower, and the 113 saves of a demo run covered 7% of it, the first of a case's passes more often than its
# component calls. So a reader saves between measurements, never beside one: at a save point a worker started with
# SAVE_ACK_ENV set waits (at most SAVE_ACK_TIMEOUT_S) until the reader writes SAVED to its stdin. What came since
# the last save point (a pass's rounds, components, a breakdown) is in the reader's memory, so only a reader killed
# outright loses it: at most one case.
# run_started too: the file says "running" (and what is measured) from the start, whatever the measurement
SAVE_POINTS = frozenset({"run_started", "case_done", "sweep_visit_done", "preflight", "context", "roofline", "tune"})
# Saved at once as well (the worker stops after them: nothing to wait for).
AUTOSAVE_EVENTS = SAVE_POINTS | {"run_done", "error"}
# Past this long with no save point (a long measurement, a long-context case), a reader saves anyway.
AUTOSAVE_SECONDS = 30.0
SAVE_ACK_ENV = "SPECSCOPE_SAVE_ACK"  # "1": the reader acknowledges every save point on the worker's stdin
SAVE_ACK_TIMEOUT_S = 10.0
SAVED = "saved"
# How long a worker asked to stop (SIGINT) may take to end its run before it is killed.
STOP_GRACE_SECONDS = 10.0


def parse(line: str | bytes) -> Event | None:
    """One event from one line, or None for anything that is not a well-formed event (never raises)."""
    if isinstance(line, bytes):
        line = line.decode("utf-8", "replace")
    line = line.strip()
    if not line:
        return None
    try:
        ev = json.loads(line)
    except json.JSONDecodeError:
        return None
    if not isinstance(ev, dict) or ev.get("event") not in SCHEMA:
        return None
    if any(k not in ev for k in required_fields(ev["event"])):
        return None
    return cast(Event, ev)  # its kind's required fields are there; the types are the emitter's (checked by mypy)


class EventReader:
    """Splits a byte or text stream into events; keeps a partial last line until it is complete."""

    def __init__(self):
        self._buf = b""

    def feed(self, chunk: str | bytes) -> Iterator[Event]:
        if isinstance(chunk, str):
            chunk = chunk.encode("utf-8")
        self._buf += chunk
        *lines, self._buf = self._buf.split(b"\n")
        for line in lines:
            ev = parse(line)
            if ev is not None:
                yield ev

    def close(self) -> Iterator[Event]:
        """The last line, if the stream ended without a newline."""
        rest, self._buf = self._buf, b""
        ev = parse(rest)
        if ev is not None:
            yield ev


def finish_run(session, exit_description: str | None, stopped_by_user: bool, stderr_tail: str = "") -> None:
    """Settle the session's status once the worker has ended, the same way in the CLI and the app.

    ``exit_description`` is None for a clean exit, else how the process ended ("exit code 3",
    "killed by SIGKILL", or a start failure).
    """
    st = session.status
    errors = session.data["errors"]
    if stopped_by_user and st != "failed":
        session.data["status"] = "incomplete"
        if "stopped by the user" not in errors:
            errors.append("stopped by the user")
    elif st in ("running", "empty"):
        # a process that exited by itself may have said why on stderr; a killed one said nothing useful
        said = (exit_description or "").startswith("exit code")
        tail = next((ln for ln in reversed(stderr_tail.strip().splitlines()) if ln.strip()), "") if said else ""
        reason = f"the worker ended unexpectedly ({exit_description or 'no result'})" + (f": {tail}" if tail else "")
        session.mark_incomplete(reason)
    elif st == "incomplete" and not errors:
        errors.append("the worker was asked to stop (SIGINT/SIGTERM from outside specscope)")
