"""The hidden states the MTP head is fed, trace against rounds, on the shipped demo (greedy): the trace's come from one
target forward over the whole continuation, a real round's from its own (k+1)-position verify forward. Per position of
the first CASES prompts' plain output, the round's vector (runs at k = 1, 2, 3) against the trace's: how many are
bitwise equal, and the largest absolute and relative difference.
usage: python tools/mtp_hidden_trace_vs_rounds.py [CASES] [DTYPE]   (defaults: 6 cases, the checkpoint's dtype)"""
import sys

import mlx.core as mx
import numpy as np

from specscope.engine_adapter.decode.decoding import speculative_generate
from specscope.engine_adapter.engine import Engine, EngineParams
from specscope.engine_adapter.measure.acceptance_trace import record_trace
from specscope.profiler.run.suite import load_suite

n_cases = int(sys.argv[1]) if len(sys.argv) > 1 else 6
dtype = sys.argv[2] if len(sys.argv) > 2 else None
eng = Engine.open(EngineParams(model=None, demo=True, drafter="mtp", num_draft_tokens=3, dtype=dtype))


def recording(drafter, into: dict, trace: bool):
    """Wrap the drafter's update so the hidden states it is fed are kept by continuation position."""
    orig, pos = drafter.update, [0]

    def update(accepted, draft, emitted, hidden=None):
        n = 1 if trace else accepted + 1  # the trace feeds one position a step (a round that accepted nothing)
        h = np.array(hidden[:n].astype(mx.float32))
        for i in range(n):
            into[pos[0] + i] = h[i]
        pos[0] += n
        return orig(accepted, draft, emitted, hidden=hidden)

    drafter.update = update
    return drafter


worst = worst_rel = 0.0
same = total = 0
for case in load_suite()["cases"][:n_cases]:
    prompt = eng.encode(case["prompt"])
    plain = [r["token"] for r in eng.plain(prompt, 64)]
    traced: dict[int, np.ndarray] = {}
    record_trace(eng.target.model, prompt, plain, recording(eng.make_drafter(plain), traced, True), 4, sampling=eng.sampling)
    for k in (1, 2, 3):
        fed: dict[int, np.ndarray] = {}
        list(speculative_generate(eng.target.model, prompt, recording(eng.make_drafter(plain), fed, False), k, 64,
                                  eng.sampling, round_kinds="end_to_end"))
        for p, h in fed.items():
            if p in traced:
                diff = float(np.abs(h - traced[p]).max())
                worst, worst_rel = max(worst, diff), max(worst_rel, diff / float(np.abs(traced[p]).max()))
                same += diff == 0.0
                total += 1
print(f"mtp hidden states, demo ({dtype or 'checkpoint dtype'}), {n_cases} prompts x 64 tokens, k = 1..3: {total} "
      f"positions, {same} bitwise equal; max |diff| {worst:.3g}, max |diff| / max |h| {worst_rel:.3g}")
