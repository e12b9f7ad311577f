"""The run's components against the run's own end-to-end rounds, in one process, drift controlled: a real
speculative pass (the engine's generator, end to end) and a components call (at another point of the case each time),
alternating in ABBA order; per pair, the pass's mean full round against the components' round + bookkeeping + rollback
(each weighted by the pass's own accepted counts). Prints the geometric mean of real ÷ components with its 95%
interval. usage: python tools/run_components_vs_rounds.py DRAFTER [PAIRS] [K] (DRAFTER: mtp, draft, ngram, oracle:P)"""
import sys
from collections import Counter

import numpy as np

from specscope.engine_adapter.engine import Engine, EngineParams
from specscope.profiler.cli.bench_common import PROMPT

name = sys.argv[1] if len(sys.argv) > 1 else "mtp"
pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 80
k, tokens = (int(sys.argv[3]) if len(sys.argv) > 3 else 2), 64
drafter, _, oracle_p = name.partition(":")
eng = Engine.open(EngineParams(model=None, demo=True, drafter=drafter, oracle_p=float(oracle_p or 0.75),
                               num_draft_tokens=k, round_kinds="end_to_end"))
prompt = eng.encode(PROMPT)
plain = [r["token"] for r in eng.plain(prompt, tokens)]
real, comp = [], []
for i in range(pairs + 1):
    rounds, c = [], {}
    for what in (("real", "comp") if i % 2 == 0 else ("comp", "real")):
        if what == "real":
            rounds = [(r["accepted"], r["ms"]) for r in eng.speculative(prompt, plain, tokens)
                      if r["event"] == "round" and len(r["drafted"]) == k]
        else:
            c = eng.components(prompt, plain, reps=2, at=(i % 4 + 0.5) / 4)
    if i == 0:  # the first pair: warm-up
        continue
    counts = Counter(a for a, _ in rounds)
    total = sum(counts.values())
    by_prior: dict[int, list[float]] = {}
    for a, round_ms, book_ms in zip(c["prior_accepted"], c["round_ms"], c["bookkeeping_ms"]):
        by_prior.setdefault(a, []).append(round_ms + book_ms)
    predicted = sum(n / total * (np.mean(by_prior[a]) + (np.mean(c["rollback_ms"][str(a)]) if a < k else 0.0))
                    for a, n in counts.items())
    real.append(np.mean([ms for _, ms in rounds]))
    comp.append(predicted)
log_ratio = np.log(np.array(real) / np.array(comp))
half = 1.96 * log_ratio.std(ddof=1) / len(log_ratio) ** 0.5
print(f"{name}, k = {k}: real round {np.mean(real):.2f} ms, components {np.mean(comp):.2f} ms; real ÷ components "
      f"{np.exp(log_ratio.mean()):.3f} ({np.exp(log_ratio.mean() - half):.3f}…{np.exp(log_ratio.mean() + half):.3f}), "
      f"{len(log_ratio)} pairs")
