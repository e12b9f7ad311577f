"""Progress on the terminal for the long commands (``run``, ``check``, ``roofline``, ``tune``, ``bench``,
``demo-model --shape``), drawn with tqdm.

tqdm rather than a hand-written bar or rich: it is already installed with mlx-lm (huggingface_hub and
transformers depend on it), it keeps one line redrawn in place with the elapsed time, the time left
(from the rate so far) and a status text, it sizes itself to the terminal and it writes nothing but the
bar. rich would add a second rendering stack for one line.

The rule every command follows (``progress_wanted``): a bar by default when stderr is a terminal,
nothing at all on stderr when it is not (piped, redirected, in a test), unless ``--progress`` asks for
it; ``--quiet`` silences it on a terminal. A command whose total is not known in advance counts its
phases, so the time left is an estimate from the phases done so far, and says so ("ETA ~").
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
import time


def add_progress_args(ap: argparse.ArgumentParser, quiet: bool = True) -> None:
    """``--progress`` (and ``--quiet``) with the same meaning on every long command."""
    if quiet:
        ap.add_argument("--quiet", action="store_true", help="no progress on the terminal")
    ap.add_argument("--progress", action="store_true", help="show progress on stderr even when it is not a terminal")


def progress_wanted(a=None, stream=None) -> bool:
    """On a terminal unless ``--quiet``; elsewhere only with ``--progress``."""
    stream = stream or sys.stderr
    if getattr(a, "progress", False):
        return True
    if getattr(a, "quiet", False):
        return False
    return _isatty(stream)


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


_FORMAT = "{desc}{percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} {unit} [{elapsed}<{remaining}]{postfix}"


class Bar:
    """One tqdm line, or nothing when disabled. ``update_to(n, status)``, ``status(text)``, ``close()``."""

    def __init__(self, desc: str, total: float | None, unit: str = "", enabled: bool = True, stream=None):
        self.enabled = enabled
        self._bar = None
        if enabled:
            from tqdm import tqdm

            stream = stream or sys.stderr
            width = _columns(stream)
            self._bar = tqdm(total=total, desc=f"{desc}: " if desc else "", unit=unit, file=stream,
                             dynamic_ncols=width is None, ncols=width, nrows=None if width is None else 24,
                             leave=True, mininterval=0.2,
                             bar_format=_FORMAT if total else "{desc}{n_fmt} {unit} [{elapsed}]{postfix}")
            # Redraw once a second so the elapsed time moves during a long phase with no update.
            self._stop = threading.Event()
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            bar = self._bar
            if bar is not None:
                bar.refresh()

    def update_to(self, n: float, status: str | None = None) -> None:
        if self._bar is None:
            return
        self._bar.n = n
        if status is not None:
            self._bar.set_postfix_str(_short(status), refresh=False)
        self._bar.refresh()

    def status(self, text: str) -> None:
        if self._bar is not None:
            self._bar.set_postfix_str(_short(text))

    def set_total(self, total: float) -> None:
        if self._bar is not None:
            self._bar.total = total
            self._bar.bar_format = _FORMAT
            self._bar.refresh()

    def write_out(self, line: str) -> None:
        """A result line on stdout; on a terminal the bar is cleared first and redrawn under it."""
        if self._bar is not None:
            self._bar.write(line, file=sys.stdout)
        else:
            print(line, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._stop.set()
            self._ticker.join()
            self._bar.close()
            self._bar = None


def _columns(stream) -> int | None:
    """None: let tqdm follow the terminal's size. A terminal that reports no size (a pty under `script`,
    some CI consoles) would get no bar at all from tqdm: draw 100 columns there."""
    import os

    try:
        return None if os.get_terminal_size(stream.fileno()).columns > 0 else 100
    except (AttributeError, OSError, ValueError):
        return 100


def _short(text: str, width: int = 60) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


@contextlib.contextmanager
def progress_bar(desc: str, total: float | None = None, unit: str = "", enabled: bool = True, stream=None):
    bar = Bar(desc, total, unit, enabled, stream)
    try:
        yield bar
    finally:
        bar.close()


class PhaseProgress:
    """For commands that report named phases (``status`` lines): each message advances the count.

    ``expected`` is how many phases the command will report (an estimate is fine: the bar's total grows
    when the count passes it). The time left is the mean time per phase so far × the phases left.
    """

    def __init__(self, desc: str, expected: int, enabled: bool = True, stream=None):
        self.bar = Bar(desc, expected, "steps", enabled, stream)
        self.expected = expected
        self.done = 0

    def __call__(self, message: str) -> None:
        if self.done >= self.expected:
            self.expected = self.done + 1
            self.bar.set_total(self.expected)
        self.bar.update_to(self.done, message)
        self.done += 1

    def close(self) -> None:
        if self.bar.enabled:
            self.bar.update_to(self.expected, "done")
        self.bar.close()


class Progress:
    """``specscope run``: tokens decoded out of the run's total (plain + speculative passes, every case and
    repeat). Warm-up, breakdown and component timing are not counted, but show as the status."""

    def __init__(self, enabled: bool = True, stream=None):
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self.total_tokens = 0
        self.done_tokens = 0
        self.status = "starting the worker, loading the model"
        self._bar = Bar("run", None, "tokens", enabled, self.stream)
        self._bar.status(self.status)

    def update(self, ev: dict, session) -> None:
        kind = ev.get("event")
        if kind == "run_started":
            cfg = ev["config"]
            # plain, then one speculative pass, or two when paired (end-to-end and instrumented, same drafts)
            passes = 1 + (2 if cfg.get("round_kinds") == "paired" else 1)
            self.total_tokens = passes * cfg["n_cases"] * (cfg.get("repeats") or 1) * cfg["max_tokens"]
            if cfg.get("sweep"):  # every context, every pass
                self.total_tokens *= len(cfg["sweep"]) * (cfg.get("sweep_passes") or 1)
            self._bar.set_total(self.total_tokens)
        elif kind in ("prefill", "step"):
            self.done_tokens += 1
        elif kind == "round":
            self.done_tokens += len(ev["emitted"])
        elif kind == "status":
            self.status = ev["message"]
        elif kind == "case_started":
            self.status = f"{ev['case']['id']} {ev['phase']}"
        if self.enabled:
            self._bar.update_to(min(self.done_tokens, self.total_tokens or self.done_tokens), self.status)

    def close(self) -> None:
        self._bar.close()
