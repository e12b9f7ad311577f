"""Commands that hand off to a tool of their own, imported only when run: ``bench`` (the benchmark harness,
``cli.bench``) and ``gui`` (the desktop app, through the plugin table). ``capture`` is ``cli.gpu_trace``."""

from __future__ import annotations

from specscope.errors import SpecscopeError

from specscope.profiler.cli.common import resolve_model_args
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
