"""The MTP head's acceptance trace against the real rounds, on the shipped demo (greedy): per prompt of the default suite,
the plain run's tokens, the trace recorded along them (one target forward over the whole continuation gives the hidden
states), and end-to-end speculative runs at k = 1..3 (hidden states from each round's own (k+1)-position verify). Per
k: E(k) walked on the trace and E(k) of the real rounds (full rounds, pooled over prompts), their difference with a 95%
percentile bootstrap over prompts (the prompts are the sampled unit; every run is deterministic), how many rounds the
walk and the run disagree on (drafted, accepted), and how many prompts' emitted tokens differ from the plain run's.
usage: python tools/mtp_trace_vs_rounds.py [CASES] [MAX_TOKENS] [DRAFTER] [DTYPE]
(defaults: every case, 64 tokens, mtp, the checkpoint's dtype; DTYPE float16 or bfloat16 casts the arithmetic)"""
import sys

import numpy as np

from specscope.engine_adapter.decode.decoding import speculative_generate
from specscope.engine_adapter.engine import Engine, EngineParams
from specscope.profiler.analysis import trace_walk
from specscope.profiler.run.suite import load_suite

cases = load_suite()["cases"]
n_cases = int(sys.argv[1]) if len(sys.argv) > 1 else len(cases)
max_tokens = int(sys.argv[2]) if len(sys.argv) > 2 else 64
drafter = sys.argv[3] if len(sys.argv) > 3 else "mtp"
dtype = sys.argv[4] if len(sys.argv) > 4 else None
ks = (1, 2, 3)
eng = Engine.open(EngineParams(model=None, demo=True, drafter=drafter, num_draft_tokens=max(ks), round_kinds="end_to_end",
                               dtype=dtype))
per: dict[int, list[tuple[int, int, int, int]]] = {k: [] for k in ks}  # k -> per prompt (trace sum, trace n, real sum, real n)
bad_rounds = {k: 0 for k in ks}
all_rounds = {k: 0 for k in ks}
bad_tokens = {k: 0 for k in ks}
agrees = []
for case in cases[:n_cases]:
    prompt = eng.encode(case["prompt"])
    plain = [r["token"] for r in eng.plain(prompt, max_tokens)]
    tr = eng.trace(prompt, plain)
    agrees.append(tr.get("target_agrees"))
    for k in ks:
        walked = trace_walk.walk(tr["A"], k)
        recs = [r for r in speculative_generate(eng.target.model, prompt, eng.make_drafter(plain), k, max_tokens,
                                                eng.sampling, round_kinds="end_to_end")]
        tokens = [recs[0]["token"]] + [t for r in recs[1:] for t in r["emitted"]]
        real = [(len(r["drafted"]), r["accepted"]) for r in recs[1:]]
        bad_tokens[k] += tokens != plain
        all_rounds[k] += len(real)
        bad_rounds[k] += sum(1 for w, r in zip(walked, real) if (w[1], w[2]) != r) + abs(len(walked) - len(real))
        tw = [a for _, d, a in walked if d == k]
        rr = [a for d, a in real if d == k]
        per[k].append((sum(tw), len(tw), sum(rr), len(rr)))
    print(f"{case['id']}: target_agrees {tr.get('target_agrees')}", flush=True)

rng = np.random.default_rng(0)
print(f"\n{drafter} on the demo ({dtype or 'checkpoint dtype'}), {len(per[ks[0]])} prompts x {max_tokens} tokens, greedy; trace target_agrees "
      f"min {min(a for a in agrees if a is not None) if any(a is not None for a in agrees) else None}")
for k in ks:
    x = np.array(per[k], dtype=float)
    e = lambda m: (1 + m[:, 0].sum() / m[:, 1].sum(), 1 + m[:, 2].sum() / m[:, 3].sum())  # noqa: E731
    et, er = e(x)
    boot = []
    for _ in range(2000):
        bt, br = e(x[rng.integers(0, len(x), len(x))])
        boot.append(bt / br - 1)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    print(f"k={k}: E trace {et:.4f}, E rounds {er:.4f}, trace/rounds - 1 = {et / er - 1:+.2%} (95% bootstrap over prompts "
          f"{lo:+.2%}..{hi:+.2%}); rounds differing from the walk {bad_rounds[k]}/{all_rounds[k]}; prompts whose "
          f"tokens differ from the plain run {bad_tokens[k]}/{len(x)}")
