"""What the target's rollback adds to a round when the round's one sync pays it (as an end-to-end round does: the
rollback left lazy) against what it costs evaluated and timed apart (as ``measure_components`` times T_rollback),
interleaved rep by rep in one process on the components' own setup (the same prefill, drafter, verify and round).

Per rep (accepted count a cycling over 0..k-1, a partial acceptance: a full one rolls nothing back): the drafter made
ready after an earlier round that accepted a, the verify over k+1 positions (synced), then either

- APART: the rollback to a, evaluated and timed (graph and sync: T_rollback as the components time it), then the
  next round (lazy drafts, the verify on them, one sync) timed;
- FUSED: the rollback to a built but left lazy (its graph building timed), then the same round timed: its sync also
  computes the rollback, as a real end-to-end round's does.

fused cost = FUSED round + its graph building − APART round; the components' price of the same = APART's rollback.
usage: python tools/rollback_fused_vs_apart.py [REPS] [K] [DRAFTER] [AT]"""
import sys
import time

import mlx.core as mx
import numpy as np
from mlx_lm.models.cache import make_prompt_cache

from specscope.engine_adapter.cache.capture import capturing, install_capture, is_hybrid
from specscope.engine_adapter.cache.hidden import install_tap, tapping
from specscope.engine_adapter.cache.rollback import CacheSnapshot, VerifyRollback
from specscope.engine_adapter.decode.decoding import prefill
from specscope.engine_adapter.drafters.drafter import Draft
from specscope.engine_adapter.engine import Engine, EngineParams
from specscope.profiler.cli.bench_common import PROMPT

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
k = int(sys.argv[2]) if len(sys.argv) > 2 else 2
name = sys.argv[3] if len(sys.argv) > 3 else "draft"
at = float(sys.argv[4]) if len(sys.argv) > 4 else 0.5
eng = Engine.open(EngineParams(model=None, demo=True, drafter=name, num_draft_tokens=k, round_kinds="end_to_end"))
model, sampling = eng.target.model, eng.sampling
prompt = eng.encode(PROMPT)
cont = [r["token"] for r in eng.plain(prompt, 64)]
m = round(len(cont) * at)
context, last, tokens = list(prompt) + cont[:m - 1], cont[m - 1], cont[m:m + k]
drafter = eng.make_drafter(cont)
if is_hybrid(model):
    install_capture(model)
if drafter.needs_hidden:
    install_tap(model)
mode = getattr(drafter, "hidden_mode", "post-norm")
cache = make_prompt_cache(model)
with tapping(drafter.needs_hidden) as tap:
    mx.eval(prefill(model, cache, context))
    hidden = tap.hidden(mode) if tap else None
    if hidden is not None:
        mx.eval(hidden)
mx.eval([c.state for c in cache])
snapshot, rollback = CacheSnapshot(cache), VerifyRollback(model, cache)
inputs, draft = mx.array([last] + tokens, dtype=mx.uint32), Draft(list(tokens))
seq = context + [last]


def ms(t0):
    return (time.perf_counter() - t0) * 1000


def verify(vi, vd):
    rollback.before_verify()
    with capturing() as cap, tapping(drafter.needs_hidden) as tp:
        logits = model(vi[None], cache=cache)[0]
    _, bonus, _ = sampling.verify(logits, vd, len(context))
    return bonus, cap, tp


def ready(a):  # as measure_components.drafter_after_round
    start = max(1, len(context) - a - 1)
    drafter.begin(seq[:start], seq[start], hidden=hidden[:start] if hidden is not None else None)
    pre = drafter.draft(seq[start], k)
    if pre.tokens is None:
        mx.eval(pre.array)
        pre.materialize()
    drafter.update(a, pre, seq[start + 1:], hidden=hidden[start:] if hidden is not None else None)


def one(a, fused):
    ready(a)
    snapshot.restore()
    _, cap, _ = verify(inputs, draft)
    rollback.record(cap, k + 1, inputs)
    t0 = time.perf_counter()
    touched = rollback.rollback(a)
    if not fused and touched:
        mx.eval(touched)
    t_rb = ms(t0)
    t0 = time.perf_counter()
    out = drafter.draft(last, k, lazy=True) if drafter.lazy_drafts else drafter.draft(last, k)
    ri = mx.concatenate([mx.array([last], dtype=mx.uint32), out.as_array().astype(mx.uint32)])
    verify(ri, out)
    return t_rb, ms(t0)


with drafter.hold_prefix(seq[:max(0, len(context) - k - 2)], hidden=hidden):
    for a in range(k):
        one(a, False), one(a, True)  # warm-up
    rows = []
    for r in range(reps):
        a = r % k
        pair = {}
        for fused in ((False, True) if (r // k) % 2 == 0 else (True, False)):
            pair[fused] = one(a, fused)
        (rb_apart, round_apart), (build, round_fused) = pair[False], pair[True]
        rows.append((rb_apart, round_apart, build, round_fused))
x = np.array(rows)
fused_cost = x[:, 3] + x[:, 2] - x[:, 1]


def ci(v):
    h = 1.96 * v.std(ddof=1) / len(v) ** 0.5
    return f"mean {v.mean():.3f} ({v.mean() - h:.3f}…{v.mean() + h:.3f}), median {np.median(v):.3f}"


print(f"{name}, k = {k}, at {at}, {len(x)} pairs (ms)")
print(f"  round after an evaluated rollback (APART)  {ci(x[:, 1])}")
print(f"  round paying a lazy rollback (FUSED)       {ci(x[:, 3])}")
print(f"  rollback timed apart (the components')     {ci(x[:, 0])}")
print(f"  its graph building alone (FUSED)           {ci(x[:, 2])}")
print(f"  rollback as a round pays it (fused cost)   {ci(fused_cost)}")
print(f"  apart − fused cost                         {ci(x[:, 0] - fused_cost)}")
