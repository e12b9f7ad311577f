"""``--until decided``: a run that stops once the prediction's verdict is known (``protocol.run_protocol``)."""

from __future__ import annotations

import copy
import time

from specscope.events import Emit, Event

from specscope.profiler.run.config import RunConfig


def until_decided(cfg: RunConfig, emit: Emit):
    """``--until decided``: the run's own events folded as they are emitted, and after every finished case (from the
    MIN_UNITS-th on) the prediction's verdict at the sequential level (``analysis.sequential``: each look's interval
    at 1 − 0.05 / looks); decided, the run stops there. Progress says the interval now and how much more would decide
    it. Returns the emit to measure with and ``enough()``: decided, the next case does not start."""
    from specscope.profiler.analysis.summary import summarize
    from specscope.profiler.analysis.uncertainty import MIN_UNITS
    from specscope.profiler.session.session import Session

    session = Session()
    t0 = time.monotonic()
    done = [0]  # cases finished
    decided: list[str] = []  # the verdict, once decided

    def emit_and_look(ev: Event) -> None:
        session.apply(copy.deepcopy(ev))  # its own copy: a fold may keep what an event holds, and emit passes it on
        emit(ev)
        if ev.get("event") != "case_done":
            return
        done[0] += 1
        if done[0] < MIN_UNITS:
            return
        v = summarize(session).get("prediction_verdict") or {}
        per_case = (time.monotonic() - t0) / done[0]
        more = v.get("more_cases")
        eta = f"; about {more} more cases (~{more * per_case / 60:.1f} min) would decide it" if more else ""
        n_cases = session.config.get("n_cases") or "?"
        emit({"event": "status", "message": f"until decided, after {done[0]} of {n_cases} cases: "
                                            f"{v.get('text', 'no verdict yet')}{eta if v.get('state') == 'too_little_data' else ''}"})
        if (state := v.get("state")) in ("agrees", "off"):
            decided.append(state)

    return emit_and_look, (lambda: bool(decided))
