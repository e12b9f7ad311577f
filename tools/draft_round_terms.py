"""A draft-model round's terms, as real end-to-end rounds pay them and as the components time them, in one process.

Three things alternate (each order of the three in turn, drift controlled): a real end-to-end pass (the engine's
generator, rollback left lazy as it runs it), the same pass with the target's rollback evaluated and timed at once
(what the components do), and a components call. The real passes are timed at the seams of ``speculative_generate``
by wrapping the methods it calls (the drafter's ``draft`` and ``update``, ``Sampling.verify``,
``VerifyRollback.rollback``), only while a real pass runs. Per iteration, for the full rounds:

- ``to sync``: draft entry to the verify's read-back (components: ``round_ms``);
- ``after``: the read-back to the round's end (components: ``bookkeeping_ms``);
- ``rollback``: the eager pass's timed rollback (components: ``rollback_ms``, by the pass's accepted counts);

and real ÷ components for each, geometric mean with its 95% interval over the iterations.
usage: python tools/draft_round_terms.py [ITERS] [K] [DRAFTER]"""
import sys
import time
from collections import Counter

import mlx.core as mx
import numpy as np

from specscope.engine_adapter.cache import rollback as rb
from specscope.engine_adapter.decode import sampling as sp
from specscope.engine_adapter.drafters import drafter as dr
from specscope.engine_adapter.engine import Engine, EngineParams
from specscope.profiler.cli.bench_common import PROMPT

iters = int(sys.argv[1]) if len(sys.argv) > 1 else 30
k = int(sys.argv[2]) if len(sys.argv) > 2 else 2
name = sys.argv[3] if len(sys.argv) > 3 else "draft"
tokens = 64
state = {"on": False, "eager": False, "marks": []}


def wrap(cls, meth, tag, after=True):
    orig = getattr(cls, meth)

    def f(self, *a, **kw):
        if state["on"] and not after:
            state["marks"].append((tag, time.perf_counter()))
        out = orig(self, *a, **kw)
        if state["on"] and after:
            if state["eager"] and tag == "rolled":
                t0 = time.perf_counter()
                if out:
                    mx.eval(out)
                state["marks"].append(("rb_ms", (time.perf_counter() - t0) * 1000))
                out = []
            state["marks"].append((tag, time.perf_counter()))
        return out
    setattr(cls, meth, f)


drafter_cls = {"draft": dr.DraftModelDrafter}.get(name)
if drafter_cls is None:
    from specscope.engine_adapter.drafters.mtp import MTPDrafter as drafter_cls  # noqa: N813
wrap(drafter_cls, "draft", "draft_in", after=False)
wrap(drafter_cls, "draft", "drafted")
wrap(sp.Sampling, "verify", "verified")
wrap(rb.VerifyRollback, "rollback", "rolled")

eng = Engine.open(EngineParams(model=None, demo=True, drafter=name, num_draft_tokens=k, round_kinds="end_to_end"))
prompt = eng.encode(PROMPT)
plain = [r["token"] for r in eng.plain(prompt, tokens)]


def real(eager: bool):
    state.update(on=True, eager=eager, marks=[])
    recs = [r for r in eng.speculative(prompt, plain, tokens) if r["event"] == "round"]
    state["on"] = False
    marks, rounds, i = state["marks"], [], 0
    for r in recs:  # each round's marks in order: draft_in, drafted, verified, rolled(, rb_ms)
        m = {}
        while i < len(marks) and (not m or marks[i][0] != "draft_in"):
            m[marks[i][0]] = marks[i][1]
            i += 1
        if len(r["drafted"]) != k:
            continue
        to_sync = (m["verified"] - m["draft_in"]) * 1000
        rounds.append({"a": r["accepted"], "ms": r["ms"], "to_sync": to_sync, "after": r["ms"] - to_sync,
                       "build": (m["drafted"] - m["draft_in"]) * 1000, "rb": m.get("rb_ms", 0.0)})
    return rounds


rows = []
orders = [("lazy", "eager", "comp"), ("eager", "comp", "lazy"), ("comp", "lazy", "eager"),
          ("comp", "eager", "lazy"), ("lazy", "comp", "eager"), ("eager", "lazy", "comp")]
for it in range(iters + 1):
    got = {}
    for what in orders[it % len(orders)]:
        if what == "comp":
            got[what] = eng.components(prompt, plain, reps=6, at=(it % 4 + 0.5) / 4)
        else:
            got[what] = real(what == "eager")
    if it == 0:
        continue
    lazy, eager, c = got["lazy"], got["eager"], got["comp"]
    counts = Counter(r["a"] for r in lazy)
    n = sum(counts.values())

    def by_a(key):  # the components' per-a means, weighted by the real pass's accepted counts
        per = {}
        for a, x in zip(c["prior_accepted"], c[key]):
            per.setdefault(a, []).append(x)
        return sum(cnt / n * np.mean(per[a]) for a, cnt in counts.items())
    c_rb = sum(cnt / n * (np.mean(c["rollback_ms"][str(a)]) if a < k else 0.0) for a, cnt in counts.items())
    mean = lambda rs, key: float(np.mean([r[key] for r in rs]))  # noqa: E731
    rows.append({
        "real_ms": mean(lazy, "ms"), "eager_ms": mean(eager, "ms"),
        "real_to_sync": mean(lazy, "to_sync"), "real_after": mean(lazy, "after"), "real_build": mean(lazy, "build"),
        "eager_to_sync": mean(eager, "to_sync"), "eager_after": mean(eager, "after") - mean(eager, "rb"),
        "eager_rb": mean(eager, "rb"),
        "comp_round": by_a("round_ms"), "comp_book": by_a("bookkeeping_ms"), "comp_rb": c_rb,
        "comp_verify": float(np.mean(c["verify_ms"])), "comp_draft": by_a("draft_ms"),
    })


def ratio(num, den, label):
    x = np.log(np.array([r[num] if isinstance(num, str) else num(r) for r in rows]) /
               np.array([r[den] if isinstance(den, str) else den(r) for r in rows]))
    h = 1.96 * x.std(ddof=1) / len(x) ** 0.5
    print(f"  {label:<58} {np.exp(x.mean()):.3f} ({np.exp(x.mean() - h):.3f}…{np.exp(x.mean() + h):.3f})")


print(f"{name}, k = {k}, {len(rows)} iterations; means (ms):")
for key in rows[0]:
    print(f"  {key:<14} {np.mean([r[key] for r in rows]):7.3f}")
print("ratios (geometric mean, 95% interval):")
comp_total = lambda r: r["comp_round"] + r["comp_book"] + r["comp_rb"]  # noqa: E731
ratio("real_ms", comp_total, "real round ÷ components' round")
ratio("eager_ms", comp_total, "eager-rollback round ÷ components' round")
ratio("real_ms", "eager_ms", "real (lazy rollback) ÷ eager-rollback round")
ratio("real_to_sync", "comp_round", "real to sync ÷ components' round_ms")
ratio("eager_to_sync", "comp_round", "eager to sync ÷ components' round_ms")
ratio("real_after", lambda r: r["comp_book"], "real after sync (lazy rollback) ÷ components' bookkeeping")
ratio("eager_after", "comp_book", "eager after sync less its rollback ÷ components' bookkeeping")
ratio("eager_rb", "comp_rb", "eager rollback ÷ components' rollback")
