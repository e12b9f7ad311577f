"""The ``specscope`` command: the parser and the dispatch to each command's handler. With no arguments it opens the
desktop app."""

from __future__ import annotations

import argparse
import sys

from specscope.errors import SpecscopeError

from specscope.profiler.cli.bench_common import MAX_PAIRS, PREDICT_MAX_CASES
from specscope.profiler.cli.common import add_download_arg, add_dtype_arg, fail
from specscope.profiler.cli.model_commands import cmd_check, cmd_demo_model, cmd_inspect
from specscope.profiler.cli.predict_command import cmd_predict
from specscope.profiler.cli.progress import add_progress_args
from specscope.profiler.cli.run_args import add_run_args
from specscope.profiler.cli.run_commands import cmd_run, cmd_sweep
from specscope.profiler.cli.session_commands import cmd_compare, cmd_report, cmd_verdict
from specscope.profiler.cli.tool_commands import cmd_bench, cmd_capture, cmd_gui
from specscope.profiler.run.config import RunConfig


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="specscope", description="Profile speculative decoding of local LLMs with MLX.")
    sub = ap.add_subparsers(dest="cmd")

    r = sub.add_parser("run", help="run the protocol headless and print the summary")
    add_run_args(r)
    r.add_argument("-o", "--output", help="write the session JSON here (autosaved while running)")
    r.add_argument("--force", action="store_true", help="overwrite --output if it exists")
    r.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_progress_args(r)
    r.add_argument("--roofline", action="store_true",
                   help="after the run, measure the verify cost curve and draft steps apart (as `specscope roofline`) "
                        "and keep it in the session: the summary then holds a prediction beside the ledger")
    r.set_defaults(func=cmd_run)

    sw = sub.add_parser("sweep", help="the protocol at several contexts: how verify cost, acceptance and the speedup "
                                      "change as the conversation grows")
    add_run_args(sw)
    sw.add_argument("--passes", type=int, default=RunConfig.sweep_passes,
                    help="visits of every context, each pass in the reverse order of the one before (default 2: "
                         "0,1k,4k,16k then 16k,4k,1k,0), so drift cannot pass for a context effect")
    sw.add_argument("-o", "--output", help="write the session JSON here (autosaved while running)")
    sw.add_argument("--force", action="store_true", help="overwrite --output if it exists")
    sw.add_argument("--json", action="store_true", help="print the per-context figures as JSON at the end")
    add_progress_args(sw)
    sw.set_defaults(func=cmd_sweep)

    d = sub.add_parser("demo-model", help="write a demo model folder (the shipped trained one; --random: synthetic)")
    d.add_argument("path")
    d.add_argument("--random", action="store_true", help="random (synthetic) weights, the larger layout the fast tests use")
    kind = d.add_mutually_exclusive_group()
    kind.add_argument("--dense", action="store_true", help="a plain qwen3 model instead of the hybrid MoE")
    kind.add_argument("--draft", action="store_true", help="a small qwen3 draft model")
    kind.add_argument("--dflash", action="store_true", help="a random DFlash drafter (published format) for the demo target "
                      "(the trained one; --random: the random one; --shape/--layers: that slice)")
    d.add_argument("--block-size", type=int, default=16, help="with --dflash: the drafter's block size (default 16: "
                   "up to 15 drafts a round)")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--shape", metavar="NAME", help="random weights at a released model's dimensions instead "
                   "(qwen3.5-35b-a3b), written a layer at a time")
    d.add_argument("--layers", type=int, metavar="N", help="with --shape: the first N decoder layers, 4 to 40 (default 4; "
                   "one in four is full attention; about 0.47 GiB per layer plus 0.55 GiB for embedding and head)")
    add_progress_args(d)
    d.set_defaults(func=cmd_demo_model)

    i = sub.add_parser("inspect", help="describe a local checkpoint")
    i.add_argument("path", nargs="?", metavar="MODEL", help="a model folder, or a repo id (org/name[@revision]) "
                   "from the local Hugging Face cache")
    i.add_argument("--demo", action="store_true")
    i.add_argument("--target", metavar="MODEL", help="with a DFlash drafter folder: also say whether it fits this target")
    add_download_arg(i)
    i.add_argument("--json", action="store_true")
    i.add_argument("--allow-oversize", action="store_true")
    i.set_defaults(func=cmd_inspect)

    ck = sub.add_parser("check", help="can specscope profile this model correctly? (rollback exactness, MTP, windows)")
    ck.add_argument("path", nargs="?", metavar="MODEL", help="a model folder or a cached repo id")
    ck.add_argument("--model", dest="model_flag", metavar="MODEL", help="the same, as run and tune spell it")
    ck.add_argument("--demo", action="store_true")
    ck.add_argument("--json", action="store_true")
    ck.add_argument("--max-k", type=int, default=4, help="check rollback for k = 1..MAX_K (default 4)")
    ck.add_argument("--no-mtp", action="store_true", help="skip loading the MTP head")
    ck.add_argument("--drafter", choices=["dflash", "draft", "auto"], help="also check this drafter: dflash checks rollback at k = block "
                    "size - 1 and the drafter's own context at every accepted length 0..block size - 1")
    ck.add_argument("--engine", metavar="NAME", help="check another engine's acceptance rule at temperature instead: its "
                    "sampled tokens against plain decoding's (two-sample chi-square) with the test's power")
    ck.add_argument("--temp", type=float, help="with --engine: the temperature (default 0.25)")
    ck.add_argument("--top-p", type=float, default=0.9, help="with --engine (default 0.9)")
    ck.add_argument("--draws", type=int, default=100, help="with --engine: sampled draws per side (default 100)")
    ck.add_argument("--num-draft-tokens", "-k", type=int, default=2, help="with --engine (default 2)")
    ck.add_argument("--prompt", default="Why is the sky blue?", help="with --engine: the prompt the draws start from")
    ck.add_argument("--draft-model", help="with --drafter dflash: the DFlash drafter folder (or cached repo id)")
    ck.add_argument("--allow-oversize", action="store_true")
    add_dtype_arg(ck)
    add_progress_args(ck)
    add_download_arg(ck)
    ck.set_defaults(func=cmd_check)

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

    rep = sub.add_parser("report", help="render a saved session (format from the extension: .html .pdf .csv .json .trace.json)")
    rep.add_argument("session")
    rep.add_argument("-o", "--output", required=True)
    rep.add_argument("--force", action="store_true")
    rep.set_defaults(func=cmd_report)

    c = sub.add_parser("compare", help="compare two sessions side by side")
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("-o", "--output", required=True)
    c.add_argument("--force", action="store_true")
    c.add_argument("--timings-only", action="store_true",
                   help="compare timings even across sampling regimes (acceptance is left out)")
    c.set_defaults(func=cmd_compare)

    v = sub.add_parser("verdict", help="the judged prediction over several runs of one setting (the spread between "
                                       "runs in its interval)")
    v.add_argument("sessions", nargs="+", metavar="SESSION", help="saved sessions of one model, drafter, k and sampling")
    v.add_argument("--json", action="store_true", help="print the result as JSON")
    v.add_argument("--force", action="store_true", help="pool runs whose settings differ")
    v.set_defaults(func=cmd_verdict)

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
    b.add_argument("--component-reps", type=int, default=8,
                   help="tune: rounds timed apart per k and drafter for T_draft (each a round and the verify before it)")
    b.add_argument("--json", action="store_true")
    add_progress_args(b)
    b.set_defaults(func=cmd_bench)

    cap = sub.add_parser("capture", help="Metal GPU traces (.gputrace) of one decode step and one verify forward")
    src = cap.add_mutually_exclusive_group()
    src.add_argument("--model", help="a model folder or a cached repo id")
    src.add_argument("--demo", action="store_true", help="the synthetic demo model")
    add_download_arg(cap)
    cap.add_argument("--num-draft-tokens", "-k", type=int, default=2, help="draft tokens: the verify covers k+1 positions")
    cap.add_argument("-o", "--output", metavar="DIR", help="folder for decode.gputrace, verify-kK.gputrace, capture.json")
    cap.add_argument("--force", action="store_true", help="write into DIR even if it is not empty (replaces those files)")
    cap.add_argument("--suite", help="prompt suite JSON (default: the built-in suite); its first case is used")
    cap.add_argument("--case", help="the id of the suite case to use instead of the first")
    cap.add_argument("--allow-oversize", action="store_true")
    cap.add_argument("--json", action="store_true", help="print capture.json instead of the summary")
    cap.add_argument("--check", action="store_true", help="only say whether this machine can capture (exit 0) or not (2)")
    cap.set_defaults(func=cmd_capture)

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
    from specscope.profiler.cli import preflight as preflight_cli, roofline as roofline_cli, trace as trace_cli, tune as tune_cli

    preflight_cli.add_parser(sub)  # ``specscope preflight``: the machine checked before a run, or on its own
    roofline_cli.add_parser(sub)
    tune_cli.add_parser(sub)
    trace_cli.add_parser(sub)  # ``specscope trace``: acceptance traces for a saved session's cases
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = build_parser()
    a = ap.parse_args(argv)
    if a.cmd is None:
        a = ap.parse_args(["gui"])
    try:
        return a.func(a)
    except SpecscopeError as exc:
        return fail(str(exc))
    except ImportError as exc:  # an installation problem, said as one (never a traceback)
        from specscope.profiler.renderers.plugins import import_error_message

        return fail(import_error_message(exc, f"`specscope {a.cmd}`"))
    except KeyboardInterrupt:
        return fail("interrupted", 130)


if __name__ == "__main__":
    sys.exit(main())
