"""A round's draft-to-sync span, in wall time and in the process's CPU time, marked the same way in real end-to-end
rounds and in the components' timed rounds, in one process (ABBA: a real pass, a components call).

Both sides are marked by the same wrappers: the entry of a lazy ``draft`` (a real end-to-end round's, or the
components' timed round's) and the exit of the next ``Sampling.verify`` (its one sync). CPU time (all threads:
the Python thread building the graph and MLX's stream computing it) sees work, not the waits a busy neighbour
adds, so on a shared machine it tells "more work" from "more waiting". The components' rounds are weighted by the
real pass's earlier accepted counts (a full acceptance feeds the draft model two tokens, a partial one one).
usage: python tools/round_to_sync_cpu.py [PAIRS] [K] [DRAFTER]"""
import sys
import time

import numpy as np

from specscope.engine_adapter.decode import sampling as sp
from specscope.engine_adapter.drafters import drafter as dr
from specscope.engine_adapter.engine import Engine, EngineParams
from specscope.profiler.cli.bench_common import PROMPT

pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 40
k = int(sys.argv[2]) if len(sys.argv) > 2 else 2
name = sys.argv[3] if len(sys.argv) > 3 else "draft"
tokens = 64
spans: list[tuple[float, float]] = []
open_: list = []


def now():
    return time.perf_counter(), time.process_time()


if name == "draft":
    cls = dr.DraftModelDrafter
else:
    from specscope.engine_adapter.drafters.mtp import MTPDrafter as cls  # noqa: N813
orig_draft, orig_verify = cls.draft, sp.Sampling.verify


def draft(self, last, kk, lazy=False):
    if lazy:
        open_[:] = [now()]
    return orig_draft(self, last, kk, lazy=lazy)


def verify(self, *a, **kw):
    out = orig_verify(self, *a, **kw)
    if open_:
        (w0, c0), (w1, c1) = open_[0], now()
        spans.append(((w1 - w0) * 1000, (c1 - c0) * 1000))
        open_.clear()
    return out


cls.draft, sp.Sampling.verify = draft, verify
eng = Engine.open(EngineParams(model=None, demo=True, drafter=name, num_draft_tokens=k, round_kinds="end_to_end"))
prompt = eng.encode(PROMPT)
plain = [r["token"] for r in eng.plain(prompt, tokens)]
rows = []
for i in range(pairs + 1):
    got = {}
    for what in (("real", "comp") if i % 2 == 0 else ("comp", "real")):
        spans.clear()
        if what == "real":
            recs = [r for r in eng.speculative(prompt, plain, tokens) if r["event"] == "round"]
            prior = [None] + [r["accepted"] for r in recs[:-1]]
            got["real"] = [(s, p) for s, r, p in zip(spans, recs, prior) if len(r["drafted"]) == k and p is not None]
        else:
            c = eng.components(prompt, plain, reps=6, at=(i % 4 + 0.5) / 4)
            got["comp"] = list(zip(spans[-len(c["prior_accepted"]):], c["prior_accepted"]))
    if i == 0:
        continue
    real, comp = got["real"], got["comp"]
    full_share = np.mean([p == k for _, p in real])
    row = []
    for j in (0, 1):  # wall, cpu
        r_mean = np.mean([s[j] for s, _ in real])
        c_full = np.mean([s[j] for s, p in comp if p == k])
        c_part = np.mean([s[j] for s, p in comp if p != k])
        row += [r_mean, full_share * c_full + (1 - full_share) * c_part]
    rows.append(row)
x = np.array(rows)


def ratio(a, b, label):
    lr = np.log(x[:, a] / x[:, b])
    h = 1.96 * lr.std(ddof=1) / len(lr) ** 0.5
    print(f"  {label:<34} {np.exp(lr.mean()):.3f} ({np.exp(lr.mean() - h):.3f}…{np.exp(lr.mean() + h):.3f}), "
          f"median pair {np.exp(np.median(lr)):.3f}")


print(f"{name}, k = {k}, {len(x)} pairs: draft entry to the verify's sync, real {x[:, 0].mean():.2f} ms wall "
      f"{x[:, 2].mean():.2f} ms CPU; components {x[:, 1].mean():.2f} ms wall {x[:, 3].mean():.2f} ms CPU")
ratio(0, 1, "real ÷ components, wall")
ratio(2, 3, "real ÷ components, CPU (all threads)")
