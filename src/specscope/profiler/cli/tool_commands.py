"""Commands that hand off to a tool of their own, imported only when run: ``bench`` (the benchmark harness,
``cli.bench``) and ``gui`` (the desktop app, through the plugin table). ``capture`` is ``cli.gpu_trace``."""

from __future__ import annotations

from specscope.errors import SpecscopeError

import argparse

from specscope.profiler.cli.common import add_download_arg, resolve_model_args
from specscope.profiler.cli.progress import add_progress_args
from specscope.profiler.run.bench_common import MAX_PAIRS, PREDICT_K_GRID, PREDICT_MAX_CASES, PREDICT_P_GRID
from specscope.profiler.run.config import DistSpec


def cmd_bench(a) -> int:
    from specscope.profiler.cli.bench import run_bench

    resolve_model_args(a)
    return run_bench(a)


def cmd_gui(a) -> int:
    scripted = a.screenshot or a.exit_when_done
    from specscope.display import headless

    if not scripted and headless():
        raise SpecscopeError("no display to open the app on; use `specscope run` here, or set QT_QPA_PLATFORM=offscreen")
    if getattr(a, "ranks", None) is not None:
        DistSpec(ranks=a.ranks).validate()
    resolve_model_args(a)
    from specscope.profiler.renderers.plugins import COMMANDS, load

    return load(COMMANDS, "gui", "the desktop app")(a)


def _listed(kind):
    """An argparse type: comma-separated values of ``kind`` (a bad one is argparse's clear error, exit 2)."""

    def parse(text: str) -> tuple:
        try:
            return tuple(kind(x) for x in text.split(","))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated {kind.__name__} values, got {text!r}") from None

    parse.__name__ = f"{kind.__name__} list"
    return parse


def add_bench(sub) -> None:
    """``specscope bench`` on the ``specscope`` argparse subparsers."""
    b = sub.add_parser("bench", help="fidelity and speed against mlx-lm")
    b.add_argument("what", choices=["overhead", "spec-vs-mlx-lm", "rollback", "predict", "memory", "gui", "capture", "tune", "all"])
    src = b.add_mutually_exclusive_group()
    src.add_argument("--demo", action="store_true", help="the demo model (the default when no --model is given)")
    src.add_argument("--model")
    b.add_argument("--draft-model")
    add_download_arg(b)
    b.add_argument("--pairs", type=int, default=5, help="interleaved pairs (the minimum with --until decided)")
    b.add_argument("--until", choices=["decided"], default=None,
                   help="add pairs until the median ratio's interval lies wholly on one side of the benchmark's target, "
                        "at the sequential level (each look's interval widened so looking again and again does not bias "
                        "it; up to --max-pairs); predict always runs each point until its verdict is decided")
    b.add_argument("--until-stable", dest="until", action="store_const", const="decided",
                   help=argparse.SUPPRESS)  # the older name: --until decided replaces it
    b.add_argument("--max-pairs", type=int, default=None,
                   help=f"the cap of --until decided (default {MAX_PAIRS}; for predict: the most cases a point may "
                        f"take, default {PREDICT_MAX_CASES})")
    b.add_argument("--max-tokens", type=int, default=64)
    b.add_argument("--num-draft-tokens", "-k", type=int, default=2)
    b.add_argument("--p-grid", type=_listed(float), metavar="P,P,...",
                   help="predict: the oracle's acceptance rates to sweep (default "
                        f"{','.join(f'{p:g}' for p in PREDICT_P_GRID)}); one point, e.g. 0.5, is a quick look")
    b.add_argument("--k-grid", type=_listed(int), metavar="K,K,...",
                   help=f"predict: the draft lengths to sweep each rate at (default {','.join(map(str, PREDICT_K_GRID))})")
    b.add_argument("--component-reps", type=int, default=8,
                   help="tune: rounds timed apart per k and drafter for T_draft (each a round and the verify before it)")
    b.add_argument("--beside-reps", type=int, default=4,
                   help="tune: rounds per earlier accepted count re-timed right before and after each confirmation pair "
                        "(default 4, as `specscope tune`)")
    b.add_argument("--json", action="store_true")
    b.add_argument("-o", "--output", metavar="FILE", help="keep the benchmark's session (`bench all`: every benchmark's "
                   "result; `specscope gui FILE` shows it on the Checks page)")
    b.add_argument("--force", action="store_true", help="overwrite --output if it exists")
    add_progress_args(b)
    b.set_defaults(func=cmd_bench)


def add_gui(sub) -> None:
    """``specscope gui`` on the ``specscope`` argparse subparsers."""
    g = sub.add_parser("gui", help="open the desktop app")
    g.add_argument("--demo", action="store_true")
    g.add_argument("--model", help="a model folder or a cached repo id to select")
    add_download_arg(g)
    g.add_argument("--session", help="open a saved session")
    g.add_argument("--autorun", action="store_true")
    g.add_argument("--screenshot")
    g.add_argument("--exit-when-done", action="store_true")
    g.add_argument("--cases", type=int)
    g.add_argument("--max-tokens", type=int)
    g.add_argument("--drafter")
    g.add_argument("--num-draft-tokens", "-k", type=int)
    g.add_argument("--repeats", type=int, help="measured repeats per case (setup panel)")
    g.add_argument("--cooldown", action="store_true", help="cool down before each case (setup panel)")
    g.add_argument("--discard-first", type=int, metavar="N", help="leave the first N cases out of the summary (setup panel)")
    g.add_argument("--ranks", type=int, metavar="N", help="run N ranks on this machine (setup panel: Where)")
    g.add_argument("--view", help="page to show first (live, breakdown, division, verify_cost, tune, cases, history, compare)")
    g.add_argument("--size", metavar="WxH", help="window size, e.g. 1280x800 (for screenshots)")
    g.add_argument("--compare", metavar="B.json", help="open the Compare page with --session as A and this as B")
    g.set_defaults(func=cmd_gui)
