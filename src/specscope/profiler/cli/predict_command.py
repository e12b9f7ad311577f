"""``specscope predict``: the division as a calculator (no model, no run)."""

from __future__ import annotations

import json

from specscope.errors import SpecscopeError


def cmd_predict(a) -> int:
    from specscope.profiler.analysis import stats

    if a.accept:
        try:
            acc = [float(x) for x in a.accept.split(",")]
        except ValueError:
            raise SpecscopeError("--accept takes comma-separated fractions, e.g. 0.8,0.6,0.4") from None
        if any(not 0 <= x <= 1 for x in acc) or any(b > c for c, b in zip(acc, acc[1:])):
            raise SpecscopeError("--accept values must be in [0, 1] and non-increasing (a_i ≥ a_i+1)")
        k, E = len(acc), 1 + sum(acc)
    else:
        if a.p is None:
            raise SpecscopeError("give --p P (per-token acceptance) or --accept a1,a2,...")
        if not 0 <= a.p <= 1:
            raise SpecscopeError("--p must be between 0 and 1")
        k = a.num_draft_tokens
        E = stats.tokens_per_round_from_p(a.p, k)
    for name in ("t_decode_ms", "t_verify_ms"):
        if getattr(a, name) <= 0:
            raise SpecscopeError(f"--{name.replace('_', '-')} must be positive")
    if a.t_draft_ms < 0:
        raise SpecscopeError("--t-draft-ms must be >= 0")
    d = stats.divide(a.t_decode_ms, a.t_verify_ms, a.t_draft_ms, E).to_dict()
    d["k"] = k
    d["plain_tok_s"] = 1000.0 / a.t_decode_ms
    if a.json:
        print(json.dumps(d, indent=1))
    else:
        print(f"tokens per round E        {d['tokens_per_round']:.3f}  (k={k})")
        print(f"predicted speedup         {d['predicted_speedup']:.3f}×")
        print(f"predicted tok/s           {d['predicted_tok_s']:.1f}  (plain {d['plain_tok_s']:.1f})")
        print(f"verify cost               {d['verify_multiple']:.2f} plain steps")
        print(f"break-even verify         ≤ {d['break_even_verify_ms']:.2f} ms  (≤ {d['break_even_multiple']:.2f} × T_decode)")
    return 0
