"""``specscope roofline``: the verify cost curve, machine limits and a roofline per block.

``add_parser(sub)`` adds the command to the ``specscope`` argparse subparsers; ``roofline_data(a)`` is what it
measures (``run --roofline`` keeps it in the session). The engine runs in this process (``cli.engine``).
"""

from __future__ import annotations

from specscope.errors import SpecscopeError

from specscope.profiler.run.context import add_context_args
from specscope.profiler.cli.engine import (
    DEFAULT_PROMPT,
    add_model_args,
    check_oracle,
    open_engine,
    run_and_print,
    status_for,
)


def add_parser(sub) -> None:
    r = sub.add_parser("roofline", help="the verify cost curve, machine limits and a roofline per block")
    add_model_args(r)
    r.add_argument("--positions", type=int, default=9, help="verify forwards over n = 1..N positions (1-17, default 9)")
    r.add_argument("--num-draft-tokens", "-k", type=int, default=2, help="the headline verify covers k+1 positions")
    r.add_argument("--drafter", choices=["auto", "ngram", "draft", "mtp", "oracle", "dflash"], default="auto",
                   help="drafter whose acceptance and draft cost the division at the floor uses")
    r.add_argument("--max-tokens", type=int, default=48, help="tokens of the short speculative run for acceptance")
    r.add_argument("--no-division", action="store_true", help="skip the speculative run (no division at the floor)")
    r.add_argument("--reps", type=int, default=5, help="whole-graph repeats per n (interleaved across n)")
    r.add_argument("--block-reps", "--category-reps", dest="block_reps", type=int, default=2,
                   help="per-block ruler repeats per n (0: none; --category-reps: its old name)")
    r.add_argument("--bandwidth-mib", type=float, default=512, help="size of the bandwidth probe's array")
    r.add_argument("--matmul-n", type=int, help="size of the compute probe's square matmul (default 1024 CPU, 4096 GPU)")
    add_context_args(r, "measure at N tokens of a long document before the prompt (4096 or 4k), prefilled once and "
                        "timed on its own (README: Long context)")
    r.set_defaults(func=cmd_roofline, temp=0.0, top_p=1.0)


def status(a):
    """The status of a roofline run: JSON lines (--jsonl) or a bar counting its phases."""
    return status_for(a, "roofline", 2 + 3 + max(a.reps, a.block_reps) + 2 + (0 if a.no_division else 1))


def roofline_data(a, say=lambda m: None, partial=None) -> dict:
    """Everything ``specscope roofline`` measures, as the JSON-able dict it prints with ``--json``."""
    from specscope.profiler.analysis.roofline import build_roofline

    if not 1 <= a.positions <= 17:
        raise SpecscopeError("--positions must be between 1 and 17")
    if not 1 <= a.num_draft_tokens + 1 <= a.positions:
        raise SpecscopeError(f"-k must be between 0 and --positions − 1 ({a.positions - 1}): "
                             "the headline verify is k+1 positions")
    if a.reps < 1 or a.block_reps < 0:
        raise SpecscopeError("--reps must be >= 1 and --block-reps >= 0")
    if a.max_tokens < 4:
        raise SpecscopeError("--max-tokens must be at least 4")
    if a.bandwidth_mib <= 0 or (a.matmul_n is not None and a.matmul_n < 16):
        raise SpecscopeError("--bandwidth-mib must be positive and --matmul-n at least 16")
    check_oracle(a)
    from specscope.profiler.run.context import context_tokens, parse_size

    n_context = parse_size(a.context)
    if n_context:  # refused before the weights load: beyond the model's window or this machine's memory
        from types import SimpleNamespace

        from specscope.profiler.run.context_check import precheck

        precheck(SimpleNamespace(demo=bool(a.demo), model=a.model, max_tokens=a.max_tokens,
                                 num_draft_tokens=max(a.positions, a.num_draft_tokens)), [n_context])
    eng = open_engine(a, say)
    prompt = eng.encode(a.prompt or DEFAULT_PROMPT)
    if not prompt:
        raise SpecscopeError("the prompt encodes to no tokens")
    context_info = None
    if n_context:
        ctx = context_tokens(eng.encode, n_context, a.context_kind, a.context_file)
        say(f"prefilling {len(ctx):,} tokens of context once")
        context_info = {**eng.store_context(ctx), "kind": "file" if a.context_file else a.context_kind}
        prompt = ctx + prompt  # every forward below starts from a copy of the stored context
    sweep = (lambda pts: partial({"curve": pts, "partial": True})) if partial else None
    ins = eng.roofline_inputs(prompt, a.positions, a.reps, a.block_reps, a.bandwidth_mib, a.matmul_n, progress=say,
                              on_sweep=sweep)
    division = None
    k = a.num_draft_tokens
    if not a.no_division and k >= 1:
        name = a.drafter
        if name == "auto":
            have = eng.available_drafters()
            name = "draft" if a.draft_model and "draft" in have else ("mtp" if "mtp" in have else "ngram")
            name = "dflash" if "dflash" in have else name
        say(f"a short speculative run with {name} at k = {k} (acceptance, draft cost)")
        plain = eng.plain(prompt, a.max_tokens)
        run = eng.speculative(name, prompt, plain["tokens"], k, a.max_tokens, "instrumented")
        full = [r for r in run["rounds"] if r["drafted"] == k]
        if full:
            from specscope.profiler.analysis import stats

            acc = stats.acceptance_from_rounds([r["accepted"] for r in full], k)
            division = {"drafter": name, "k": k, "rounds": len(full), "acceptance": acc["per_position"],
                        "p": acc["p"], "tokens_per_round": acc["tokens_per_round"],
                        "t_draft_ms": stats.mean([r["draft_ms"] for r in full]),
                        "plain_t_decode_ms": stats.mean(plain["step_ms"])}
    out = build_roofline(ins["curve"], ins["costs"], ins["machine"], k=k, division=division)
    out.update(model=eng.describe()["model"], prompt_tokens=len(prompt), weight_bytes_total=ins["weight_bytes_total"],
               machine=ins["machine"], labels=ins["curve"]["labels"], verify_tokens=ins["curve"]["tokens"])
    out["notes"] += ins["cost_notes"]
    out["context_prefill"] = context_info
    kv = ins.get("kv") or {}
    if kv.get("bytes_per_context_token"):
        per, base = kv["bytes_per_context_token"], kv["step_bytes_no_context"]
        at = out.get("context") or len(prompt)
        out["attention_at_context"] = {
            "bytes_per_context_token": per, "step_bytes_no_context": base,
            "kv_share_of_step": per * at / (base + per * at),  # of a decode step's bytes at this context
            # the context at which full attention's KV reads are 10% (and 50%) of a decode step's bytes
            "context_at_10pct": 0.1 * base / (0.9 * per), "context_at_50pct": base / per}
    return out


def cmd_roofline(a) -> int:
    from specscope.profiler.analysis.roofline import format_roofline

    return run_and_print(a, "roofline", status(a), roofline_data, format_roofline)
