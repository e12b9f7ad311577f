"""What ``specscope roofline`` and ``specscope tune`` share: both run the engine in this process.

The model arguments, the engine they open (``engine_adapter.tune_runs.TuneEngine``; MLX is imported only when a
command runs), the status they report as they go (JSON lines for a program, else a progress bar) and how they print
their result.
"""

from __future__ import annotations

import argparse
import json
from typing import Callable

from specscope.errors import SpecscopeError

from specscope.profiler.cli.common import add_download_arg, resolve_model_args
from specscope.profiler.cli.progress import add_progress_args
from specscope.profiler.session.file_io import finite_json

from specscope.profiler.run.roofline_run import DEFAULT_PROMPT


def jsonl_status(message: str) -> None:
    print(json.dumps({"status": message}), flush=True)


def status_for(a, name: str, expected_phases: int):
    """Status for a program (--jsonl), else a progress bar on a terminal (nothing when piped unless --progress).

    The bar counts the command's phases; the time left is estimated from the phases done so far."""
    if a.jsonl:
        return jsonl_status
    from specscope.profiler.cli.progress import PhaseProgress, progress_wanted

    return PhaseProgress(name, expected_phases, enabled=progress_wanted(a))


def close_status(say) -> None:
    if hasattr(say, "close"):
        say.close()


def add_model_args(p: argparse.ArgumentParser) -> None:
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



def engine_params(a, drafter: str = "auto"):
    from specscope.engine_adapter.engine import EngineParams

    return EngineParams(model=a.model, demo=bool(a.demo), drafter=drafter, draft_model=a.draft_model,
                        mtp_weights=a.mtp_weights, mtp_hidden=a.mtp_hidden, oracle_p=a.oracle_p,
                        oracle_draft_ms=a.oracle_draft_ms, temp=a.temp, top_p=a.top_p, seed=a.seed,
                        allow_oversize=a.allow_oversize)


def check_oracle(a) -> None:
    if not 0.0 <= a.oracle_p <= 1.0:
        raise SpecscopeError("--oracle-p must be between 0 and 1")
    if a.oracle_draft_ms < 0:
        raise SpecscopeError("--oracle-draft-ms must be >= 0")


def open_engine(a, say, drafter: str = "auto"):
    from specscope.engine_adapter.tune_runs import TuneEngine

    if not a.model and not a.demo:
        raise SpecscopeError("give a model (--model, a folder or a cached repo id) or --demo")
    resolve_model_args(a)
    return TuneEngine.open(engine_params(a, drafter), status=say)


def run_and_print(a, key: str, say, measure: Callable, fmt: Callable[[dict], str]) -> int:
    """Run ``measure(a, say, partial)`` and print its result: ``{key: result}`` lines with ``--jsonl`` (each partial
    result as it comes, then the whole), else the result as JSON (``--json``) or as text (``fmt``)."""
    partial = (lambda res: print(json.dumps({key: finite_json(res)}), flush=True)) if a.jsonl else None
    try:
        out = measure(a, say, partial)
    finally:
        close_status(say)
    if a.jsonl:
        print(json.dumps({key: finite_json(out)}), flush=True)
    else:
        print(json.dumps(finite_json(out), indent=1) if a.json else fmt(out))
    return 0
