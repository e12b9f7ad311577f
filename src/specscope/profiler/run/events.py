"""The worker's event stream, written down once: one record per event kind, one reader, one ending.

The worker writes one JSON object per line. The CLI (``runner``) and the app (``gui.worker``)
both read it with :class:`EventReader`, fold it with ``Session.apply``, autosave on the same
events, give a stopping worker the same grace period, and decide how a run ended with the same
:func:`finish_run`.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, dataclass, fields
from typing import Iterator

# -- the schema: required fields per kind (extra fields are allowed and kept) ------------------------------


@dataclass
class Status:
    message: str


@dataclass
class RunStarted:
    config: dict
    environment: dict
    model: dict
    cases: list


@dataclass
class CaseStarted:
    case: dict
    index: int
    phase: str


@dataclass
class Prefill:
    case: str
    mode: str
    token: int
    ms: float


@dataclass
class Step:
    case: str
    i: int
    token: int
    ms: float


@dataclass
class Round:
    case: str
    drafted: list
    accepted: int
    emitted: list
    draft_ms: float
    verify_ms: float
    ms: float


@dataclass
class RepeatDone:
    case: str
    mode: str


@dataclass
class Breakdown:
    case: str
    breakdown: dict


@dataclass
class Components:
    """The prediction's inputs timed apart for one case (engine_adapter.measure.components)."""
    case: str
    components: dict


@dataclass
class Trace:
    """A case's acceptance trace A(s) along its plain output (engine_adapter.measure.acceptance_trace), with ``run --trace``."""
    case: str
    trace: dict


@dataclass
class Divergence:
    case: str


@dataclass
class CaseDone:
    case: str


@dataclass
class Memory:
    peak_bytes: int


@dataclass
class Probe:
    """A clock-probe reading (``when``: before / after a repeat, or while cooling down before a case)."""
    case: str
    when: str
    ms: float


@dataclass
class Cooldown:
    """How a --cooldown wait before a case ended (``reached``: the probe came back within 2% of its best)."""
    case: str
    waited_s: float
    reached: bool


@dataclass
class Sensors:
    """One run's sensor window (profiler.run.sensors): seconds, GPU frequency/power/temperature, joules."""
    case: str
    mode: str
    seconds: float


@dataclass
class Thermal:
    """``pmset -g therm`` before or after a case (macOS)."""
    case: str
    when: str
    text: str


@dataclass
class Preflight:
    """The pre-flight (engine_adapter.preflight), after run_started and before anything is measured."""
    preflight: dict


@dataclass
class RunDone:
    status: str


@dataclass
class Error:
    message: str
    kind: str = "input"  # "input": the user can fix it; "internal": a specscope bug (traceback on stderr)


@dataclass
class Context:
    """A long context prefilled once (or its stored cache reused), timed on its own (profiler.run.protocol.with_context)."""
    context: int
    tokens: int
    prefill_ms: float


@dataclass
class SweepStarted:
    """A context sweep (profiler.analysis.sweep): the contexts and the order they are visited in."""
    contexts: list
    order: list


@dataclass
class SweepVisit:
    """Before one visit of a context: the case events up to ``sweep_visit_done`` belong to that context."""
    context: int
    visit: int


@dataclass
class SweepVisitDone:
    context: int
    visit: int
    status: str


SCHEMA: dict[str, type] = {
    "context": Context, "sweep_started": SweepStarted, "sweep_visit": SweepVisit, "sweep_visit_done": SweepVisitDone,
    "status": Status, "run_started": RunStarted, "case_started": CaseStarted, "prefill": Prefill, "step": Step,
    "round": Round, "repeat_done": RepeatDone, "breakdown": Breakdown, "components": Components,
    "trace": Trace, "divergence": Divergence,
    "case_done": CaseDone, "memory": Memory, "run_done": RunDone, "error": Error,
    "probe": Probe, "cooldown": Cooldown, "sensors": Sensors, "thermal": Thermal, "preflight": Preflight,
}

# Events after which the session is written to disk at once (otherwise at most every AUTOSAVE_SECONDS).
AUTOSAVE_EVENTS = frozenset({"case_done", "run_done", "breakdown", "components", "trace", "divergence", "error",
                             "context", "sweep_visit_done", "preflight"})
AUTOSAVE_SECONDS = 2.0
# How long a worker asked to stop (SIGINT) may take to end its run before it is killed.
STOP_GRACE_SECONDS = 10.0


def required_fields(kind: str) -> list[str]:
    return [f.name for f in fields(SCHEMA[kind]) if f.default is MISSING and f.default_factory is MISSING]


def parse(line: str | bytes) -> dict | None:
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
    return ev


class EventReader:
    """Splits a byte or text stream into events; keeps a partial last line until it is complete."""

    def __init__(self):
        self._buf = b""

    def feed(self, chunk: str | bytes) -> Iterator[dict]:
        if isinstance(chunk, str):
            chunk = chunk.encode("utf-8")
        self._buf += chunk
        *lines, self._buf = self._buf.split(b"\n")
        for line in lines:
            ev = parse(line)
            if ev is not None:
                yield ev

    def close(self) -> Iterator[dict]:
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
