"""``specscope bench WHAT -o FILE``: the benchmark's session kept (``bench all``: one session, every benchmark's
result in run order, ``SessionData.benchmarks``), which the app opens on its Checks page.

The file is written before anything is measured (a path that exists without ``--force``, or one that cannot be
written, is refused first), rewritten atomically after each benchmark, and once more at the end: complete; stopped
(Ctrl+C, SIGTERM) incomplete, "stopped by the user", with what was measured before the stop; failed with the error.
The session is folded from the events a worker sends (``Session.apply``): ``run_started`` (``measure`` "bench"),
one ``bench`` a benchmark, ``run_done``.
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict
from typing import TYPE_CHECKING

from specscope.errors import SpecscopeError

from specscope.profiler.cli.common import check_output_path
from specscope.profiler.session.session import Session

if TYPE_CHECKING:
    from specscope.profiler.run.bench_common import BenchConfig
    from specscope.profiler.run.bench_records import BenchResult


class KeptBench:
    """The session of one ``specscope bench`` command; without ``-o`` it keeps nothing (every method does nothing)."""

    def __init__(self, path: str | None, cfg: "BenchConfig"):
        self.path = path
        self.session = Session()
        if path is None:
            return
        from specscope.engine_adapter.engine import environment
        from specscope.profiler.run.measurement import started

        self.session.apply(started("bench", asdict(cfg), environment()))
        self._save()  # an unwritable place is refused here, before anything is measured

    def add(self, res: "BenchResult") -> None:
        """A benchmark measured: into the session, and the file rewritten (a stop later keeps it)."""
        if self.path is None:
            return
        self.session.apply({"event": "bench", "bench": dict(res)})
        self._save()

    def _save(self) -> None:
        from specscope.profiler.analysis.session_file import save_session

        assert self.path is not None
        try:
            save_session(self.session, self.path)
        except OSError as exc:
            raise SpecscopeError(f"cannot write the session to {self.path}: {exc.strerror or exc}") from None

    def end(self, exc: BaseException | None) -> None:
        """How the command ended (``exc``: the exception that ended it, None: every benchmark measured), written down;
        the caller raises ``exc`` on to ``main``."""
        if self.path is None:
            return
        s = self.session
        kind = type(exc) if exc is not None else None
        if kind is None:
            s.apply({"event": "run_done", "status": "complete", "time": time.time()})
        elif issubclass(kind, KeyboardInterrupt):  # Ctrl+C, or SIGTERM (``main`` raises it so)
            s.mark_incomplete("stopped by the user")
            s.data["finished_at"] = time.time()
        else:
            s.apply({"event": "error", "message": str(exc) or kind.__name__})
            s.data["finished_at"] = time.time()
        try:
            self._save()
        except SpecscopeError as err:
            if kind is None:
                raise
            print(f"specscope: {err}", file=sys.stderr)  # the exception that ended the command says the rest
            return
        if kind is None:
            print(f"session saved to {self.path}", file=sys.stderr)
        else:
            n = len(s.data.get("benchmarks", []))
            print(f"specscope: bench {s.status}: what was measured ({n} benchmark{'s' * (n != 1)}) is in {self.path}",
                  file=sys.stderr)


def keep_bench(a, cfg: "BenchConfig") -> KeptBench:
    """The session ``-o FILE`` asks for (refused before measuring: a file there without ``--force``, a folder, a
    folder that is not there or not writable)."""
    out = getattr(a, "output", None)
    if out:
        out = str(check_output_path(out, getattr(a, "force", False)))
    return KeptBench(out, cfg)
