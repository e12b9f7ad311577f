"""Drift-controlled check of tune's T_draft: per drafter and k, the round's components timed apart, then a real
end-to-end run at k, alternating; prints the median of measured ÷ predicted round (components + rollback at the run's
accepted counts). usage: python tools/tune_components_vs_run.py [REPS]"""
import statistics as st
import sys

import numpy as np

from specscope.engine_adapter.engine import EngineParams
from specscope.engine_adapter.tune_runs import TuneEngine
from specscope.profiler.cli.bench_common import PROMPT

eng = TuneEngine.open(EngineParams(model=None, demo=True))
prompt = eng.encode(PROMPT)
N = 64
pl = eng.plain(prompt, N)
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
for name in eng.available_drafters():
    for k in (1, 2, 4):
        ratios, gaps = [], []
        for rep in range(reps):
            comp = eng.components(name, prompt, pl["tokens"], k, 8)
            rr = [r for r in eng.speculative(name, prompt, pl["tokens"], k, N, "end_to_end")["rounds"] if r["drafted"] == k]
            rb = {int(a): np.mean(v) for a, v in comp["rollback_ms"].items()}
            pred = np.mean(comp["verify_ms"]) + max(0.0, np.mean(comp["draft_ms"])) + np.mean([rb.get(r["accepted"], 0.0) if r["accepted"] < k else 0.0 for r in rr])
            meas = np.mean([r["ms"] for r in rr])
            ratios.append(meas / pred)
            gaps.append(meas - pred)
        print(f"{name} k={k}: measured/predicted round {st.median(ratios):.3f} (range {min(ratios):.3f}–{max(ratios):.3f}), gap {st.median(gaps):+.2f} ms", flush=True)
