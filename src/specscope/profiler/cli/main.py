"""The ``specscope`` command: the parser and the dispatch to each command's handler. With no arguments it opens the
desktop app."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Callable

from specscope.errors import SpecscopeError

from specscope.profiler.cli import model_parsers, predict_command, run_commands, session_commands, tool_commands
from specscope.profiler.cli.common import add_download_arg, add_dtype_arg, fail
from specscope.profiler.cli.model_commands import cmd_check
from specscope.profiler.cli.progress import add_progress_args
from specscope.profiler.cli.tool_commands import cmd_capture

def build_parser() -> argparse.ArgumentParser:
    """Each command's parser is its module's (``add_parser(sub)``), in the order ``specscope --help`` lists them."""
    ap = argparse.ArgumentParser(prog="specscope", description="Profile speculative decoding of local LLMs with MLX.")
    sub = ap.add_subparsers(dest="cmd")

    run_commands.add_parser(sub)  # run, sweep
    model_parsers.add_parser(sub)  # demo-model, inspect
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

    predict_command.add_parser(sub)
    session_commands.add_parser(sub)  # report, compare, verdict
    tool_commands.add_bench(sub)
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

    tool_commands.add_gui(sub)
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
    # SIGTERM (`kill`, a closed terminal's session, a CI timeout) ends a command as Ctrl+C does, wherever it is: a
    # measurement stopped with its session marked incomplete, never left "running" (the app handles its own)
    restore = _sigterm_as_interrupt() if a.cmd != "gui" else (lambda: None)
    try:
        return a.func(a)
    except SpecscopeError as exc:
        return fail(str(exc))
    except ImportError as exc:  # an installation problem, said as one (never a traceback)
        from specscope.profiler.renderers.plugins import import_error_message

        return fail(import_error_message(exc, f"`specscope {a.cmd}`"))
    except KeyboardInterrupt:
        return fail("interrupted", 130)
    finally:
        restore()


def _raise_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _sigterm_as_interrupt() -> Callable[[], None]:
    """SIGTERM raises KeyboardInterrupt in this (main) thread until the returned function puts the handler before
    back (off the main thread no handler can be set: nothing to do)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    before = signal.signal(signal.SIGTERM, _raise_interrupt)

    def restore() -> None:
        signal.signal(signal.SIGTERM, before if before is not None else signal.SIG_DFL)

    return restore


if __name__ == "__main__":
    sys.exit(main())
