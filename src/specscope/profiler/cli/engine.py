"""What ``specscope roofline`` and ``specscope tune`` share: the model arguments, the status they report as they go
(a progress bar), the worker they measure in (``run.measurement``, through the pump
and into a session, as a run is measured) and how they print their result.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Callable


from specscope.profiler.cli.common import add_download_arg
from specscope.profiler.cli.progress import add_progress_args
from specscope.profiler.session.file_io import finite_json

from specscope.profiler.run.measure_config import DEFAULT_PROMPT

if TYPE_CHECKING:
    from specscope.profiler.run.measure_config import Measurement


def status_for(a, name: str, expected_phases: int):
    """A progress bar on a terminal (nothing when piped unless --progress).

    The bar counts the command's phases; the time left is estimated from the phases done so far."""
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
    p.add_argument("-o", "--output", help="keep the measurement's session (JSON: its result and how it was run)")
    add_download_arg(p)



def print_result(a, key: str, out: dict, fmt: Callable[[dict], str]) -> None:
    print(json.dumps(finite_json(out), indent=1) if a.json else fmt(out))


def measure_and_print(a, cfg: "Measurement", say, fmt: Callable[[dict], str]) -> int:
    """Measure ``cfg`` (roofline, tune) in the worker, as a run is measured (``run.measurement``: its events through
    the pump, folded into a session; ``-o`` keeps that session), and print the result: JSON (``--json``) or text
    (``fmt``)."""
    from specscope.profiler.run.measure_config import kind_of
    from specscope.profiler.run.runner import run_worker

    key = kind_of(cfg)

    def on_event(ev, session) -> None:
        if ev["event"] == "status":
            say(ev["message"])

    out_path = getattr(a, "output", None)
    try:
        res = run_worker(cfg, on_event=on_event, autosave=out_path)
    finally:
        close_status(say)
    s = res.session
    from specscope.profiler.cli.worker_measure import raise_if_failed

    raise_if_failed(res)
    if s.status != "complete" or key not in s.data:
        why = "; ".join(s.data["errors"][-1:]) or "no result"
        print(f"specscope: {key} {s.status}: {why}" + (f" (what was measured is in {out_path})" if out_path else ""),
              file=sys.stderr)
        return 130 if "stopped by the user" in s.data["errors"] else 1
    print_result(a, key, s.data[key], fmt)  # type: ignore[literal-required]
    if out_path:
        print(f"session saved to {out_path}", file=sys.stderr)
    return 0
