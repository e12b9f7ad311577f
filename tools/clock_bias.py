"""One clock (issue 51, item 2): what the old plain clock cost, measured on the demo in one process.

  python tools/clock_bias.py pipeline [PAIRS [N]]
      Plain decoding with a trivial consumer, the old generator against the new one, ABBA, N tokens a pass (default
      150 pairs of 16): new ÷ old for the profiler's rate (steps over their summed ms), for the pass's speed (1 ÷ its
      wall time, prefill to last token: is the baseline every speedup is divided by made slower?) and for the median
      step, each with its 95% interval; where each generator's prefill record and steps put the time; how soon
      ``mx.async_eval`` returns on this device.
  python tools/clock_bias.py run [CASES | all]
      The run's protocol in-process with its default settings (``RunConfig(demo=True)``; the first CASES cases,
      default 4, or "all": the whole suite, as the default run), events written as the worker writes them (JSON
      lines, held and flushed every 0.5 s by ``PassEvents``) to a pipe another process drains, plain decoding by the
      OLD generator. Each record's hand-off to the consumer and back is timed on both sides: the consumer's time that
      landed in plain's steps and in speculative rounds, and the bias it put on the measured speedup.

The old plain generator is copied here verbatim (``old_plain_generate``): its step ran from the previous token to
this one, ``t_prev`` read before the ``yield``, and the next step's forward was started before the ``yield``. A
consumer's gap ``g`` before step i therefore sat inside step i, less the part of the step's own compute ``c`` that
ran during it: step i's excess over the engine's own work lies in [max(0, g - c), g]; both bounds are printed (on
MLX's CPU backend ``async_eval`` returns once most of a forward has run, so the upper bound is the one that holds).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

import mlx.core as mx
import numpy as np
from mlx_lm.models.cache import make_prompt_cache

from specscope.engine_adapter.decode.decoding import _now_ms, plain_generate, prefill
from specscope.engine_adapter.decode.records import PrefillRecord, StepRecord
from specscope.engine_adapter.decode.sampling import Sampling
from specscope.engine_adapter.mlx_types import token


def old_plain_generate(model, prompt, max_tokens, sampling=None):
    """The plain generator before the one clock (``decode.decoding.plain_generate`` at 58cd992, verbatim)."""
    sampling = sampling or Sampling()
    cache = make_prompt_cache(model)
    t0 = _now_ms()
    y = sampling.sample(prefill(model, cache, prompt), 0)
    mx.async_eval(y)
    n, t_prev = 0, t0
    while True:
        if n + 1 < max_tokens:
            nxt = sampling.sample(model(y.reshape(1, 1), cache=cache)[0, -1], n + 1)
            mx.async_eval(nxt)
        tok = token(y)
        t = _now_ms()
        if n == 0:
            yield PrefillRecord(event="prefill", n_prompt=len(prompt), token=tok, ms=t - t0)
        else:
            yield StepRecord(event="step", index=n, token=tok, ms=t - t_prev)
        t_prev = t
        n += 1
        if n >= max_tokens:
            return
        y = nxt


def interval(log_ratios) -> str:
    a = np.asarray(log_ratios)
    half = 1.96 * a.std(ddof=1) / len(a) ** 0.5
    m = a.mean()
    return f"{np.exp(m):.4f} (95% {np.exp(m - half):.4f}…{np.exp(m + half):.4f}, {len(a)} pairs)"


def pipeline(pairs: int, n: int) -> None:
    from specscope.engine_adapter.engine import Engine, EngineParams
    from specscope.profiler.cli.bench_common import PROMPT

    eng = Engine.open(EngineParams(model=None, demo=True))
    model, prompt = eng.target.model, eng.encode(PROMPT)

    def one(gen) -> tuple[float, float, float]:
        """(the profiler's rate: steps over their summed ms; the pass's wall time, prefill to last token, in ms; the
        median step's ms, robust to the steps a busy machine preempts)"""
        t0 = _now_ms()
        recs = list(gen)
        ms = [r["ms"] for r in recs if r["event"] == "step"]
        split.setdefault(gen.__name__, []).append((recs[0]["ms"], sum(ms)))
        return len(ms) / sum(ms) * 1000.0, _now_ms() - t0, statistics.median(ms)

    split: dict[str, list[tuple[float, float]]] = {}  # per generator: (prefill record's ms, steps' summed ms)
    one(plain_generate(model, prompt, n))  # warm-up
    one(old_plain_generate(model, prompt, n))
    logs: dict[str, list[float]] = {"rate": [], "wall": [], "median": []}
    got: dict[str, list[tuple[float, float, float]]] = {"old": [], "new": []}
    for i in range(pairs):
        for which in (("old", "new") if i % 2 == 0 else ("new", "old")):
            got[which].append(one((old_plain_generate if which == "old" else plain_generate)(model, prompt, n)))
        (r_old, w_old, m_old), (r_new, w_new, m_new) = got["old"][-1], got["new"][-1]
        logs["rate"].append(np.log(r_new / r_old))
        logs["wall"].append(np.log(w_old / w_new))  # as speeds: new ÷ old
        logs["median"].append(np.log(m_old / m_new))
    med = {w: statistics.median(r for r, _, _ in got[w]) for w in got}
    print(f"plain, trivial consumer, {n} tokens a pass, ABBA in one process:")
    print(f"  the profiler's rate (steps over their summed ms): old {med['old']:.1f}, new {med['new']:.1f} tok/s "
          f"(medians); new ÷ old {interval(logs['rate'])}")
    print(f"  the pass's speed (1 ÷ its wall time, prefill to last token): new ÷ old {interval(logs['wall'])}")
    print(f"  the median step's speed (1 ÷ its ms): new ÷ old {interval(logs['median'])}")
    for name, label in (("old_plain_generate", "old"), ("plain_generate", "new")):
        pre, steps = zip(*split[name][2:])
        print(f"  {label}: prefill record {statistics.median(pre):.2f} ms, steps {statistics.median(steps):.1f} ms "
              f"(medians per pass)")
    print(f"  (where async_eval mostly blocks, the old clock put step 1's forward in the prefill's record, which no rate "
          f"counts: old steps summed {n - 2} forwards for {n - 1} tokens, a rate {(n - 1) / (n - 2) - 1:+.2%} too high)")
    # how asynchronous is async_eval here? On MLX's CPU backend it returns only once most of a forward has run (it
    # caps the tasks in flight), so the old clock's early start hid little of a consumer's gap
    cache = make_prompt_cache(model)
    y = Sampling().sample(prefill(model, cache, prompt), 0)
    issued, waited = [], []
    for i in range(n):
        nxt = Sampling().sample(model(y.reshape(1, 1), cache=cache)[0, -1], i + 1)
        t0 = _now_ms()
        mx.async_eval(nxt)
        t1 = _now_ms()
        token(nxt)
        issued.append(t1 - t0)
        waited.append(_now_ms() - t1)
        y = nxt
    print(f"one step on {mx.default_device()}: mx.async_eval returns after {statistics.median(issued):.2f} ms, the "
          f"token is ready {statistics.median(waited):.2f} ms later (medians of {n})")


def run(cases: int | None) -> None:
    from specscope.profiler.run import protocol
    from specscope.profiler.run.config import RunConfig

    drain = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    out = drain.stdin
    assert out is not None

    def emit(ev) -> None:  # as the worker's emit: one JSON line, flushed
        out.write((json.dumps(ev, ensure_ascii=False) + "\n").encode())
        out.flush()

    gaps: dict[str, list[float]] = {"plain": [], "spec": []}  # consumer's ms after each record
    plain_steps: list[tuple[float, float]] = []  # (gap before the step, the step's ms) under the old clock
    waits: list[float] = []  # resume to token ready, steps after a tiny gap: the step's own compute c

    def timed_spec(records):
        it = iter(records)
        while True:
            try:
                rec = next(it)
            except StopIteration:
                return
            t = time.perf_counter()
            yield rec
            gaps["spec"].append((time.perf_counter() - t) * 1000.0)

    def timed_plain(eng, prompt, max_tokens):
        prev_gap = None
        for rec in old_plain_generate(eng.target.model, prompt, max_tokens, eng.sampling):
            if rec["event"] == "step":
                plain_steps.append((prev_gap, rec["ms"]))
                if prev_gap is not None and prev_gap < 0.1:
                    waits.append(rec["ms"] - prev_gap)
            t = time.perf_counter()
            yield rec
            prev_gap = (time.perf_counter() - t) * 1000.0
            gaps["plain"].append(prev_gap)

    def open_engine(cfg, emit):
        eng = protocol.open_engine(cfg, emit)
        spec = eng.speculative
        eng.plain = lambda prompt, max_tokens: timed_plain(eng, prompt, max_tokens)
        eng.speculative = lambda *a, **kw: timed_spec(spec(*a, **kw))
        return eng

    cfg = RunConfig(demo=True, cases=cases)
    t0 = time.perf_counter()
    status = protocol.run_protocol(cfg, emit, open_engine=open_engine)
    out.close()
    drain.wait()
    steps = [(g, ms) for g, ms in plain_steps if g is not None]
    c = statistics.median(waits)
    total = sum(ms for _, ms in plain_steps)
    upper = sum(g for g, _ in steps)
    lower = sum(max(0.0, g - c) for g, _ in steps)
    big = [g for g, _ in steps if g > c]
    print(f"run --demo protocol (drafter {cfg.drafter}, k {cfg.num_draft_tokens}, {cfg.round_kinds}, {cases or 'all'} cases, "
          f"{cfg.max_tokens} tokens, {cfg.repeats} repeats): {status}, {time.perf_counter() - t0:.0f} s")
    for side in ("plain", "spec"):
        g = gaps[side]
        print(f"  consumer after a {side} record: {len(g)} hand-offs, {sum(g):.1f} ms in all, median {statistics.median(g) * 1000:.0f} µs, "
              f"max {max(g):.2f} ms")
    print(f"  plain: {len(plain_steps)} steps, {total:.0f} ms in all, own compute c ≈ {c:.2f} ms a step; {len(big)} "
          f"gaps longer than c")
    print(f"  consumer time inside plain's steps (old clock): {lower:.1f}…{upper:.1f} ms, "
          f"{lower / total * 100:.3f}…{upper / total * 100:.3f}% of plain's time; speculative rounds: none (their "
          f"clock starts at the resume)")
    print(f"  bias on the measured speedup (old clock, plain's rate too low): +{lower / (total - lower) * 100:.3f}% "
          f"… +{upper / (total - upper) * 100:.3f}%")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "run"
    arg = None if len(sys.argv) < 3 or sys.argv[2] == "all" else int(sys.argv[2])
    if what == "pipeline":
        pipeline(arg or 150, int(sys.argv[3]) if len(sys.argv) > 3 else 16)
    elif what == "run":
        run(None if len(sys.argv) > 2 and sys.argv[2] == "all" else arg or 4)
    else:
        sys.exit(__doc__)
