"""Commands that hand off to a tool of their own, imported only when run: ``bench`` (the benchmark harness,
``cli.bench``), ``capture`` (Metal GPU traces, ``cli.gpu_trace``) and ``gui`` (the desktop app, through the plugin
table)."""

from __future__ import annotations

from specscope.errors import SpecscopeError

from specscope.profiler.cli.common import resolve_model_args
from specscope.profiler.run.config import DistSpec


def cmd_bench(a) -> int:
    from specscope.profiler.cli.bench import run_bench

    resolve_model_args(a)
    return run_bench(a)


def cmd_capture(a) -> int:
    from specscope.profiler.cli import gpu_trace as capture

    capture.validate(a)  # Metal first: elsewhere this refuses before any model or folder is touched
    if a.check:
        print(f"GPU trace capture is available: MLX runs on {capture.metal_status()['device']}")
        return 0
    requested = a.model
    resolve_model_args(a)
    name = None
    if a.model:
        from specscope.model_ref import ref_for_folder

        name = ref_for_folder(a.model, requested).label
    return capture.run_capture(a, a.model, name)


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
