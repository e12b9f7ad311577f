"""``specscope predict``: the round model as a calculator (no model, no run), the seed's division beside it."""

from __future__ import annotations

import json

from specscope.errors import SpecscopeError


def cmd_predict(a) -> int:
    from specscope.profiler.analysis import stats
    from specscope.profiler.analysis.round_model import RoundModel

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
    for name in ("t_draft_ms", "t_rollback_ms", "t_bookkeeping_ms"):
        if (getattr(a, name, None) or 0.0) < 0:
            raise SpecscopeError(f"--{name.replace('_', '-')} must be >= 0")
    m = RoundModel(E, a.t_decode_ms, a.t_verify_ms, a.t_draft_ms, getattr(a, "t_rollback_ms", None),
                   getattr(a, "t_bookkeeping_ms", None))
    d = {"k": k, "tokens_per_round": E, "t_decode_ms": m.t_decode_ms, "t_verify_ms": m.t_verify_ms,
         "t_draft_ms": m.t_draft_ms, "t_rollback_ms": m.t_rollback_ms, "t_bookkeeping_ms": m.t_bookkeeping_ms,
         "untimed": m.untimed, "formula": m.formula,
         "predicted_speedup": m.speedup, "predicted_tok_s": m.predicted_tok_s,
         "division_speedup": m.division,  # the seed's division, without rollback and bookkeeping
         "break_even_verify_ms": m.break_even_verify_ms if m.break_even_verify_ms > 0 else None,
         "break_even_multiple": m.break_even_multiple, "break_even_formula": m.break_even_formula,
         "verify_multiple": m.verify_multiple, "plain_tok_s": 1000.0 / a.t_decode_ms}
    if a.json:
        print(json.dumps(d, indent=1))
        return 0
    print(f"tokens per round E        {E:.3f}  (k={k})")
    print(f"predicted speedup         {m.speedup:.3f}×  = {m.formula}")
    if m.untimed:
        print(f"                          {', '.join(t.replace('_ms', '').replace('t_', 'T_') for t in m.untimed)} not given: "
              "a round pays them, so this is optimistic by their share (--t-rollback-ms, --t-bookkeeping-ms)")
    print(f"the seed's division       {m.division:.3f}×  = E·T_decode / (T_verify + T_draft), without rollback and bookkeeping")
    print(f"predicted tok/s           {m.predicted_tok_s:.1f}  (plain {d['plain_tok_s']:.1f})")
    print(f"verify cost               {m.verify_multiple:.2f} plain steps")
    if d["break_even_verify_ms"] is None:
        print(f"break-even verify         out of reach: {m.break_even_formula} ≤ 0 (no verify time can pay)")
    else:
        print(f"break-even verify         ≤ {m.break_even_verify_ms:.2f} ms  (≤ {m.break_even_multiple:.2f} × T_decode; "
              f"{m.break_even_formula})")
    return 0


def add_parser(sub) -> None:
    """``specscope predict`` on the ``specscope`` argparse subparsers."""
    p = sub.add_parser("predict", help="the round model as a calculator (the seed's division beside it)")
    p.add_argument("--t-decode-ms", type=float, required=True)
    p.add_argument("--t-verify-ms", type=float, required=True)
    p.add_argument("--t-draft-ms", type=float, default=0.0)
    p.add_argument("--t-rollback-ms", type=float, help="rollback per round (untimed if not given: named, not taken as 0)")
    p.add_argument("--t-bookkeeping-ms", type=float, help="work after the verify's read-back per round (untimed if not given)")
    p.add_argument("--p", type=float)
    p.add_argument("--num-draft-tokens", "-k", type=int, default=1)
    p.add_argument("--accept", help="measured per-position acceptance a1,a2,... (overrides --p and -k)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_predict)
