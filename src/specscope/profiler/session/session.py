"""The Session: everything one profiling run measured, folded from worker events; reading and writing it.

A plain, JSON-serialisable object. The CLI and the GUI build it the same way
(``Session.apply(event)`` for each worker event); every chart and report reads
only a Session. It is data: the figures derived from it (``summary``, per-case statistics) are computed by
``profiler.analysis.summary`` and written beside the data by ``profiler.analysis.session_file``, always recomputed from the raw
measurements, never trusted from a file. The only rule applied while folding is the divergence verdict
(``profiler.session.divergence``): an engine fault fails the session.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any, Callable, Mapping, cast

from specscope.events import Event
from specscope.profiler.session.measured import (Cooldown, SensorReading,
                                                 ThermalRecord)
from specscope.profiler.session.bench_record import BenchResult
from specscope.profiler.session.file_io import atomic_write, finite_json
from specscope.profiler.session.schema import SCHEMA, SCHEMA_VERSION, SessionError, migrate_names, validate
from specscope.profiler.session.components_fold import fold_components
from specscope.profiler.session.tool_fold import FOLDS as TOOL_FOLDS
from specscope.profiler.session.divergence import ENGINE_FAULT, case_divergence, divergence_message
from specscope.profiler.session.records import (CONTEXT_FACTS, COOLDOWN_FIELDS, DIVERGENCE_FIELDS, PROBE_FIELDS, ROUND_FIELDS, SWEEP_FIELDS,
                                                Case, ContextFacts, Divergence, PlainSide, Preflight, ProbeReading, Round,
                                                SessionData, SpecSide, Sweep, SweepPoint)

# the events a sweep folds into the session of the context being visited (between sweep_visit and sweep_visit_done)
SWEEP_ROUTED = ("case_started", "prefill", "step", "round", "repeat_done", "breakdown", "components", "trace",
                "divergence", "case_done", "probe", "memory")


def _new_case(info: dict) -> Case:
    return {
        "id": info["id"],
        "content_class": info.get("content_class", info.get("category", "")),
        "prompt": info.get("prompt", ""),
        "prompt_tokens": list(info.get("prompt_tokens", [])),
        "plain": {"tokens": [], "prefill_ms": None, "step_ms": [], "repeats_tok_s": []},
        "spec": {"tokens": [], "prefill_ms": None, "rounds": [], "repeats_tok_s": []},
        "breakdown": None,
        "discarded": bool(info.get("discarded")),
        "plain_text": "",
        "spec_text": "",
        "complete": False,
    }


def _fold_run_started(data: SessionData, index: dict[str, Case], ev: Event) -> None:
    """Every measurement starts so (``events.RunStartedEvent``): what it measures, its configuration, where."""
    assert ev["event"] == "run_started"
    data["status"] = "running"
    data["measure"] = measure = ev.get("measure", "run")
    if measure in ("run", "sweep"):
        data["config"] = ev.get("config", {})
    else:  # ``config`` stays a run's (what every reader of a session's config expects); the measurement's beside it
        data["config"], data["measurement"] = {}, ev.get("config", {})
    data["environment"] = ev.get("environment", {})
    data["model"] = ev.get("model", {})
    data["started_at"] = ev.get("time")


def _keep_result(data: SessionData, index: dict[str, Case], ev: Event) -> None:
    """A measurement's result, kept whole under its event's name (a partial one replaced by the next): the verify
    cost curve (``roofline``, beside a run or on its own), ``tune``, a memory reading."""
    kind = ev["event"]  # roofline | tune | memory_peak: the event's field and the session's key alike
    cast(dict, data)[kind] = cast(dict, ev)[kind]


def _keep_model(data: SessionData, index: dict[str, Case], ev: Event) -> None:
    """``inspect``'s description is the record a run's ``run_started`` brings as ``model`` (``Engine.describe``)."""
    assert ev["event"] == "inspect"
    data["model"] = ev["inspect"]


def _fold_bench(data: SessionData, index: dict[str, Case], ev: Event) -> None:
    """A benchmark's result: appended to ``benchmarks`` (a ``bench all`` session keeps each, in run order) and kept
    as ``bench`` too, the latest, as a one-benchmark session (and every reader before the list) has it."""
    assert ev["event"] == "bench"
    res = cast(BenchResult, ev["bench"])
    data["bench"] = res
    data.setdefault("benchmarks", []).append(res)


# event -> its fold, for the events that are not a run's cases (kept off ``Session.apply``'s chain); ``bench_pair``
# is progress only
FOLDS: dict[str, Callable[[SessionData, dict[str, Case], Any], None]] = {
    "run_started": _fold_run_started, "roofline": _keep_result, "tune": _keep_result, "bench": _fold_bench,
    "memory_peak": _keep_result, "bench_pair": lambda data, index, ev: None, "inspect": _keep_model, **TOOL_FOLDS}


class Session:
    def __init__(self, data: SessionData | None = None):
        self.data: SessionData = data or {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "status": "empty",  # empty | running | complete | incomplete | failed
            "config": {},
            "environment": {},
            "model": {},
            "cases": [],
            "errors": [],
        }
        self._index = {c["id"]: c for c in self.data["cases"]}
        self._repeat: dict[tuple[str, str], int] = {}  # (case, side) -> the repeat being measured
        self._subs: dict[int, "Session"] = {}  # a sweep's point sessions, by context
        self._visit: "Session | None" = None   # the point being visited (its events are folded there)

    # -- a sweep's points ----------------------------------------------------
    def _point(self, n: int) -> SweepPoint:
        sw = self.data["sweep"]
        for p in sw.get("points", []):
            if p["context"] == n:
                return p
        point: SweepPoint = {
            "context": n, "prefill": None, "visits": 0, "reuses": 0, "complete": False,
            "session": {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "status": "running",
                        "config": {**self.data.get("config", {}), "context": n}, "environment": self.data.get("environment", {}),
                        "model": self.data.get("model", {}), "cases": [], "errors": []}}
        sw.setdefault("points", []).append(point)
        return point

    def point_session(self, n: int) -> "Session":
        if n not in self._subs:
            self._subs[n] = Session(self._point(n)["session"])
        return self._subs[n]

    def _apply_sweep(self, kind: str, ev: Event) -> bool:
        """A sweep's own events, and the events of a visit routed to its point; True when handled."""
        if ev["event"] == "sweep_started":
            self.data["sweep"] = cast(Sweep, {k: ev.get(k) for k in SWEEP_FIELDS})
            self.data["sweep"]["points"] = []
            for n in ev.get("contexts") or []:
                self._point(n)
            return True
        if ev["event"] == "context":
            facts = cast(ContextFacts, {k: ev.get(k) for k in CONTEXT_FACTS})  # the fields are the record's
            if "sweep" in self.data:
                p = self._point(ev.get("context", 0))
                if ev.get("reused"):
                    p["reuses"] += 1
                else:
                    p["prefill"] = facts
            else:
                self.data["context"] = facts
            return True
        if ev["event"] == "sweep_visit" and "sweep" in self.data:
            self._visit = self.point_session(ev.get("context", 0))
            return True
        if ev["event"] == "sweep_visit_done" and "sweep" in self.data:
            p = self._point(ev.get("context", 0))
            p["visits"] += 1
            if ev.get("last") and ev.get("status") == "complete":
                p["complete"] = True
                p["session"]["status"] = "complete"
            self._visit = None
            return True
        if self._visit is not None and kind in SWEEP_ROUTED:
            n_err = len(self._visit.data["errors"])
            self._visit.apply(ev)
            if len(self._visit.data["errors"]) > n_err:  # an engine fault at one context fails the sweep
                self.data["errors"] += self._visit.data["errors"][n_err:]
                self.data["status"] = "failed"
            if ev["event"] == "probe":  # drift is judged over the whole sweep too
                return False
            return True
        return False

    # -- folding events ----------------------------------------------------
    def apply(self, ev: Event) -> None:
        kind = ev["event"]
        if kind in ("sweep_started", "context", "sweep_visit", "sweep_visit_done") or self._visit is not None:
            if self._apply_sweep(kind, ev):
                return
        fold = FOLDS.get(kind)  # the events besides a run's cases: each its own small fold
        if fold is not None:
            return fold(self.data, self._index, ev)
        if kind in ("prefill", "step", "round", "repeat_done", "breakdown", "components") and ev.get("case") not in self._index:
            # a measurement for a case whose start never arrived (a malformed line was dropped): keep count, never crash
            self.data["dropped_events"] = self.data.get("dropped_events", 0) + 1
            return
        if ev["event"] == "case_started":
            if ev["case"]["id"] not in self._index:
                case = _new_case(ev["case"])
                self.data["cases"].append(case)
                self._index[case["id"]] = case
            c = self._index[ev["case"]["id"]]
            if ev.get("discarded"):  # --discard-first: measured and kept, left out of the summary
                c["discarded"] = True
            phase = ev.get("phase")
            if phase == "plain" or phase == "spec":
                # Every repeat is kept: its steps or rounds are appended (rounds carry their repeat), and
                # where each repeat starts is written down; tokens are the latest repeat's output.
                r = int(ev.get("repeat") or 0)
                self._repeat[(c["id"], phase)] = r
                record = side_of(c, phase)
                items = len(c["plain"]["step_ms"] if phase == "plain" else c["spec"]["rounds"])
                record["tokens"], record["prefill_ms"] = [], None
                record.setdefault("repeat_starts", []).append([r, items])
        elif ev["event"] == "prefill":
            record = side_of(self._index[ev["case"]], ev["mode"])
            record["prefill_ms"] = ev["ms"]
            record["tokens"] = [ev["token"]]
        elif ev["event"] == "step":
            plain = self._index[ev["case"]]["plain"]
            plain["tokens"].append(ev["token"])
            plain["step_ms"].append(ev["ms"])
        elif ev["event"] == "round":
            spec = self._index[ev["case"]]["spec"]
            rnd = cast(Round, {k: v for k, v in ev.items() if k in ROUND_FIELDS})  # the event's RoundCore
            if "kind" in ev:  # absent in sessions from before end-to-end rounds: those are all instrumented
                rnd["kind"] = ev["kind"]
            if ev.get("pass"):  # a paired run: "measured" (end-to-end) or "ledger" (instrumented) pass
                rnd["pass"] = ev["pass"]
            r = self._repeat.get((ev["case"], "spec"), 0)
            if r:  # repeat 0 is written as no key (as every round of an older session reads)
                rnd["repeat"] = r
            spec["rounds"].append(rnd)
            if ev.get("pass") != "ledger":  # the output is the measured pass's; the ledger pass repeats it
                spec["tokens"].extend(ev["emitted"])
        elif ev["event"] == "repeat_done":
            c = self._index[ev["case"]]
            side_of(c, ev["mode"])["repeats_tok_s"].append(ev["tok_s"])
            instrumented = ev.get("instrumented_tok_s")
            if instrumented is not None and ev["mode"] == "spec":
                c["spec"].setdefault("repeats_instrumented_tok_s", []).append(instrumented)
        elif ev["event"] == "breakdown":
            self._index[ev["case"]]["breakdown"] = ev["breakdown"]
        elif ev["event"] == "components":  # the prediction's inputs timed apart (engine_adapter.measure.components)
            case = self._index[ev["case"]]
            case["components"] = fold_components(case.get("components"), ev["components"], ev.get("when"), ev.get("repeat"))
        elif ev["event"] == "divergence":
            # Greedy speculative output left plain decoding: a near-tie is kernel rounding, a clear margin
            # is an engine fault, and an engine fault fails the session, loudly.
            diverged = self._index.get(ev.get("case", ""))
            if diverged is not None:
                diverged["divergence"] = cast(Divergence, {k: v for k, v in ev.items() if k in DIVERGENCE_FIELDS})
                d = case_divergence(diverged)
                assert d is not None  # the case has its divergence record now
                if d["verdict"] == ENGINE_FAULT:
                    self.data["errors"].append(divergence_message(diverged["id"], d))
                    self.data["status"] = "failed"
        elif ev["event"] == "case_done":
            c = self._index[ev["case"]]
            c["complete"] = True
            c["plain_text"] = ev.get("plain_text", "")
            c["spec_text"] = ev.get("spec_text", "")
            c["plain_pieces"] = ev.get("plain_pieces")
            c["spec_pieces"] = ev.get("spec_pieces")
        elif ev["event"] == "run_done":
            # An engine fault or an error already failed the run; a later "complete" does not undo that.
            self.data["status"] = "failed" if self.data["status"] == "failed" else ev.get("status", "complete")
            self.data["finished_at"] = ev.get("time")
        elif ev["event"] == "error":
            self.data["errors"].append(ev.get("message", "unknown error"))
            if ev.get("kind") == "internal":  # a specscope bug, not something the user can fix: keep it marked
                self.data.setdefault("internal_errors", []).append(ev.get("message", "unknown error"))
            self.data["status"] = "failed"
        elif ev["event"] == "probe":
            self.data.setdefault("probe", []).append(
                cast(ProbeReading, {k: v for k, v in ev.items() if k in PROBE_FIELDS}))
        elif ev["event"] == "cooldown":
            self.data.setdefault("cooldowns", []).append(
                cast(Cooldown, {k: v for k, v in ev.items() if k in COOLDOWN_FIELDS}))
        elif ev["event"] == "sensors":
            self.data.setdefault("sensors", []).append(cast(SensorReading, {k: v for k, v in ev.items() if k != "event"}))
        elif ev["event"] == "thermal":
            self.data.setdefault("thermal", []).append(cast(ThermalRecord, {k: v for k, v in ev.items() if k != "event"}))
        elif ev["event"] == "preflight":  # the machine before the run (engine_adapter.preflight), kept whole
            self.data["preflight"] = cast(Preflight, ev.get("preflight") or {})
        elif ev["event"] == "memory":
            self.data.setdefault("environment", {})["peak_memory_bytes"] = ev.get("peak_bytes")

    def mark_incomplete(self, reason: str) -> None:
        if self.data["status"] in ("running", "empty"):
            self.data["status"] = "incomplete"
        self.data["errors"].append(reason)

    # -- accessors -----------------------------------------------------------
    @property
    def cases(self) -> list[Case]:
        return self.data["cases"]

    @property
    def config(self) -> dict[str, Any]:  # dict: the run's RunConfig.to_dict and engine facts (SessionData.config)
        return self.data["config"]

    @property
    def status(self) -> str:
        return self.data["status"]

    @property
    def k(self) -> int:
        return int(self.config.get("num_draft_tokens", 1))

    @property
    def regime(self) -> str:
        return self.config.get("sampling", {}).get("regime", "greedy")

    @property
    def what_if(self) -> bool:
        return bool(self.config.get("drafter", {}).get("what_if"))

    # -- (de)serialisation -----------------------------------------------------
    def to_dict(self) -> SessionData:
        """The data (a copy); ``session_file.session_dict`` adds the derived figures."""
        return copy.deepcopy(self.data)

    def to_json(self, figures: Mapping[str, Any] | None = None, compact: bool = False) -> str:
        """The session file's text: the data, and ``figures`` (``session_file.figures``) beside it. ``compact``
        (one line, ~4x faster to write: the app's autosaves during a run) or indented for reading; the same JSON
        either way (NaN/inf as null)."""
        out = {**self.data, **(figures or {})}  # no copy: dumping reads the data, never changes it
        if compact:
            try:
                return json.dumps(out, ensure_ascii=False, allow_nan=False)
            except ValueError:  # a NaN or inf somewhere: the slower walk that writes them as null
                pass
        return json.dumps(finite_json(out), ensure_ascii=False, indent=None if compact else 1, sort_keys=False)

    @classmethod
    def from_dict(cls, d: dict) -> "Session":
        validate(d)
        d = {k: v for k, v in copy.deepcopy(d).items() if k not in ("summary", "case_stats", "sweep_figures")}
        return cls(cast(SessionData, migrate_names(d)))  # validated above

    def save(self, path: str | os.PathLike, figures: Mapping[str, Any] | None = None, compact: bool = False) -> None:
        atomic_write(path, self.to_json(figures, compact=compact))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Session":
        p = Path(path)
        try:
            raw = p.read_bytes()
        except OSError as exc:
            raise SessionError(f"cannot read session {p}: {exc.strerror or exc}") from None
        try:
            d = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise SessionError(f"{p} is not a session file (not UTF-8 text)") from None
        except json.JSONDecodeError as exc:
            raise SessionError(f"{p} is not a complete session file (invalid JSON at line {exc.lineno}: {exc.msg})") from None
        return cls.from_dict(d)

    def __eq__(self, other) -> bool:
        return isinstance(other, Session) and self.data == other.data


def side_of(case: Case, mode: str) -> PlainSide | SpecSide:
    """A case's plain or speculative side, by the name an event gives it ("plain" or "spec")."""
    if mode == "plain":
        return case["plain"]
    if mode == "spec":
        return case["spec"]
    raise KeyError(mode)


