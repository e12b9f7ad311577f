"""One clock: plain steps and speculative rounds both time the engine's own work, never the consumer's.

A consumer that pauses after a record (a slow reader of the events) must land in no record on either side, so both
sides' rates, computed as the profiler computes them (tokens over the records' summed ms, ``profiler.run.protocol``),
move alike. The pause comes after every other record, so within one pass the records that follow a pause are compared
with those that follow none (the machine's drift, up to ±50% a second on a shared VM, hits both alike). The negative
control replays the old plain clock (a step timed from the previous record's hand-off, the pause inside) on the same
records: it shows plain alone slowed.
"""

import math
import time

import pytest

from specscope.engine_adapter.engine import Engine, EngineParams

N = 40
PAUSE_S = 0.05
# the rate of records after a pause ÷ the rate of those after none, plain's against speculative's: within this factor.
# Both sides may also slow a little for real after a pause (caches and threads gone cold); the old plain clock put
# each pause in the next step (a 50 ms pause, a 5-15 ms step: plain's rate ×0.1-0.25, speculative's ~×1)
ALIKE = 2.0


def consume(records, parity: int) -> dict:
    """Drain ``records``, sleeping PAUSE_S after each record of index ≥ 1 and of this parity."""
    got, arrived, paused = [], [], []
    t0 = time.perf_counter()
    for i, rec in enumerate(records):
        arrived.append(time.perf_counter() * 1000.0)
        got.append(rec)
        paused.append(i > 0 and i % 2 == parity)
        if paused[-1]:
            time.sleep(PAUSE_S)
    return {"records": got, "arrived": arrived, "paused": paused, "wall_ms": (time.perf_counter() - t0) * 1000.0}


def own_ms(run) -> list[float]:
    return [r["ms"] for r in run["records"]]


def old_plain_ms(run) -> list[float]:
    """The old plain clock replayed: a step from the previous record's hand-off to its own, the consumer inside."""
    a = run["arrived"]
    return [r["ms"] if i == 0 else a[i] - a[i - 1] for i, r in enumerate(run["records"])]


@pytest.fixture(scope="module")
def passes():
    """Per side two passes (plain, spec, spec, plain), pausing after the odd records in the first and the even ones
    in the second, so a record's place in the pass cancels. The demo with its MTP head, end-to-end rounds (a run's
    measured pass): a step takes a few ms, the pause far more."""
    eng = Engine.open(EngineParams(model=None, demo=True, drafter="mtp", num_draft_tokens=2, round_kinds="end_to_end"))
    prompt = eng.encode("Explain why a verification pass over several tokens can cost as much as decoding.")
    plain = [r["token"] for r in eng.plain(prompt, N)]  # also the warm-up
    list(eng.speculative(prompt, plain, N))
    make = {"plain": lambda: eng.plain(prompt, N), "spec": lambda: eng.speculative(prompt, plain, N)}
    out: dict[str, list] = {"plain": [], "spec": []}
    for side, parity in (("plain", 1), ("spec", 1), ("spec", 0), ("plain", 0)):
        out[side].append(consume(make[side](), parity))
    return out


def slowdown(runs, clock=own_ms) -> float:
    """Tokens over summed ms of the records that follow a pause ÷ the same of those that follow none (the prefill
    and the first step or round left out)."""
    n, ms = {True: 0, False: 0}, {True: 0.0, False: 0.0}
    for run in runs:
        recs, times = run["records"], clock(run)
        for i in range(2, len(recs)):
            after = run["paused"][i - 1]
            n[after] += len(recs[i]["emitted"]) if recs[i]["event"] == "round" else 1
            ms[after] += times[i]
    return (n[True] / ms[True]) / (n[False] / ms[False])


@pytest.mark.parametrize("side", ["plain", "spec"])
def test_no_record_holds_the_consumers_pause(passes, side):
    # a pass's records are disjoint spans of the engine's own run: with the pauses (each at least PAUSE_S) outside
    # them, they sum to at most the pass's wall time less the pauses (no timing threshold: where the clock reads)
    for run in passes[side]:
        assert sum(own_ms(run)) <= run["wall_ms"] - sum(run["paused"]) * PAUSE_S * 1000.0


def test_old_plain_clock_holds_the_pause(passes):
    # the negative control, same records: the old plain clock puts every pause but a last one into a step
    for run in passes["plain"]:
        assert sum(old_plain_ms(run)) > run["wall_ms"] - sum(run["paused"]) * PAUSE_S * 1000.0


def test_a_pausing_consumer_moves_both_rates_alike(passes):
    plain, spec = slowdown(passes["plain"]), slowdown(passes["spec"])
    assert abs(math.log(plain / spec)) < math.log(ALIKE), f"after a pause ÷ after none: plain {plain:.3f}, " \
                                                          f"speculative {spec:.3f}"
    # the negative control on the same passes: the old plain clock slows plain alone, far past the margin
    old = slowdown(passes["plain"], old_plain_ms)
    assert old / spec < 1 / ALIKE, f"old clock: plain {old:.3f}, speculative {spec:.3f}"


def test_the_pipelined_order_keeps_the_pause_out_of_every_record_too():
    """On a GPU plain decoding issues the next step before handing on this token, as mlx-lm does (``pipeline``): its
    records still start at the resume, so a consumer's pause lands in none of them (the forward it lets run is not
    clocked: a bias towards plain, bounded by one forward a pause). Forced here on the CPU backend."""
    from specscope.engine_adapter.decode.decoding import pipelines_plain, plain_generate

    assert pipelines_plain() is False  # MLX's CPU backend: nothing issued before the hand-off
    eng = Engine.open(EngineParams(model=None, demo=True, drafter="mtp", num_draft_tokens=2, round_kinds="end_to_end"))
    prompt = eng.encode("Explain why a verification pass over several tokens can cost as much as decoding.")
    for pipeline in (True, False):
        gen = plain_generate(eng.target.model, prompt, N, eng.sampling, pipeline=pipeline)
        run = consume(gen, 1)
        assert [r["token"] for r in run["records"]] == [r["token"] for r in eng.plain(prompt, N)]  # the same tokens
        assert sum(own_ms(run)) <= run["wall_ms"] - sum(run["paused"]) * PAUSE_S * 1000.0
        assert sum(old_plain_ms(run)) > run["wall_ms"] - sum(run["paused"]) * PAUSE_S * 1000.0  # the control
