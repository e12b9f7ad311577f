"""The engine's one clock: milliseconds on ``time.perf_counter`` (monotonic, the finest the platform has).

Every time the engine reports (a decoding loop's steps and rounds, an engine's own loop, a part timed apart) is read
here, so figures from different places are on the same clock, and a test can read it beside them."""

from __future__ import annotations

import time


def now_ms() -> float:
    """Now, in ms (only differences mean anything: the origin is arbitrary)."""
    return time.perf_counter() * 1000.0


def ms_since(t0: float) -> float:
    """Milliseconds since ``t0``, a ``time.perf_counter()`` reading (seconds)."""
    return (time.perf_counter() - t0) * 1000.0
