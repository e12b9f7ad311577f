"""``specscope tune`` and ``specscope bench tune``: parser and commands.

``add_parser(sub)`` adds ``tune`` to the ``specscope`` argparse subparsers; ``bench_tune(a)`` is the benchmark (same
result shape as ``profiler/cli/bench.py``'s), measured in the worker (``run.bench_tune``), as tune is (``cli.engine``).
"""

from __future__ import annotations

from specscope.errors import SpecscopeError

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from specscope.engine_adapter.params import EngineParams
from specscope.profiler.cli.common import resolve_model_args
from specscope.profiler.cli.engine import add_model_args, measure_and_print, status_for
from specscope.profiler.run.measure_config import TuneConfig
# bench tune is measured in the worker (run.bench_tune); read here under its old names
from specscope.profiler.run.bench_tune import TUNE_TARGET as TUNE_TARGET, bench_tune as bench_tune
from specscope.profiler.analysis.formatting import rate
from specscope.profiler.analysis.intervals import draft_time_text

def add_parser(sub) -> None:
    t = sub.add_parser("tune", help="predict the speedup of every k with every drafter, confirm the best, recommend one")
    add_model_args(t)
    t.add_argument("--k-max", type=int, help="the speculative run that measures acceptance drafts K_max (1-16; default "
                   "4, and a DFlash drafter's block size - 1)")
    t.add_argument("--max-tokens", type=int, default=64, help="new tokens per run")
    t.add_argument("--drafters", help="comma-separated drafters (default: every one this model has; 'oracle' adds the what-if)")
    t.add_argument("--reps", type=int, default=None,
                   help="confirmation repeats (plain and speculative interleaved; default: 6 to 30, until the "
                        "recommendation is decided: the pick against its nearest rival, and its verdict, each at a "
                        "level corrected for the looks)")
    t.add_argument("--beside-reps", type=int, default=4,
                   help="rounds per earlier accepted count re-timed right before and after each confirmation pair "
                        "(default 4; more prices each repeat's round more precisely, at more time a repeat)")
    t.add_argument("--confirm", choices=["decide", "best", "all"], default="decide",
                   help="confirm the best predicted setting and its nearest rival, the rest ranked from the trace "
                        "(decide, the default); each drafter's best predicted k and its neighbours (best); or every k")
    t.add_argument("--tree-budgets", type=_budgets, default=None, metavar="B,B,...",
                   help="tune trees too, at these node budgets (e.g. 2,4,8): each drafter that drafts trees (dflash, "
                        "dflash2) is predicted and confirmed as trees at every budget beside its chains (greedy only)")
    t.add_argument("--suite", help="prompt suite JSON (default: the built-in suite)")
    t.add_argument("--cases", type=int, default=1, help="prompts from the suite (round-robin across content classes)")
    t.add_argument("--temp", type=float, default=0.0)
    t.add_argument("--top-p", type=float, default=1.0)
    t.set_defaults(func=cmd_tune)


def _budgets(text: str) -> list[int]:
    import argparse

    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of node budgets: {text!r} (e.g. 2,4,8)") from None
    if not out:
        raise argparse.ArgumentTypeError("no budget given (e.g. 2,4,8)")
    return out


def status(a):
    """The status of a tune run: a bar counting its phases."""
    n_drafters = len([d for d in a.drafters.split(",") if d.strip()]) if a.drafters else 3
    return status_for(a, "tune", 2 + 2 + 4 * n_drafters + (a.reps or 12))  # unset reps: 6-30 confirmation repeats, about 12


def tune_config(a) -> TuneConfig:
    """The tune the flags ask for (model references resolved to folders first)."""
    if not a.model and not a.demo:
        raise SpecscopeError("give a model (--model, a folder or a cached repo id) or --demo")
    resolve_model_args(a)
    shared = {f.name: getattr(a, f.name) for f in fields(EngineParams) if hasattr(a, f.name)}
    drafters = [d.strip() for d in a.drafters.split(",") if d.strip()] if a.drafters is not None else None
    return TuneConfig(**{**shared, "demo": bool(a.demo)}, k_max=a.k_max, max_tokens=a.max_tokens, drafters=drafters,
                      reps=a.reps, beside_reps=a.beside_reps, confirm=a.confirm, suite=a.suite, cases=a.cases,
                      prompt=a.prompt, tree_budgets=a.tree_budgets)


AGREEMENT_MARK: dict[str | None, str] = {"agrees": "ok", "off": "OFF", "too_little_data": "(undecided)"}


RANGE_NOTE = "range of repeats"


def measured_text(r: Mapping[str, Any]) -> str:
    """The measured cell: the speedup with its 95% interval, or, with too few repeats for one, the range of the repeats
    labelled as such (never under the 95% heading)."""
    m = r.get("measured_speedup")
    if m is None:
        return "—"
    ci, rng = r.get("measured_ci95"), r.get("measured_range")
    if ci:
        return f"{m:.3f}× ({ci[0]:.2f}–{ci[1]:.2f})"
    if rng:
        return f"{m:.3f}× [range {rng[0]:.2f}–{rng[1]:.2f}]"
    return f"{m:.3f}×"


def _setting(r: Mapping[str, Any]) -> str:
    return f"{r['drafter']} {'B' if r.get('tree_budget') else 'k'}={r['k']}"


def format_tune(res: dict) -> str:
    lines = [f"tune: {res.get('model')}, {res['regime']}, K_max {res['k_max']}, {res['max_tokens']} tokens × "
             f"{res['prompts']} prompt(s), {res['confirm_reps']} confirmation repeat(s)",
             f"T_decode {res['t_decode_ms']:.1f} ms ({rate(res['plain_tok_s'], ' tok/s', 'no')} plain); verify at n = "
             + ", ".join(f"{n}: {v:.1f}" for n, v in res["verify_ms"].items()) + f" ms (context {res['verify_context']})",
             "",
             " drafter       k      E   T_verify  T_draft   predicted (2.5–97.5 pct) measured (95% CI)      error"]
    for r in res["rows"]:
        lo, hi = r["predicted_ci95"]
        meas = measured_text(r)
        ag = r.get("agreement") or {}
        err = (f"{r['prediction_error']:+.1%} {AGREEMENT_MARK.get(ag.get('state'), '')}".rstrip()
               if r["prediction_error"] is not None else "")
        k = f"B{r['k']}" if r.get("tree_budget") else str(r["k"])  # a tree setting's budget (tune_trees)
        lines.append(f" {r['drafter']:<12} {k:>3} {r['tokens_per_round']:6.2f} {r['t_verify_ms']:9.1f}"
                     f" {draft_time_text(r['t_draft_ms'], spec='.1f'):>8}   "
                     f"{r['predicted_speedup']:.3f}× ({lo:.2f}–{hi:.2f})    {meas:<22} {err:>7}")
    lines.append("predicted: the bootstrap's 2.5–97.5 percentiles (its coverage is not tested, so not called a 95% "
                 "interval)")
    if any(r.get("tree_budget") for r in res["rows"]):
        lines.append(f"B: a tree of at most B drafted nodes (depth limit {res['k_max']}), verified in one forward")
    lines.append("")
    for name, d in res["drafters"].items():
        lines.append(f"acceptance a_i, {d['label']} ({d['rounds']} rounds at K_max): "
                     + " ".join(f"{x:.2f}" for x in d["acceptance"]))
        t = d.get("trace")
        if t and t.get("budgets"):  # a tree setting: E by budget, and the largest budget's own rounds beside it
            own = t["tokens_per_round_k_max_rounds"][-1]
            lines.append(f"  trace: {t['positions']} positions; E(B) walked at budgets "
                         + ", ".join(f"{b}: {'—' if e is None else f'{e:.2f}'}" for b, e in zip(t["budgets"], t["tokens_per_round"]))
                         + (f"; the run at budget {t['budgets'][-1]}'s own rounds: {own:.2f}" if own is not None else ""))
        elif t:
            e = lambda xs: " ".join("—" if x is None else f"{x:.2f}" for x in xs)  # noqa: E731
            cost = f", recorded in {t['cost_ms'] / 1000:.1f} s" if t.get("cost_ms") else ""
            lines.append(f"  trace{' (an estimate)' if t.get('estimate') else ''}: {t['positions']} positions{cost}; "
                         f"E(k) walked: {e(t['tokens_per_round'])}; from the K_max rounds it would read: "
                         f"{e(t['tokens_per_round_k_max_rounds'])}")
    if any(r.get("measured_speedup") is not None and not r.get("measured_ci95") and r.get("measured_range")
           for r in res["rows"]):
        lines += ["", f"{RANGE_NOTE}: the lowest and highest of the repeats' speedups (too few repeats for an interval; "
                  "not a 95% interval)"]
    voided = [r for r in res["rows"] if r.get("e_exact_void")]
    if voided:
        lines += ["", "E(k) not exact (the confirmation runs or the trace's own record contradict the trace; the error's "
                  "interval is then the unpaired one, the prediction's with E(k) resampled over the measured one):"]
        lines += [f"  {_setting(r)}: {r['e_exact_void']}" for r in voided]
    confirmed = [r for r in res["rows"] if r.get("agreement")]
    if confirmed:
        lines += ["", f"confirmation: {res['confirm_reps']} repeats ({res.get('confirm_reps_rule', 'fixed')}); "
                  "the measured speedup is the pooled rates' ratio (a ratio of means, as the prediction is), its 95% interval "
                  "by the delta method over the paired repeats; the prediction of a confirmed k uses timings re-taken beside its runs"]
        lines += [f"  {_setting(r)}: {r['agreement']['text']}" for r in confirmed]
        if res.get("decision"):
            d = res["decision"]
            lines.append(f"  {'decided' if d['decided'] else 'not decided'}: {d['text']}")
    lines += ["", f"assumption: {res['assumption']}", "", f"recommendation: {res['recommendation']['text']}"]
    return "\n".join(lines)


def cmd_tune(a) -> int:
    cfg = tune_config(a)
    cfg.validate()  # refused here, before a worker starts
    return measure_and_print(a, cfg, status(a), format_tune)

