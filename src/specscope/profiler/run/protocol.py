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

import copy
import time
from typing import cast

from specscope.errors import SpecscopeError
from specscope.events import Emit, Event, Mode, PassName, Preflight, PrefillRecord, PrefilledContext, RoundRecord, StepRecord

from specscope.profiler.run import sensors as _sensors
from specscope.profiler.run.config import RunConfig
from specscope.profiler.run.records import ContextCheck
from specscope.profiler.analysis.sequential import UNTIL_DECIDED_CASES
from specscope.profiler.analysis.stats import tok_s

COOLDOWN_TOLERANCE = 0.02  # --cooldown: the probe must be back within 2% of its best reading
COOLDOWN_POLL_S = 2.0      # between two probe readings while cooling down
MEASURED: PassName = "measured"  # the two passes of a paired speculative phase
LEDGER: PassName = "ledger"
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
    t_start = time.monotonic()
    best: dict[str, float | None] = {"ms": None}

    def probe(case_id: str, repeat: int, when: str) -> float:
        """A clock-probe reading, emitted; returns its time (ms)."""
        r = engine.probe()
        best["ms"] = r["ms"] if best["ms"] is None else min(best["ms"], r["ms"])
        emit({"event": "probe", "case": case_id, "repeat": repeat, "when": when, "ms": r["ms"], "reps_ms": r["reps_ms"],
              "t": time.monotonic() - t_start})
        return r["ms"]

    def cooldown(case_id: str) -> bool:
        """Wait until the probe is back within COOLDOWN_TOLERANCE of its best (or the timeout); False: stopped."""
        t0 = time.monotonic()
        while True:
            ms = probe(case_id, 0, "cooldown")
            waited = time.monotonic() - t0
            best_ms = best["ms"]
            assert best_ms is not None  # probe() has just read the clock
            slower = ms / best_ms - 1.0
            if slower <= COOLDOWN_TOLERANCE or waited >= cfg.cooldown_timeout_s:
                reached = slower <= COOLDOWN_TOLERANCE
                emit({"event": "cooldown", "case": case_id, "waited_s": waited, "reached": reached, "probe_ms": ms,
                      "best_ms": best["ms"]})
                if not reached:
                    emit({"event": "status", "message": f"cooldown timed out before {case_id} after {waited:.0f} s: "
                                                        f"probe still {slower * 100:+.1f}% from its best; measuring anyway"})
                return True
            emit({"event": "status", "message": f"cooling down before {case_id}: probe {slower * 100:+.1f}% from its best "
                                                f"(waiting for ≤ +{COOLDOWN_TOLERANCE * 100:.0f}%), "
                                                f"{waited:.0f} of {cfg.cooldown_timeout_s:.0f} s"})
            until = time.monotonic() + COOLDOWN_POLL_S
            while time.monotonic() < until:
                if should_stop():
                    return False
                time.sleep(0.1)

    def plain_run(c, record: bool):
        out = PassEvents(emit)
        try:
            return plain_pass(c, record, out)
        finally:
            out.flush()

    def plain_pass(c, record: bool, emit: Emit):
        toks, ms = [], []
        rec: PrefillRecord | StepRecord
        for rec in engine.plain(c["prompt_tokens"], cfg.max_tokens):
            toks.append(rec["token"])
            if record:
                if rec["event"] == "prefill":
                    emit({**rec, "case": c["id"], "mode": "plain"})
                else:
                    emit({**rec, "case": c["id"]})
            if rec["event"] == "step":
                ms.append(rec["ms"])
            if should_stop():
                return toks, None
        return toks, tok_s(len(ms), sum(ms))

    def spec_pass(c, plain_tokens, record: bool, kinds: str | None, pass_name: PassName | None):
        """One speculative pass: tokens and tok/s per round kind ({"instrumented": …, "end_to_end": …})."""
        out = PassEvents(emit)
        try:
            return spec_rounds(c, plain_tokens, record, kinds, pass_name, out)
        finally:
            out.flush()

    def spec_rounds(c, plain_tokens, record: bool, kinds: str | None, pass_name: PassName | None, emit: Emit):
        toks = []
        n = {"instrumented": 0, "end_to_end": 0}
        total = {"instrumented": 0.0, "end_to_end": 0.0}
        rec: PrefillRecord | RoundRecord
        for rec in engine.speculative(c["prompt_tokens"], plain_tokens, cfg.max_tokens, **({"round_kinds": kinds} if kinds else {})):
            if rec["event"] == "prefill":
                toks.append(rec["token"])
                if record and pass_name != LEDGER:  # the session's output is the measured pass's
                    emit({**rec, "case": c["id"], "mode": "spec"})
            else:
                toks.extend(rec["emitted"])
                n[rec["kind"]] += len(rec["emitted"])
                total[rec["kind"]] += rec["ms"]
                if record:
                    emit({**rec, "case": c["id"], "pass": pass_name} if pass_name else {**rec, "case": c["id"]})
            if should_stop():
                return toks, None
        return toks, {kind: tok_s(n[kind], total[kind]) for kind in n}

    def spec_run(c, plain_tokens, record: bool, repeat: int = 0):
        """Tokens and (measured tok/s, instrumented tok/s). The measured speed comes from end-to-end rounds when the
        run has them (the speed a user gets), the instrumented rate beside it (what timing the parts apart costs).
        A paired run makes both passes over the same case, end-to-end first in even repeats and last in odd ones."""
        if cfg.round_kinds != "paired":
            toks, rates = spec_pass(c, plain_tokens, record, None, None)
            return toks, None if rates is None else (rates["end_to_end"] or rates["instrumented"], rates["instrumented"])
        order = ((MEASURED, "end_to_end"), (LEDGER, "instrumented"))
        out = {}
        for pass_name, kinds in (order if repeat % 2 == 0 else order[::-1]):
            toks, rates = spec_pass(c, plain_tokens, record, kinds, pass_name)
            if rates is None:
                return toks, None
            out[pass_name] = (toks, rates[kinds])
        return out[MEASURED][0], (out[MEASURED][1], out[LEDGER][1])

    def time_components(c, r: int, when: str, plain_tokens) -> None:
        """The prediction's inputs, timed apart from the rounds they predict (``engine_adapter.measure.components``):
        beside each speculative pass, before and after it (never inside), each call at its own point of the case so
        the calls spread over it as the rounds do (call j of 2·repeats at (j + ½) / (2·repeats) of the continuation),
        ``component_reps`` split between the two."""
        if not callable(getattr(engine, "components", None)) or not plain_tokens:
            return
        calls = 2 * cfg.repeats
        j = 2 * (r - repeat_offset) + (when == "after")
        at = (j + 0.5) / calls
        emit({"event": "status", "message": f"{c['id']}: verify forwards, drafts and bookkeeping timed apart {when} the "
                                            f"speculative pass (the prediction's inputs, at {at:.0%} of the case)"})
        comp = engine.components(c["prompt_tokens"], plain_tokens, reps=max(1, -(-cfg.component_reps // 2)), at=at)
        emit({"event": "components", "case": c["id"], "components": comp, "repeat": r, "when": when})

    # Warm-up: compile kernels and fill allocator caches for both paths; not recorded.
    for w in range(cfg.warmup if warmup else 0):
        emit({"event": "status", "message": f"warm-up {w + 1}/{cfg.warmup}"})
        c = encoded[w % len(encoded)]
        pt, _ = plain_run(c, record=False)
        spec_run(c, pt, record=False)
        if should_stop():
            return "incomplete"

    faults = []  # cases whose greedy speculative output left plain decoding with a clear margin
    for i, c in enumerate(encoded):
        if enough is not None and enough():  # --until decided: the verdict is known, the remaining cases are not run
            emit({"event": "status", "message": f"until decided: decided after {i} of {len(encoded)} cases"})
            break
        info = {k: c[k] for k in ("id", "content_class", "prompt")}
        info["prompt_tokens"] = c.get("own_tokens", c["prompt_tokens"])  # a long context is recorded once, not per case
        if c.get("context"):
            info["context"] = c["context"]
        discarded = i < cfg.discard_first
        if cfg.cooldown and not cooldown(c["id"]):
            return "incomplete"
        therm = sensors.thermal()
        if therm:
            emit({"event": "thermal", "case": c["id"], "when": "before", **therm})
        plain_tokens, spec_tokens = (plain_memo or {}).get(c["id"]), None  # a BA visit's oracle: the last visit's plain output
        for r in range(repeat_offset, repeat_offset + cfg.repeats):
            order = abba(r)
            probe(c["id"], r, "before")
            for phase in order:
                if phase == "spec":  # beside the pass, never inside it (nor inside its sensor window)
                    time_components(c, r, "before", plain_tokens)
                emit({"event": "case_started", "case": info, "index": i, "repeat": r, "phase": phase,
                      "order": "AB" if order[0] == "plain" else "BA", "discarded": discarded})
                sensors.start()
                if phase == "plain":
                    plain_tokens, tps = plain_run(c, record=True)
                    if tps is None:
                        return "incomplete"
                    emit({"event": "repeat_done", "case": c["id"], "mode": "plain", "repeat": r, "tok_s": tps})
                    made = len(plain_tokens)
                    if plain_memo is not None:
                        plain_memo[c["id"]] = plain_tokens
                else:
                    # repeat 0 is always AB, so a BA repeat's drafter (the oracle) has the plain continuation
                    spec_tokens, rates = spec_run(c, plain_tokens, record=True, repeat=r)
                    if rates is None:
                        return "incomplete"
                    emit({"event": "repeat_done", "case": c["id"], "mode": "spec", "repeat": r, "tok_s": rates[0],
                          "instrumented_tok_s": rates[1]})
                    made = len(spec_tokens)
                window = sensors.stop()
                if phase == "spec":
                    time_components(c, r, "after", plain_tokens)
                if window:
                    emit({"event": "sensors", "case": c["id"], "mode": phase, "repeat": r, "tokens": made,
                          "t": time.monotonic() - t_start, **window})
                if phase == "plain" and r == repeat_offset == 0 and cfg.breakdown:
                    emit({"event": "status", "message": f"{c['id']}: breakdown of one decode step and one verify forward"})
                    bd = engine.breakdown(c["prompt_tokens"], plain_tokens, reps=cfg.breakdown_reps)
                    emit({"event": "breakdown", "case": c["id"], "breakdown": bd})
                if phase == "plain" and r == repeat_offset == 0 and cfg.trace and callable(getattr(engine, "trace", None)):
                    emit({"event": "status", "message": f"{c['id']}: the drafter's acceptance trace along the plain output"})
                    tr = engine.trace(c["prompt_tokens"], plain_tokens)
                    if tr is not None:  # None for the oracle: its acceptance is analytic
                        emit({"event": "trace", "case": c["id"], "trace": tr})
                if should_stop():
                    return "incomplete"
            probe(c["id"], r, "after")
        therm = sensors.thermal()
        if therm:
            emit({"event": "thermal", "case": c["id"], "when": "after", **therm})
        assert plain_tokens is not None and spec_tokens is not None  # every repeat (at least one) ran both phases
        if greedy and plain_tokens != spec_tokens:
            # Greedy speculative output must equal plain output; a difference is rounding only at a near-tie.
            ev = engine.divergence(c["id"], c["prompt_tokens"], plain_tokens, spec_tokens)
            emit(ev)
            if ev["verdict"] == "engine_fault":
                faults.append(c["id"])
        emit({"event": "case_done", "case": c["id"], "plain_text": engine.decode(plain_tokens), "spec_text": engine.decode(spec_tokens),
              "plain_pieces": [engine.decode([t]) for t in plain_tokens], "spec_pieces": [engine.decode([t]) for t in spec_tokens]})
        emit({"event": "memory", "peak_bytes": engine.peak_memory()})
    return "failed" if faults else "complete"


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
