"""``specscope preflight``: is this machine ready to measure? The checks of ``engine_adapter.preflight`` on their own,
for a model if one is given (its parts' dtypes as they would load, its size), and how ``run`` shows them."""

from __future__ import annotations

import argparse
import json
import sys

from specscope.errors import SpecscopeError

from specscope.profiler.cli.common import add_download_arg, check_output_path, resolve_model_args
from specscope.profiler.run.config import DRAFTERS


def add_parser(sub) -> None:
    p = sub.add_parser("preflight", help="check the machine before a run: each check pass / warn / fail with its "
                                         "evidence and fix (exit 1 when one fails)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--model", help="the model a run would load (a folder or a cached repo id): its parts' dtypes "
                                     "and its size are checked too")
    src.add_argument("--demo", action="store_true", help="the built-in demo model")
    p.add_argument("--drafter", choices=DRAFTERS, default="auto")
    p.add_argument("--draft-model", help="a draft model folder or cached repo id (with --drafter dflash: a DFlash drafter)")
    p.add_argument("--mtp-weights", help="folder or cached repo id with the original checkpoint's mtp.* tensors")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--save-readings", metavar="FILE", help="also write the raw readings (command outputs, files, "
                   "MLX's device info) to FILE, e.g. for a bug report")
    p.add_argument("--readings", metavar="FILE", help="check readings saved with --save-readings (another machine's) "
                   "instead of this machine's")
    p.add_argument("--force", action="store_true", help="overwrite --save-readings if it exists")
    add_download_arg(p)
    p.set_defaults(func=cmd_preflight)


def cmd_preflight(a) -> int:
    if a.drafter in ("draft", "dflash") and not a.draft_model and not (a.drafter == "dflash" and a.demo):
        raise SpecscopeError(f"--drafter {a.drafter} needs --draft-model")
    save = check_output_path(a.save_readings, a.force) if a.save_readings else None
    resolve_model_args(a)
    from specscope.engine_adapter import preflight
    from specscope.engine_adapter.model.demo_model import default_demo_path
    from specscope.engine_adapter.preflight_parts import parts_from_checkpoints

    target = str(default_demo_path("hybrid")) if a.demo else a.model
    readings = preflight.load_readings(a.readings) if a.readings else preflight.take_readings()
    parts, nbytes = parts_from_checkpoints(target, a.drafter, a.draft_model, a.mtp_weights)
    report = preflight.evaluate(readings, parts, nbytes)
    report["model"] = target
    if save:
        from specscope.profiler.session.file_io import atomic_write

        atomic_write(save, json.dumps(readings, indent=1, ensure_ascii=False))
    print(json.dumps(report, indent=1, ensure_ascii=False) if a.json else preflight.format_report(report))
    return 1 if report["status"] == preflight.FAIL else 0


def preflight_lines(report: dict) -> str:
    """What ``run`` prints when the pre-flight arrives: the warns and fails with their fixes (nothing when all pass)."""
    from specscope.engine_adapter.preflight import format_report

    if report.get("status") == "pass":
        return ""
    text = format_report(report, only_problems=True)
    if report.get("ignored"):
        text += "\n  (--ignore-preflight: running anyway; the session records it)"
    return text


def show_preflight(ev: dict) -> None:
    if ev.get("event") == "preflight":
        text = preflight_lines(ev.get("preflight") or {})
        if text:
            print(text, file=sys.stderr, flush=True)


def add_ignore_arg(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--ignore-preflight", action="store_true",
                    help="run even if the pre-flight fails (its numbers may measure the machine; the session says so)")
