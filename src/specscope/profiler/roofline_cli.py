"""``specscope roofline``, ``specscope tune`` and ``specscope bench tune``: parsers and commands.

``add_parsers(sub)`` adds both commands to the ``specscope`` argparse subparsers; ``bench_tune(a)`` is
the benchmark (same result shape as ``profiler/bench.py``'s). Both commands run the engine in this
process (as ``bench`` does), through ``engine_adapter.tune_runs.TuneEngine``; MLX is imported only when
a command runs. ``python -m specscope.profiler.roofline_cli roofline --demo`` works on its own too.
"""

from __future__ import annotations

import argparse
import json
import sys

from specscope.errors import SpecscopeError

from .cli import _fail, add_download_arg, resolve_model_args
from .context import add_context_args
from .intervals import draft_time_text
from .progress import add_progress_args
from .session import finite_json

DEFAULT_PROMPT = ("Explain in two short paragraphs why a verification pass over several tokens can cost as much as "
                  "decoding them.")
TUNE_TARGET = ("<=", 0.05)


def _jsonl_status(message: str) -> None:
    print(json.dumps({"status": message}), flush=True)


def _say(a):
    """Status for a program (--jsonl), else a progress bar on a terminal (nothing when piped unless --progress).

    The bar counts the command's phases; the time left is estimated from the phases done so far."""
    if a.jsonl:
        return _jsonl_status
    from .progress import PhaseProgress, progress_wanted

    name = "roofline" if a.func is cmd_roofline else "tune"
    if name == "roofline":
        expected = 2 + 3 + max(a.reps, a.category_reps) + 2 + (0 if a.no_division else 1)
    else:
        n_drafters = len([d for d in a.drafters.split(",") if d.strip()]) if a.drafters else 3
        expected = 2 + 2 + 4 * n_drafters + (a.reps or 9)  # unset reps: 6-15 confirmation repeats, about 9
    return PhaseProgress(name, expected, enabled=progress_wanted(a))


def _done(say) -> None:
    if hasattr(say, "close"):
        say.close()


def _add_model_args(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument("--model", help="a model folder or a cached repo id (org/name[@revision])")
    src.add_argument("--demo", action="store_true", help="the synthetic demo model")
    p.add_argument("--draft-model", help="a draft model folder or cached repo id (same tokenizer)")
    p.add_argument("--mtp-weights", help="folder or cached repo id with the original checkpoint's mtp.* tensors")
    p.add_argument("--mtp-hidden", choices=["post-norm", "pre-norm"], default="post-norm")
    p.add_argument("--oracle-p", type=float, default=0.75, help="oracle what-if: chance each draft token is right")
    p.add_argument("--oracle-draft-ms", type=float, default=0.0, help="oracle what-if: draft cost per round")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--prompt", help=f"the prompt (default: the first case(s) of the suite; roofline: {DEFAULT_PROMPT[:30]}…)")
    p.add_argument("--allow-oversize", action="store_true")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    add_progress_args(p)
    p.add_argument("--jsonl", action="store_true",
                   help="JSON lines on stdout for a program (the app): {\"status\": …} as it goes, then the result")
    add_download_arg(p)


def add_parsers(sub) -> None:
    r = sub.add_parser("roofline", help="the verify cost curve, machine limits and a roofline per category")
    _add_model_args(r)
    r.add_argument("--positions", type=int, default=9, help="verify forwards over n = 1..N positions (1-17, default 9)")
    r.add_argument("--num-draft-tokens", "-k", type=int, default=2, help="the headline verify covers k+1 positions")
    r.add_argument("--drafter", choices=["auto", "ngram", "draft", "mtp", "oracle"], default="auto",
                   help="drafter whose acceptance and draft cost the division at the floor uses")
    r.add_argument("--max-tokens", type=int, default=48, help="tokens of the short speculative run for acceptance")
    r.add_argument("--no-division", action="store_true", help="skip the speculative run (no division at the floor)")
    r.add_argument("--reps", type=int, default=5, help="whole-graph repeats per n (interleaved across n)")
    r.add_argument("--category-reps", type=int, default=2, help="per-category ruler repeats per n (0: none)")
    r.add_argument("--bandwidth-mib", type=float, default=512, help="size of the bandwidth probe's array")
    r.add_argument("--matmul-n", type=int, help="size of the compute probe's square matmul (default 1024 CPU, 4096 GPU)")
    add_context_args(r, "measure at N tokens of a long document before the prompt (4096 or 4k), prefilled once and "
                        "timed on its own (README: Long context)")
    r.set_defaults(func=cmd_roofline, temp=0.0, top_p=1.0)

    t = sub.add_parser("tune", help="predict the speedup of every k with every drafter, confirm the best, recommend one")
    _add_model_args(t)
    t.add_argument("--k-max", type=int, default=4, help="the speculative run that measures acceptance drafts K_max (1-16)")
    t.add_argument("--max-tokens", type=int, default=64, help="new tokens per run")
    t.add_argument("--drafters", help="comma-separated drafters (default: every one this model has; 'oracle' adds the what-if)")
    t.add_argument("--reps", type=int, default=None,
                   help="confirmation repeats (plain and speculative interleaved; default: 6 to 15, until each measured "
                        "speedup's median is known to ±5%%)")
    t.add_argument("--confirm", choices=["best", "all"], default="best",
                   help="confirm each drafter's best predicted k and its neighbours (default), or every k")
    t.add_argument("--suite", help="prompt suite JSON (default: the built-in suite)")
    t.add_argument("--cases", type=int, default=1, help="prompts from the suite (round-robin across categories)")
    t.add_argument("--temp", type=float, default=0.0)
    t.add_argument("--top-p", type=float, default=1.0)
    t.set_defaults(func=cmd_tune)

    from .trace_cli import add_parser as add_trace_parser

    add_trace_parser(sub)  # ``specscope trace``: acceptance traces for a saved session's cases


# -- shared ------------------------------------------------------------------------------------------------------------

def _params(a, drafter: str = "auto"):
    from specscope.engine_adapter.engine import EngineParams

    return EngineParams(model=a.model, demo=bool(a.demo), drafter=drafter, draft_model=a.draft_model,
                        mtp_weights=a.mtp_weights, mtp_hidden=a.mtp_hidden, oracle_p=a.oracle_p,
                        oracle_draft_ms=a.oracle_draft_ms, temp=a.temp, top_p=a.top_p, seed=a.seed,
                        allow_oversize=a.allow_oversize)


def _check_oracle(a) -> None:
    if not 0.0 <= a.oracle_p <= 1.0:
        raise SpecscopeError("--oracle-p must be between 0 and 1")
    if a.oracle_draft_ms < 0:
        raise SpecscopeError("--oracle-draft-ms must be >= 0")


def _open(a, say):
    from specscope.engine_adapter.tune_runs import TuneEngine

    if not a.model and not a.demo:
        raise SpecscopeError("give a model (--model, a folder or a cached repo id) or --demo")
    resolve_model_args(a)
    return TuneEngine.open(_params(a), status=say)


# -- roofline -------------------------------------------------------------------------------------------------------

def roofline_data(a, say=lambda m: None, partial=None) -> dict:
    """Everything ``specscope roofline`` measures, as the JSON-able dict it prints with ``--json``."""
    from .roofline import build_roofline

    if not 1 <= a.positions <= 17:
        raise SpecscopeError("--positions must be between 1 and 17")
    if not 1 <= a.num_draft_tokens + 1 <= a.positions:
        raise SpecscopeError(f"-k must be between 0 and --positions − 1 ({a.positions - 1}): "
                             "the headline verify is k+1 positions")
    if a.reps < 1 or a.category_reps < 0:
        raise SpecscopeError("--reps must be >= 1 and --category-reps >= 0")
    if a.max_tokens < 4:
        raise SpecscopeError("--max-tokens must be at least 4")
    if a.bandwidth_mib <= 0 or (a.matmul_n is not None and a.matmul_n < 16):
        raise SpecscopeError("--bandwidth-mib must be positive and --matmul-n at least 16")
    _check_oracle(a)
    from .context import context_tokens, parse_size

    n_context = parse_size(a.context)
    if n_context:  # refused before the weights load: beyond the model's window or this machine's memory
        from types import SimpleNamespace

        from .context_check import precheck

        precheck(SimpleNamespace(demo=bool(a.demo), model=a.model, max_tokens=a.max_tokens,
                                 num_draft_tokens=max(a.positions, a.num_draft_tokens)), [n_context])
    eng = _open(a, say)
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
    ins = eng.roofline_inputs(prompt, a.positions, a.reps, a.category_reps, a.bandwidth_mib, a.matmul_n, progress=say,
                              on_sweep=sweep)
    division = None
    k = a.num_draft_tokens
    if not a.no_division and k >= 1:
        name = a.drafter
        if name == "auto":
            have = eng.available_drafters()
            name = "draft" if a.draft_model and "draft" in have else ("mtp" if "mtp" in have else "ngram")
        say(f"a short speculative run with {name} at k = {k} (acceptance, draft cost)")
        plain = eng.plain(prompt, a.max_tokens)
        run = eng.speculative(name, prompt, plain["tokens"], k, a.max_tokens, "instrumented")
        full = [r for r in run["rounds"] if r["drafted"] == k]
        if full:
            from . import stats

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
        ctx = out.get("context") or len(prompt)
        out["attention_at_context"] = {
            "bytes_per_context_token": per, "step_bytes_no_context": base,
            "kv_share_of_step": per * ctx / (base + per * ctx),  # of a decode step's bytes at this context
            # the context at which full attention's KV reads are 10% (and 50%) of a decode step's bytes
            "context_at_10pct": 0.1 * base / (0.9 * per), "context_at_50pct": base / per}
    return out


def cmd_roofline(a) -> int:
    from .roofline import format_roofline

    partial = (lambda roof: print(json.dumps({"roofline": finite_json(roof)}), flush=True)) if a.jsonl else None
    say = _say(a)
    try:
        out = roofline_data(a, say, partial)
    finally:
        _done(say)
    if a.jsonl:
        print(json.dumps({"roofline": finite_json(out)}), flush=True)
    else:
        print(json.dumps(finite_json(out), indent=1) if a.json else format_roofline(out))
    return 0


# -- tune -------------------------------------------------------------------------------------------------------------

def _prompts(a, eng) -> list[list[int]]:
    if a.prompt:
        return [eng.encode(a.prompt)]
    from .suite import load_suite, take_cases

    return [eng.encode(c["prompt"]) for c in take_cases(load_suite(a.suite)["cases"], a.cases)]


def tune_data(a, say=lambda m: None, partial=None) -> dict:
    from .tune import run_tune

    if not 1 <= a.k_max <= 16:
        raise SpecscopeError("--k-max must be between 1 and 16")
    if a.max_tokens < 4:
        raise SpecscopeError("--max-tokens must be at least 4")
    if a.reps is not None and a.reps < 1:
        raise SpecscopeError("--reps must be at least 1")
    if a.cases is not None and a.cases < 1:
        raise SpecscopeError("--cases must be at least 1")
    if a.temp < 0 or not 0 < a.top_p <= 1:
        raise SpecscopeError("--temp must be >= 0 and --top-p in (0, 1]")
    _check_oracle(a)
    drafters = [d.strip() for d in a.drafters.split(",") if d.strip()] if a.drafters else None
    if drafters is not None and not drafters:
        raise SpecscopeError("--drafters lists no drafter")
    if a.suite and not a.prompt:
        from .suite import load_suite

        load_suite(a.suite)  # fail fast, before loading a model
    eng = _open(a, say)
    out = run_tune(eng, _prompts(a, eng), k_max=a.k_max, max_tokens=a.max_tokens, drafters=drafters, reps=a.reps,
                   confirm=a.confirm, progress=say, on_update=partial)
    return out


AGREEMENT_MARK = {"agrees": "ok", "off": "OFF", "too_noisy": "(noisy)"}


def format_tune(res: dict) -> str:
    lines = [f"tune: {res.get('model')}, {res['regime']}, K_max {res['k_max']}, {res['max_tokens']} tokens × "
             f"{res['prompts']} prompt(s), {res['confirm_reps']} confirmation repeat(s)",
             f"T_decode {res['t_decode_ms']:.1f} ms ({res['plain_tok_s'] or 0:.1f} tok/s plain); verify at n = "
             + ", ".join(f"{n}: {v:.1f}" for n, v in res["verify_ms"].items()) + f" ms (context {res['verify_context']})",
             "",
             " drafter   k      E   T_verify  T_draft   predicted (95% CI)      measured (95% CI)       error"]
    for r in res["rows"]:
        lo, hi = r["predicted_ci95"]
        m = r["measured_speedup"]
        mr = r.get("measured_range")
        mr = r.get("measured_ci95") or mr
        meas = (f"{m:.3f}× ({mr[0]:.2f}–{mr[1]:.2f})" if mr else f"{m:.3f}×") if m is not None else "—"
        ag = r.get("agreement") or {}
        err = (f"{r['prediction_error']:+.1%} {AGREEMENT_MARK.get(ag.get('state'), '')}".rstrip()
               if r["prediction_error"] is not None else "")
        lines.append(f" {r['drafter']:<8} {r['k']:>2} {r['tokens_per_round']:6.2f} {r['t_verify_ms']:9.1f}"
                     f" {draft_time_text(r['t_draft_ms'], spec='.1f'):>8}   "
                     f"{r['predicted_speedup']:.3f}× ({lo:.2f}–{hi:.2f})    {meas:<22} {err:>7}")
    lines.append("")
    for name, d in res["drafters"].items():
        lines.append(f"acceptance a_i, {d['label']} ({d['rounds']} rounds at K_max): "
                     + " ".join(f"{x:.2f}" for x in d["acceptance"]))
        t = d.get("trace")
        if t:
            e = lambda xs: " ".join("—" if x is None else f"{x:.2f}" for x in xs)  # noqa: E731
            cost = f", recorded in {t['cost_ms'] / 1000:.1f} s" if t.get("cost_ms") else ""
            lines.append(f"  trace{' (an estimate)' if t.get('estimate') else ''}: {t['positions']} positions{cost}; "
                         f"E(k) walked: {e(t['tokens_per_round'])}; from the K_max rounds it would read: "
                         f"{e(t['tokens_per_round_k_max_rounds'])}")
    confirmed = [r for r in res["rows"] if r.get("agreement")]
    if confirmed:
        lines += ["", f"confirmation: {res['confirm_reps']} repeats ({res.get('confirm_reps_rule', 'fixed')}); "
                  "the measured speedup is the median of per-repeat ratios, its 95% interval distribution-free"]
        lines += [f"  {r['drafter']} k={r['k']}: {r['agreement']['text']}" for r in confirmed]
    lines += ["", f"assumption: {res['assumption']}", "", f"recommendation: {res['recommendation']['text']}"]
    return "\n".join(lines)


def cmd_tune(a) -> int:
    partial = (lambda res: print(json.dumps({"tune": finite_json(res)}), flush=True)) if a.jsonl else None
    say = _say(a)
    try:
        out = tune_data(a, say, partial)
    finally:
        _done(say)
    if a.jsonl:
        print(json.dumps({"tune": finite_json(out)}), flush=True)
    else:
        print(json.dumps(finite_json(out), indent=1) if a.json else format_tune(out))
    return 0


# -- bench tune -------------------------------------------------------------------------------------------------------

def bench_tune(a) -> dict:
    """Tune's prediction against its own confirmation runs, on the demo (or --model) with every real drafter it has
    (E(k) from their acceptance traces: bursty, content-dependent, not the i.i.d. oracle, which would hide a bias
    in E(k)), every k = 1..max(4, -k) confirmed, repeats until each median is known to ±5%; the figure is the largest
    |error|, and the result says how many settings agree within 5%, are off, or were too noisy to tell."""
    from specscope.engine_adapter.engine import EngineParams
    from specscope.engine_adapter.tune_runs import TuneEngine

    from .bench import PROMPT
    from .tune import run_tune

    k_max = max(4, getattr(a, "num_draft_tokens", 2) or 2)
    params = EngineParams(model=getattr(a, "model", None), demo=not getattr(a, "model", None))
    eng = TuneEngine.open(params)
    prompt = eng.encode(getattr(a, "prompt", None) or PROMPT)
    # --pairs below bench's default of 5 fixes the repeats (a quick look); otherwise repeat until ±5%
    res = run_tune(eng, [prompt], k_max=k_max, max_tokens=a.max_tokens, reps=a.pairs if a.pairs < 5 else None,
                   confirm="all")
    confirmed = [r for r in res["rows"] if r["prediction_error"] is not None]
    if not confirmed:
        raise SpecscopeError("tune: no confirmation run was measured")
    errs = [abs(r["prediction_error"]) for r in confirmed]
    states = [(r.get("agreement") or {}).get("state") for r in confirmed]
    op, target = TUNE_TARGET
    value = max(errs)
    return {
        "benchmark": "tune",
        "ratio": value,
        "ratio_min": min(errs),
        "ratio_max": value,
        "median_ci95": None,
        "stable_to_1pct": False,
        "pairs": res["confirm_reps"],
        "target": f"{op} {target}",
        "met": bool(value <= target),
        "unit": "max |relative error|",
        "agreement": {s: states.count(s) for s in ("agrees", "off", "too_noisy")},
        "raw": {"rows": [{k: r.get(k) for k in ("drafter", "k", "predicted_speedup", "predicted_ci95", "measured_speedup",
                                                 "measured_ci95", "prediction_error", "agreement", "tokens_per_round",
                                                 "measured_tokens_per_round", "predicted_round_ms", "measured_round_ms",
                                                 "t_verify_ms", "t_draft_ms", "t_rollback_ms")}
                         for r in res["rows"]],
                "k_max": k_max, "max_tokens": a.max_tokens, "confirm_reps_rule": res["confirm_reps_rule"],
                "t_decode_ms": res["t_decode_ms"],
                "trace_E": {n: d.get("trace", {}).get("tokens_per_round") for n, d in res["drafters"].items()}},
    }


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry (``python -m specscope.profiler.roofline_cli``), with ``specscope``'s error handling."""
    ap = argparse.ArgumentParser(prog="specscope")
    sub = ap.add_subparsers(dest="cmd", required=True)
    add_parsers(sub)
    a = ap.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return a.func(a)
    except SpecscopeError as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        return _fail("interrupted", 130)


if __name__ == "__main__":
    sys.exit(main())
