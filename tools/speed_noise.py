"""How this machine's speed wanders while nothing changes: one verify forward of the demo model (3 positions), again
and again on a restored cache for about 20 s; the lag correlations of the times and, for windows of 0.1-2 s, how much
the windows' mean times differ beyond what their own samples explain (the slow part: what a run's component calls and
passes, each a window of about half a second, cannot average away). usage: python tools/speed_noise.py [FORWARDS]"""
import sys
import time

import mlx.core as mx
import numpy as np
from mlx_lm.models.cache import make_prompt_cache

from specscope.engine_adapter.cache.rollback import CacheSnapshot
from specscope.engine_adapter.decode.decoding import prefill
from specscope.engine_adapter.engine import Engine, EngineParams
from specscope.profiler.cli.bench_common import PROMPT

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1500
eng = Engine.open(EngineParams(model=None, demo=True, drafter="mtp", num_draft_tokens=2))
model = eng.target.model
prompt = eng.encode(PROMPT)
cache = make_prompt_cache(model)
mx.eval(prefill(model, cache, prompt))
mx.eval([c.state for c in cache])
snapshot = CacheSnapshot(cache)
x = mx.array([prompt[-1], 5, 7], dtype=mx.uint32)[None]
times, at = [], []
start = time.perf_counter()
for _ in range(n):
    snapshot.restore()
    t0 = time.perf_counter()
    mx.eval(mx.argmax(model(x, cache=cache), axis=-1))
    times.append((time.perf_counter() - t0) * 1e3)
    at.append(t0 - start)
logt, at = np.log(np.array(times[50:])), np.array(at[50:])  # the first 50: warm-up
print(f"{len(logt)} forwards over {at[-1] - at[0]:.1f} s: median {np.exp(np.median(logt)):.2f} ms, "
      f"sd of log time {logt.std():.3f}")
print("lag correlation: " + ", ".join(f"{lag}: {np.corrcoef(logt[:-lag], logt[lag:])[0, 1]:+.2f}"
                                      for lag in (1, 2, 5, 10, 20, 40)))
for w in (0.1, 0.25, 0.5, 1.0, 2.0):
    window = ((at - at[0]) // w).astype(int)
    groups = [logt[window == j] for j in np.unique(window)]
    groups = [g for g in groups if len(g) >= 3]
    means = np.array([g.mean() for g in groups])
    own = np.mean([logt.var() / len(g) for g in groups])  # the spread the windows' own samples explain
    print(f"windows of {w:4.2f} s: their means spread {means.std():.3f} (sd of log), their own samples explain "
          f"{own ** .5:.3f}: the slow part {max(0.0, means.var() - own) ** .5:.3f}")
