"""A one-line progress bar with ETA on stderr for ``specscope run``."""

from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, enabled: bool = True, stream=None):
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self.total_tokens = 0
        self.done_tokens = 0
        self.status = ""
        self._last = 0.0

    def update(self, ev: dict, session) -> None:
        kind = ev.get("event")
        if kind == "run_started":
            cfg = ev["config"]
            self.total_tokens = 2 * cfg["n_cases"] * cfg["repeats"] * cfg["max_tokens"]
            self.start = time.monotonic()
        elif kind in ("prefill", "step"):
            self.done_tokens += 1
        elif kind == "round":
            self.done_tokens += len(ev["emitted"])
        elif kind == "status":
            self.status = ev["message"]
        elif kind == "case_started":
            self.status = f"{ev['case']['id']} {ev['phase']}"
        self._draw(kind in ("run_done", "case_done"))

    def _draw(self, force: bool) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < 0.1:
            return
        self._last = now
        frac = self.done_tokens / self.total_tokens if self.total_tokens else 0.0
        width = 28
        bar = "█" * int(frac * width) + "·" * (width - int(frac * width))
        elapsed = now - self.start
        eta = f"ETA {elapsed * (1 - frac) / frac:4.0f}s" if frac > 0.02 else "ETA   ?"
        self.stream.write(f"\r{bar} {frac * 100:5.1f}%  {eta}  {self.status[:40]:<40}")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
