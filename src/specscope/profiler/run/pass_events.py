"""A pass's events, held and handed on together (``PassEvents``): the measurement protocol's (``protocol``) way of
keeping the consumer's work out of the rounds it times."""

from __future__ import annotations

import time

from specscope.events import Emit, Event

# A pass's step and round events are held and handed on together at most this often (and at the pass's end): the
# consumer's work between two rounds (an event encoded, written, read and folded on the other side) slows the round
# after it. Emitted per round, a worker-like consumer made the demo's end-to-end rounds 1.9% slower (1.6-3.7%, 18
# cases, in process), which the components, timed back to back, never pay.
PASS_FLUSH_S = 0.5


class PassEvents:
    """A pass's events, held and emitted in order, at most every ``interval_s`` and at ``flush()``: one pause of the
    decoding loop for the consumer instead of one per step."""

    def __init__(self, emit: Emit, interval_s: float | None = None):
        self.emit, self.interval_s = emit, PASS_FLUSH_S if interval_s is None else interval_s
        self.held: list[Event] = []
        self.since = time.monotonic()

    def __call__(self, ev: Event) -> None:
        self.held.append(ev)
        if time.monotonic() - self.since >= self.interval_s:
            self.flush()

    def flush(self) -> None:
        held, self.held = self.held, []
        for ev in held:
            self.emit(ev)
        self.since = time.monotonic()
