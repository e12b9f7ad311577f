"""The measurement protocol: what runs, in what order, and which events it emits.

For each case, its repeats run plain (A) and speculative (B) in ABBA order: AB in
repeat 0, BA in repeat 1, AB in repeat 2, … so a slow drift (heat, a neighbour's
load) hits both modes alike. Every repeat is recorded. After the first plain run a
breakdown of one decode step and one verify forward is measured. A clock probe (a
fixed compute-bound kernel on the model's device) is read before and after every
repeat; ``cooldown`` waits before each case until it is back within 2% of its best.
A pre-flight (``engine_adapter.preflight``) reads the machine before the weights load and is emitted
after ``run_started``; a failed one stops the run before anything is measured unless
``ignore_preflight``. Sensors (where the machine has them, see ``profiler.run.sensors``) record each run's GPU
frequency, power, temperature and energy, and on macOS ``pmset -g therm`` before
and after each case. The first ``discard_first`` cases are marked: measured and
kept, but left out of the summary. Warm-up runs come first and are not recorded.
Events are plain dicts handed to ``emit``; the worker process writes them as JSON lines.

Nothing here imports MLX: the engine (``engine_adapter.engine.Engine``) is opened
once when a run starts, inside the worker process, and called once per phase.
"""

from __future__ import annotations

import time
from typing import cast

from specscope.errors import SpecscopeError
from specscope.events import Emit, Mode, PassName, Preflight, PrefillRecord, PrefilledContext, RoundRecord, StepRecord

from specscope.profiler.run import sensors as _sensors
from specscope.profiler.run.config import RunConfig
from specscope.profiler.run.pass_events import PASS_FLUSH_S, PassEvents
from specscope.profiler.run.records import ContextCheck
from specscope.profiler.run.until_decided import until_decided
from specscope.profiler.analysis.sequential import UNTIL_DECIDED_CASES
from specscope.profiler.analysis.stats import tok_s

COOLDOWN_TOLERANCE = 0.02  # --cooldown: the probe must be back within 2% of its best reading
COOLDOWN_POLL_S = 2.0      # between two probe readings while cooling down
MEASURED: PassName = "measured"  # the two passes of a paired speculative phase
LEDGER: PassName = "ledger"


def abba(repeat: int) -> tuple[Mode, Mode]:
    """The order of the two modes in a case's repeat: AB, BA, AB, … (A = plain, B = speculative)."""
    return ("plain", "spec") if repeat % 2 == 0 else ("spec", "plain")


def open_engine(cfg: RunConfig, emit: Emit):
    """The engine, built once from the run's plain settings (the only call down for loading)."""
    from specscope.engine_adapter.engine import Engine

    engine = Engine.open(cfg.engine_params(),
                         status=lambda message: emit({"event": "status", "message": message}))
    cfg.drafter, cfg.mtp_weights = engine.drafter_name, engine.params.mtp_weights  # "auto" resolved, paths resolved
    return engine


def run_protocol(cfg: RunConfig, emit: Emit, should_stop=lambda: False, open_engine=None) -> str:
    """Run the whole protocol, emitting events; return the final status.

    ``open_engine(cfg, emit)`` builds the engine: by default this module's ``open_engine`` (looked up at
    call time); a rank of a distributed run passes its own (``dist_worker``: the target sharded).
    ``cfg.sweep`` set: the protocol at each context of the sweep (``profiler.analysis.sweep``)."""
    if cfg.sweep:
        return run_sweep(cfg, emit, should_stop, open_engine)
    enough = None
    if cfg.until == "decided":
        emit, enough = until_decided(cfg, emit)
    engine, encoded, sensors, contexts = start_run(cfg, emit, open_engine, [cfg.context] if cfg.context else [])
    try:
        if cfg.context:
            encoded = with_context(engine, cfg, encoded, contexts[cfg.context], emit)
        return _measure(cfg, engine, encoded, engine.sampling.greedy, sensors, emit, should_stop, enough=enough)
    finally:
        sensors.close()


def start_run(cfg: RunConfig, emit: Emit, open_engine, sizes: list[int]):
    """Check, open the engine, encode the cases (and the contexts of ``sizes``), emit ``run_started``.
    Returns (engine, encoded cases, sensors, {size: context tokens})."""
    cfg.validate()
    from specscope.engine_adapter import preflight
    from specscope.engine_adapter.preflight_parts import parts_from_engine
    from specscope.engine_adapter.engine import environment

    from specscope.profiler.run.suite import load_suite, take_cases

    suite = load_suite(cfg.suite)
    decided = cfg.until == "decided"  # --until decided: at least UNTIL_DECIDED_CASES (the suite cycled), a longer suite whole
    cap = max(UNTIL_DECIDED_CASES, len(suite["cases"])) if decided and cfg.cases is None else cfg.cases
    cases = take_cases(suite["cases"], cap, cycle=decided)
    precheck: ContextCheck = {}
    if any(sizes):
        from specscope.profiler.run.context_check import precheck as _precheck

        precheck = _precheck(cfg, [n for n in sizes if n])  # before the weights load
    readings = preflight.take_readings()  # the machine before the weights load (free memory, the GPU at rest)
    engine = (open_engine or globals()["open_engine"])(cfg, emit)
    ctx = engine.context_window
    contexts = {}
    if any(sizes):
        from specscope.profiler.run.context import context_tokens

        big = context_tokens(engine.encode, max(sizes), cfg.context_kind, cfg.context_file)
        contexts = {n: big[:n] for n in sizes}  # smaller contexts are prefixes of the largest
    extra = max(sizes or [0])
    encoded = []
    for c in cases:
        toks = engine.encode(c["prompt"])
        if not toks:
            raise SpecscopeError(f"case {c['id']}: the prompt encodes to no tokens")
        if ctx and extra + len(toks) + cfg.max_tokens + cfg.num_draft_tokens + 1 > ctx:
            raise SpecscopeError(
                f"case {c['id']}: " + (f"context ({extra:,} tokens) + " if extra else "") +
                f"prompt ({len(toks)} tokens) + --max-tokens {cfg.max_tokens} exceeds the context window ({ctx:,})"
            )
        encoded.append({**c, "prompt_tokens": toks})
    if cfg.discard_first >= len(encoded):
        raise SpecscopeError(f"--discard-first {cfg.discard_first} leaves no case to summarize (this run has {len(encoded)})")
    config = {**cfg.to_dict(), **engine.run_facts(cfg.max_tokens), "suite_name": suite["name"], "n_cases": len(encoded)}
    if precheck:
        config["context_check"] = precheck
    sensors = _sensors.open_sensors()
    emit({"event": "run_started", "measure": "sweep" if cfg.sweep else "run", "config": config,
          "environment": {**environment(), "sensors": sensors.describe()}, "model": engine.describe(), "time": time.time(),
          "cases": [{k: c[k] for k in ("id", "content_class", "prompt")} for c in encoded]})
    report = cast(Preflight, preflight.evaluate(readings, *parts_from_engine(engine)))  # its record: specscope.events
    report["ignored"] = report["status"] == "fail" and cfg.ignore_preflight
    emit({"event": "preflight", "preflight": report})
    if report["status"] == "fail" and not cfg.ignore_preflight:
        sensors.close()
        raise SpecscopeError(preflight.refusal(report))
    return engine, encoded, sensors, contexts


def with_context(engine, cfg: RunConfig, encoded: list[dict], tokens: list[int], emit: Emit) -> list[dict]:
    """Prefill the context once (or reuse its stored cache), emit a ``context`` event with its own timing, and
    return the cases with the context before each prompt (``own_tokens``: the prompt alone, for the session)."""
    n = len(tokens)
    if n:
        emit({"event": "status", "message": f"prefilling the context: {n:,} tokens ({cfg.context_kind if not cfg.context_file else cfg.context_file})"})
    facts: PrefilledContext = engine.prepare_context(tokens)
    emit({"event": "context", "context": n, "kind": "file" if cfg.context_file else cfg.context_kind,
          "file": cfg.context_file, **facts})
    return [{**c, "own_tokens": c.get("own_tokens", c["prompt_tokens"]),
             "prompt_tokens": list(tokens) + list(c.get("own_tokens", c["prompt_tokens"])), "context": n} for c in encoded]


def _measure(cfg: RunConfig, engine, encoded: list[dict], greedy: bool, sensors: _sensors.SensorSource, emit: Emit, should_stop,
             repeat_offset: int = 0, warmup: bool = True, plain_memo: dict | None = None, enough=None) -> str:
    """The cases, each repeat in ABBA order. A sweep's later visits of a context pass ``repeat_offset`` (their
    repeats continue the count, so the order alternates across visits too) and ``warmup`` False."""
    m = _Measurement(cfg, engine, sensors, emit, should_stop, repeat_offset)
    if warmup and not m.warm_up(encoded):
        return "incomplete"
    faults = []  # cases whose greedy speculative output left plain decoding with a clear margin
    for i, c in enumerate(encoded):
        if enough is not None and enough():  # --until decided: the verdict is known, the remaining cases are not run
            emit({"event": "status", "message": f"until decided: decided after {i} of {len(encoded)} cases"})
            break
        if cfg.cooldown and not m.cooldown(c["id"]):
            return "incomplete"
        m.thermal(c["id"], "before")
        outputs = m.case(c, i, plain_memo)
        if outputs is None:
            return "incomplete"
        m.thermal(c["id"], "after")
        if m.case_done(c, *outputs, greedy):
            faults.append(c["id"])
    return "failed" if faults else "complete"


class _Measurement:
    """What ``_measure``'s steps share: the run's settings, the engine, the sensors, where events go, and the clock
    probe's best reading so far (the cooldown's reference)."""

    def __init__(self, cfg: RunConfig, engine, sensors: _sensors.SensorSource, emit: Emit, should_stop,
                 repeat_offset: int):
        self.cfg, self.engine, self.sensors, self.emit, self.should_stop = cfg, engine, sensors, emit, should_stop
        self.repeat_offset = repeat_offset
        self.t_start = time.monotonic()
        self.best_ms: float | None = None
        self.accepted = 0  # the current speculative pass's accepted drafts (its sensor window records them)
        # a tree run's full rounds' starts by case, as fractions of the continuation (the last speculative pass's):
        # where its parts are timed apart (``time_components``)
        self.round_starts: dict[str, list[float]] = {}

    def probe(self, case_id: str, repeat: int, when: str) -> float:
        """A clock-probe reading, emitted; returns its time (ms)."""
        r = self.engine.probe()
        self.best_ms = r["ms"] if self.best_ms is None else min(self.best_ms, r["ms"])
        self.emit({"event": "probe", "case": case_id, "repeat": repeat, "when": when, "ms": r["ms"],
                   "reps_ms": r["reps_ms"], "t": time.monotonic() - self.t_start})
        return r["ms"]

    def cooldown(self, case_id: str) -> bool:
        """Wait until the probe is back within COOLDOWN_TOLERANCE of its best (or the timeout); False: stopped."""
        cfg, emit = self.cfg, self.emit
        t0 = time.monotonic()
        while True:
            ms = self.probe(case_id, 0, "cooldown")
            waited = time.monotonic() - t0
            best_ms = self.best_ms
            assert best_ms is not None  # probe() has just read the clock
            slower = ms / best_ms - 1.0
            if slower <= COOLDOWN_TOLERANCE or waited >= cfg.cooldown_timeout_s:
                reached = slower <= COOLDOWN_TOLERANCE
                emit({"event": "cooldown", "case": case_id, "waited_s": waited, "reached": reached, "probe_ms": ms,
                      "best_ms": best_ms})
                if not reached:
                    emit({"event": "status", "message": f"cooldown timed out before {case_id} after {waited:.0f} s: "
                                                        f"probe still {slower * 100:+.1f}% from its best; measuring anyway"})
                return True
            emit({"event": "status", "message": f"cooling down before {case_id}: probe {slower * 100:+.1f}% from its best "
                                                f"(waiting for ≤ +{COOLDOWN_TOLERANCE * 100:.0f}%), "
                                                f"{waited:.0f} of {cfg.cooldown_timeout_s:.0f} s"})
            until = time.monotonic() + COOLDOWN_POLL_S
            while time.monotonic() < until:
                if self.should_stop():
                    return False
                time.sleep(0.1)

    def thermal(self, case_id: str, when: str) -> None:
        therm = self.sensors.thermal()
        if therm:
            self.emit({"event": "thermal", "case": case_id, "when": when, **therm})

    def plain_run(self, c, record: bool, repeat: int = 0):
        """One plain pass (a measured one inside its own sensor window): tokens and tok/s."""
        out = PassEvents(self.emit, PASS_FLUSH_S)
        if record:
            self.sensors.start()
        try:
            toks, tps = self._plain_pass(c, record, out)
        finally:
            out.flush()
        if record and tps is not None:
            self.close_window(c, repeat, "plain", toks, None)
        return toks, tps

    def _plain_pass(self, c, record: bool, emit: Emit):
        toks, ms = [], []
        rec: PrefillRecord | StepRecord
        for rec in self.engine.plain(c["prompt_tokens"], self.cfg.max_tokens):
            toks.append(rec["token"])
            if record:
                if rec["event"] == "prefill":
                    emit({**rec, "case": c["id"], "mode": "plain"})
                else:
                    emit({**rec, "case": c["id"]})
            if rec["event"] == "step":
                ms.append(rec["ms"])
            if self.should_stop():
                return toks, None
        return toks, tok_s(len(ms), sum(ms))

    def _spec_pass(self, c, plain_tokens, record: bool, kinds: str | None, pass_name: PassName | None, repeat: int = 0):
        """One speculative pass (a measured one in its own sensor window): tokens and tok/s per round kind."""
        out = PassEvents(self.emit, PASS_FLUSH_S)
        if record:
            self.sensors.start()
        try:
            toks, rates = self._spec_rounds(c, plain_tokens, record, kinds, pass_name, out)
        finally:
            out.flush()
        if record and rates is not None:
            self.close_window(c, repeat, "spec", toks, pass_name)
        return toks, rates

    def close_window(self, c, repeat: int, mode: Mode, toks: list[int], pass_name: PassName | None) -> None:
        """The pass's sensor window closed and emitted, with its tokens (and a speculative pass's accepted drafts)."""
        window = self.sensors.stop()
        if window:
            self.emit(_sensors.window_event(window, c["id"], mode, repeat, len(toks), time.monotonic() - self.t_start,
                                            self.accepted if mode == "spec" else None, pass_name))

    def _spec_rounds(self, c, plain_tokens, record: bool, kinds: str | None, pass_name: PassName | None, emit: Emit):
        toks = []
        self.accepted = 0
        starts: list[float] = []
        n = {"instrumented": 0, "end_to_end": 0}
        total = {"instrumented": 0.0, "end_to_end": 0.0}
        rec: PrefillRecord | RoundRecord
        for rec in self.engine.speculative(c["prompt_tokens"], plain_tokens, self.cfg.max_tokens,
                                           **({"round_kinds": kinds} if kinds else {})):
            if rec["event"] == "prefill":
                toks.append(rec["token"])
                if record and pass_name != LEDGER:  # the session's output is the measured pass's
                    emit({**rec, "case": c["id"], "mode": "spec"})
            else:
                tree = rec.get("tree")
                if tree and tree["max_depth"] == self.cfg.num_draft_tokens and plain_tokens:  # a full tree round
                    starts.append(len(toks) / len(plain_tokens))  # its first verify input: the token at len - 1
                toks.extend(rec["emitted"])
                self.accepted += rec["accepted"]
                n[rec["kind"]] += len(rec["emitted"])
                total[rec["kind"]] += rec["ms"]
                if record:
                    emit({**rec, "case": c["id"], "pass": pass_name} if pass_name else {**rec, "case": c["id"]})
            if self.should_stop():
                return toks, None
        if starts:
            self.round_starts[c["id"]] = starts
        return toks, {kind: tok_s(n[kind], total[kind]) for kind in n}

    def spec_run(self, c, plain_tokens, record: bool, repeat: int = 0):
        """Tokens and (measured tok/s, instrumented tok/s). The measured speed comes from end-to-end rounds when the
        run has them (the speed a user gets), the instrumented rate beside it (what timing the parts apart costs).
        A paired run makes both passes over the same case, end-to-end first in even repeats and last in odd ones."""
        if self.cfg.round_kinds != "paired":
            toks, rates = self._spec_pass(c, plain_tokens, record, None, None, repeat)
            return toks, None if rates is None else (rates["end_to_end"] or rates["instrumented"], rates["instrumented"])
        order = ((MEASURED, "end_to_end"), (LEDGER, "instrumented"))
        out = {}
        for pass_name, kinds in (order if repeat % 2 == 0 else order[::-1]):
            toks, rates = self._spec_pass(c, plain_tokens, record, kinds, pass_name, repeat)
            if rates is None:
                return toks, None
            out[pass_name] = (toks, rates[kinds])
        return out[MEASURED][0], (out[MEASURED][1], out[LEDGER][1])

    def time_components(self, c, r: int, when: str, plain_tokens) -> None:
        """The prediction's inputs, timed apart from the rounds they predict (``engine_adapter.measure.components``):
        beside each speculative pass, before and after it (never inside), each call at its own point of the case so
        the calls spread over it as the rounds do (call j of 2·repeats at (j + ½) / (2·repeats) of the continuation; a
        tree run's, once a pass has run, at every 2·repeats-th of its full rounds' starts from the j-th),
        ``component_reps`` split between the two."""
        cfg, engine = self.cfg, self.engine
        if not callable(getattr(engine, "components", None)) or not plain_tokens:
            return
        calls = 2 * cfg.repeats
        j = 2 * (r - self.repeat_offset) + (when == "after")
        at = (j + 0.5) / calls
        # a tree run's parts at the starts of its rounds (call j takes every calls-th): a tree's verify costs what the
        # tree a prefix grows costs, and points spread over the positions would price long rounds' deep trees too often
        starts = self.round_starts.get(c["id"], [])[j::calls]
        where = f"at {len(starts)} of its rounds' starts" if starts else f"at {at:.0%} of the case"
        self.emit({"event": "status", "message": f"{c['id']}: verify forwards, drafts and bookkeeping timed apart {when} "
                                                 f"the speculative pass (the prediction's inputs, {where})"})
        comp = engine.components(c["prompt_tokens"], plain_tokens, reps=max(1, -(-cfg.component_reps // 2)), at=at,
                                 **({"points": starts} if starts else {}))
        self.emit({"event": "components", "case": c["id"], "components": comp, "repeat": r, "when": when})

    def warm_up(self, encoded: list[dict]) -> bool:
        """Compile kernels and fill allocator caches for both paths; not recorded. False: stopped."""
        for w in range(self.cfg.warmup):
            self.emit({"event": "status", "message": f"warm-up {w + 1}/{self.cfg.warmup}"})
            c = encoded[w % len(encoded)]
            pt, _ = self.plain_run(c, record=False)
            self.spec_run(c, pt, record=False)
            if self.should_stop():
                return False
        return True

    def case(self, c: dict, i: int, plain_memo: dict | None) -> tuple[list[int], list[int]] | None:
        """A case's repeats, each in ABBA order; its (plain, speculative) output, or None: stopped."""
        info = {k: c[k] for k in ("id", "content_class", "prompt")}
        info["prompt_tokens"] = c.get("own_tokens", c["prompt_tokens"])  # a long context is recorded once, not per case
        if c.get("context"):
            info["context"] = c["context"]
        discarded = i < self.cfg.discard_first
        plain_tokens, spec_tokens = (plain_memo or {}).get(c["id"]), None  # a BA visit's oracle: the last visit's plain output
        for r in range(self.repeat_offset, self.repeat_offset + self.cfg.repeats):
            order = abba(r)
            self.probe(c["id"], r, "before")
            for phase in order:
                if phase == "spec":  # beside the pass, never inside it (nor inside its sensor window)
                    self.time_components(c, r, "before", plain_tokens)
                self.emit({"event": "case_started", "case": info, "index": i, "repeat": r, "phase": phase,
                           "order": "AB" if order[0] == "plain" else "BA", "discarded": discarded})
                made = self._phase(c, r, phase, plain_tokens)
                if made is None:
                    return None
                if phase == "plain":
                    plain_tokens = made
                    if plain_memo is not None:
                        plain_memo[c["id"]] = plain_tokens
                    self._after_first_plain(c, r, plain_tokens)
                else:
                    spec_tokens = made
                if self.should_stop():
                    return None
            self.probe(c["id"], r, "after")
        assert plain_tokens is not None and spec_tokens is not None  # every repeat (at least one) ran both phases
        return plain_tokens, spec_tokens

    def _phase(self, c: dict, r: int, phase: Mode, plain_tokens) -> list[int] | None:
        """One pass of a repeat (the components timed beside a speculative pass, never inside it); None: stopped."""
        emit = self.emit
        if phase == "plain":
            toks, tps = self.plain_run(c, record=True, repeat=r)
            if tps is None:
                return None
            emit({"event": "repeat_done", "case": c["id"], "mode": "plain", "repeat": r, "tok_s": tps})
        else:
            # repeat 0 is always AB, so a BA repeat's drafter (the oracle) has the plain continuation
            toks, rates = self.spec_run(c, plain_tokens, record=True, repeat=r)
            if rates is None:
                return None
            emit({"event": "repeat_done", "case": c["id"], "mode": "spec", "repeat": r, "tok_s": rates[0],
                  "instrumented_tok_s": rates[1]})
        if phase == "spec":
            self.time_components(c, r, "after", plain_tokens)
        return toks

    def _after_first_plain(self, c: dict, r: int, plain_tokens: list[int]) -> None:
        """After a run's first plain pass: the breakdown of one decode step and one verify forward, and the drafter's
        acceptance trace along the plain output (each when asked for)."""
        cfg, engine, emit = self.cfg, self.engine, self.emit
        if not r == self.repeat_offset == 0:
            return
        if cfg.breakdown:
            emit({"event": "status", "message": f"{c['id']}: breakdown of one decode step and one verify forward"})
            bd = engine.breakdown(c["prompt_tokens"], plain_tokens, reps=cfg.breakdown_reps)
            emit({"event": "breakdown", "case": c["id"], "breakdown": bd})
        if cfg.trace and callable(getattr(engine, "trace", None)):
            emit({"event": "status", "message": f"{c['id']}: the drafter's acceptance trace along the plain output"})
            tr = engine.trace(c["prompt_tokens"], plain_tokens)
            if tr is not None:  # None for the oracle: its acceptance is analytic
                emit({"event": "trace", "case": c["id"], "trace": tr})

    def case_done(self, c: dict, plain_tokens: list[int], spec_tokens: list[int], greedy: bool) -> bool:
        """The case's outputs and the memory peak, emitted; True: an engine fault (greedy outputs that differ by more
        than a near-tie's rounding)."""
        engine, emit = self.engine, self.emit
        fault = False
        if greedy and plain_tokens != spec_tokens:
            # Greedy speculative output must equal plain output; a difference is rounding only at a near-tie.
            ev = engine.divergence(c["id"], c["prompt_tokens"], plain_tokens, spec_tokens)
            emit(ev)
            fault = ev["verdict"] == "engine_fault"
        emit({"event": "case_done", "case": c["id"], "plain_text": engine.decode(plain_tokens),
              "spec_text": engine.decode(spec_tokens), "plain_pieces": [engine.decode([t]) for t in plain_tokens],
              "spec_pieces": [engine.decode([t]) for t in spec_tokens]})
        emit({"event": "memory", "peak_bytes": engine.peak_memory()})
        return fault


def run_sweep(cfg: RunConfig, emit: Emit, should_stop, open_engine=None) -> str:
    """The protocol at each context of ``cfg.sweep`` (order, reuse and events: ``profiler.analysis.sweep``)."""
    from specscope.profiler.analysis.sweep import sweep_order

    assert cfg.sweep is not None  # a sweep's run (worker: only when cfg.sweep is set)
    sizes = list(cfg.sweep)
    engine, encoded, sensors, contexts = start_run(cfg, emit, open_engine, sizes)
    order = sweep_order(sizes, cfg.sweep_passes)
    emit({"event": "sweep_started", "contexts": sorted(sizes), "order": order, "passes": cfg.sweep_passes,
          "kind": "file" if cfg.context_file else cfg.context_kind, "file": cfg.context_file})
    memo: dict[int, dict] = {}
    visits: dict[int, int] = {}
    try:
        for visit, n in enumerate(order):
            k = visits.get(n, 0)
            visits[n] = k + 1
            cases = with_context(engine, cfg, encoded, contexts[n], emit)
            emit({"event": "sweep_visit", "context": n, "visit": visit, "pass": k, "of": len(order)})
            status = _measure(cfg, engine, cases, engine.sampling.greedy, sensors, emit, should_stop,
                              repeat_offset=k * cfg.repeats, warmup=visit == 0, plain_memo=memo.setdefault(n, {}))
            emit({"event": "sweep_visit_done", "context": n, "visit": visit, "pass": k, "status": status,
                  "last": visits[n] == cfg.sweep_passes})
            if status != "complete":
                return status
        return "complete"
    finally:
        sensors.close()
        engine.forget_contexts()
