"""The same verify forward timed by the components and by the run's instrumented rounds, in one process (ABBA: an
instrumented pass, a components call): whether the components' calls run slower or faster than the passes beside
them, apart from any term of the round. Also the components' round against an end-to-end pass's full rounds.
usage: python tools/components_vs_ledger.py [PAIRS] [K] [DRAFTER]"""
import sys

import numpy as np

from specscope.engine_adapter.engine import Engine, EngineParams
from specscope.profiler.cli.bench_common import PROMPT

pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 30
k = int(sys.argv[2]) if len(sys.argv) > 2 else 2
name = sys.argv[3] if len(sys.argv) > 3 else "draft"
eng = Engine.open(EngineParams(model=None, demo=True, drafter=name, num_draft_tokens=k, round_kinds="end_to_end"))
prompt = eng.encode(PROMPT)
plain = [r["token"] for r in eng.plain(prompt, 64)]
rows = []
for i in range(pairs + 1):
    got = {}
    for what in [("led", "e2e", "comp"), ("comp", "e2e", "led")][i % 2]:
        if what == "comp":
            got[what] = eng.components(prompt, plain, reps=6, at=(i % 4 + 0.5) / 4)
        else:
            got[what] = [r for r in eng.speculative(prompt, plain, 64, round_kinds="instrumented" if what == "led"
                                                    else "end_to_end") if r["event"] == "round" and len(r["drafted"]) == k]
    if i:
        c = got["comp"]
        rows.append((np.mean(c["verify_ms"]), np.mean([r["verify_ms"] for r in got["led"]]),
                     np.mean(c["round_ms"]), np.mean([r["ms"] for r in got["e2e"]])))
x = np.array(rows)
for a, b, label in ((0, 1, "components' verify ÷ instrumented rounds' verify"),
                    (2, 3, "components' round ÷ end-to-end full round")):
    lr = np.log(x[:, a] / x[:, b])
    h = 1.96 * lr.std(ddof=1) / len(lr) ** 0.5
    print(f"{name}, k = {k}: {label}: {np.exp(lr.mean()):.3f} ({np.exp(lr.mean() - h):.3f}…{np.exp(lr.mean() + h):.3f}),"
          f" {len(lr)} triples; means {x[:, a].mean():.2f} / {x[:, b].mean():.2f} ms")
