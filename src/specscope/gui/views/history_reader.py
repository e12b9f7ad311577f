"""Reading autosaved session files for the History page, off the window's thread: what a row shows of one file
(``read_entry``, Qt-free, never raises) and the one background thread that reads files in order."""

from __future__ import annotations

import os
import queue
import threading
from pathlib import Path

from specscope.profiler.session.schema import SessionError
from specscope.profiler.session.session import Session
from specscope.profiler.analysis.summary import summarize
from specscope.profiler.analysis.verdict import acceptance_phrase
from specscope.profiler.analysis.energy import energy_phrase

from ..records import HistoryEntry


def read_entry(path: str | os.PathLike) -> HistoryEntry:
    """What the History page shows of one session file (Qt-free; runs in the reader thread).

    Never raises: a file that cannot be read or is not a usable session comes back with ``error`` set.
    """
    p = Path(path)
    entry: HistoryEntry = {"path": str(p), "file": p.name, "error": None}
    try:
        st = p.stat()
        entry["mtime"] = st.st_mtime
    except OSError as exc:
        entry["mtime"] = None
        entry["error"] = f"cannot read the file: {exc.strerror or exc}"
        return entry
    try:
        s = Session.load(p)
        sm = summarize(s)
    except SessionError as exc:
        entry["error"] = str(exc).replace(str(p), p.name)
        return entry
    except Exception as exc:  # a file that passes the schema check but still breaks the statistics
        entry["error"] = f"not a usable session ({type(exc).__name__}: {exc})"
        return entry
    d = s.data
    cfg = s.config
    drafter = cfg.get("drafter") or {}
    model = d.get("model") or {}
    started = d.get("started_at")
    entry.update({
        "started": started if isinstance(started, (int, float)) else None,
        "model": model.get("name") or cfg.get("model") or "—",
        "demo": bool(model.get("demo") or cfg.get("demo")),
        "shape": (model.get("demo") or {}).get("shape") if isinstance(model.get("demo"), dict) else None,
        "drafter": (drafter.get("name") or "—") + (" (what-if)" if s.what_if else ""),
        "k": s.k,
        "regime": s.regime,
        "status": s.status,
        "cases_done": sm.get("cases_measured", 0),
        "cases_total": cfg.get("n_cases") or len(s.cases),
        "plain_tok_s": sm.get("plain_tok_s"),
        "spec_tok_s": sm.get("spec_tok_s"),
        "measured_speedup": sm.get("measured_speedup"),
        "p": sm.get("p"),
        "acceptance": acceptance_phrase(sm),
        "energy_ratio": sm["energy"]["ratio"],
        "energy": energy_phrase(sm["energy"]),
        "last_error": d["errors"][-1] if d.get("errors") else None,
    })
    return entry


class SessionReader:
    """One background thread reading session files in order; results are collected with ``drain``."""

    def __init__(self) -> None:
        self._jobs: queue.Queue = queue.Queue()
        self._done: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self.gen = 0  # jobs of an older refresh are skipped (the newer one asked for them again)

    def submit(self, gen: int, path: str) -> None:
        self._jobs.put((gen, path))
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="specscope-history", daemon=True)
            self._thread.start()

    def _run(self) -> None:  # a daemon thread that waits for work for as long as the app runs
        while True:
            gen, path = self._jobs.get()
            if gen != self.gen:
                continue
            self._done.put((gen, path, read_entry(path)))

    def drain(self) -> list:
        out = []
        while True:
            try:
                out.append(self._done.get_nowait())
            except queue.Empty:
                return out
