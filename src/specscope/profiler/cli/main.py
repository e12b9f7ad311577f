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
from specscope.profiler.cli.common import fail


def build_parser() -> argparse.ArgumentParser:
    """Each command's parser is its module's (``add_parser(sub)``), in the order ``specscope --help`` lists them."""
    ap = argparse.ArgumentParser(prog="specscope", description="Profile speculative decoding of local LLMs with MLX.")
    sub = ap.add_subparsers(dest="cmd")

    from specscope.profiler.cli import check as check_cli, gpu_trace as capture_cli
    from specscope.profiler.cli import preflight as preflight_cli, roofline as roofline_cli, trace as trace_cli, tune as tune_cli

    run_commands.add_parser(sub)  # run, sweep
    model_parsers.add_parser(sub)  # demo-model, inspect
    check_cli.add_parser(sub)  # measured in the worker, as capture is
    predict_command.add_parser(sub)
    session_commands.add_parser(sub)  # report, compare, verdict
    tool_commands.add_bench(sub)
    capture_cli.add_parser(sub)
    tool_commands.add_gui(sub)
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
