"""What the target's rollback costs inside real end-to-end rounds, paired round by round, against the components'.

One real end-to-end pass (the engine's generator) with every other round's rollback evaluated at once and timed
(``E`` rounds: the wrapper around ``VerifyRollback.rollback`` evaluates what it set), the others left lazy as the
engine leaves them (``L`` rounds: the next round's one sync pays it). So an ``E`` round's sync also computes the
``L`` round's rollback before it, and an ``L`` round's sync none: per pair of neighbouring rounds,

    fused = (E round − its rollback timed apart) − L round

is what a rollback adds to the one sync of a real round, and ``apart`` (the E round's own timed rollback) what it
costs evaluated apart, as the components time it. A components call alternates with each pass (ABBA) for the
components' own rollback figure (by the pass's accepted counts). Only full rounds with a partial acceptance on both
sides count (a full acceptance rolls nothing back).
usage: python tools/rollback_in_round.py [PASSES] [K] [DRAFTER]"""
import sys
import time

import mlx.core as mx
import numpy as np

from specscope.engine_adapter.cache import rollback as rb
from specscope.engine_adapter.engine import Engine, EngineParams
from specscope.profiler.cli.bench_common import PROMPT

passes = int(sys.argv[1]) if len(sys.argv) > 1 else 20
k = int(sys.argv[2]) if len(sys.argv) > 2 else 2
name = sys.argv[3] if len(sys.argv) > 3 else "draft"
tokens = 64
state = {"on": False, "r": 0, "apart": {}}
orig = rb.VerifyRollback.rollback


def rollback(self, accepted):
    out = orig(self, accepted)
    if state["on"]:
        r = state["r"]
        if r % 2 == 1:  # an E round: evaluated now, timed
            t0 = time.perf_counter()
            if out:
                mx.eval(out)
            state["apart"][r] = (time.perf_counter() - t0) * 1000
            out = []
        state["r"] = r + 1
    return out


rb.VerifyRollback.rollback = rollback
eng = Engine.open(EngineParams(model=None, demo=True, drafter=name, num_draft_tokens=k, round_kinds="end_to_end"))
prompt = eng.encode(PROMPT)
plain = [r["token"] for r in eng.plain(prompt, tokens)]
fused, apart, comp_rb, base = [], [], [], []
for i in range(passes + 1):
    for what in (("real", "comp") if i % 2 == 0 else ("comp", "real")):
        if what == "comp":
            c = eng.components(prompt, plain, reps=6, at=(i % 4 + 0.5) / 4)
            continue
        state.update(on=True, r=0, apart={})
        recs = [r for r in eng.speculative(prompt, plain, tokens) if r["event"] == "round"]
        state["on"] = False
    if i == 0:
        continue
    f, a, b = [], [], []
    for r in range(1, len(recs) - 1, 2):  # (L round r-1, E round r): E's sync computes L's rollback
        lo, e = recs[r - 1], recs[r]
        if len(lo["drafted"]) != k or len(e["drafted"]) != k or lo["accepted"] == k or e["accepted"] == k:
            continue
        # the L round before r-1 was an E round (its rollback already evaluated): r-1's sync computes none
        f.append(e["ms"] - state["apart"][r] - lo["ms"])
        a.append(state["apart"][r])
        b.append(lo["ms"])
    if f:
        fused.append(np.mean(f))
        apart.append(np.mean(a))
        base.append(np.mean(b))
        partial = [a for a in c["rollback_ms"] if int(a) < k]
        comp_rb.append(np.mean([x for a in partial for x in c["rollback_ms"][a]]))


def ci(xs):
    xs = np.array(xs)
    h = 1.96 * xs.std(ddof=1) / len(xs) ** 0.5
    return f"{xs.mean():.3f} ({xs.mean() - h:.3f}…{xs.mean() + h:.3f})"


print(f"{name}, k = {k}, {len(fused)} passes (partial acceptances only; ms, mean with its 95% interval over passes)")
print(f"  an L round (no rollback in its sync)           {ci(base)}")
print(f"  a rollback inside the next round's sync (fused) {ci(fused)}")
print(f"  the same rollback evaluated apart (E rounds)    {ci(apart)}")
print(f"  the components' rollback (apart, partial a)     {ci(comp_rb)}")
print(f"  apart − fused                                   {ci(np.array(apart) - np.array(fused))}")
print(f"  components' − fused                             {ci(np.array(comp_rb) - np.array(fused))}")
