"""``specscope capture``: Metal GPU traces of one decode step and one verify forward (the CLI side).

``add_parser(sub)`` adds the command. The capture is measured in the worker (``run.capture_run``, the engine side
``engine_adapter.measure.gpu_trace``), started with ``MTL_CAPTURE_ENABLED=1`` (``CaptureConfig.worker_env``): Metal
only records GPU work in a process that had the variable when it started. This side refuses early and clearly,
before any model is loaded or any folder is created: on a machine without Metal, on an output folder that exists and
is not empty (unless ``--force``), on a bad ``k``. ``--session FILE`` keeps the capture's session, which the app opens
on its Checks page.

Nothing here imports MLX at module level (the Metal probe imports it when called).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from specscope.errors import SpecscopeError

from specscope.engine_adapter.measure.records import MetalStatus  # records only: no MLX
from specscope.profiler.cli.common import add_download_arg, check_output_path, resolve_model_args
from specscope.profiler.cli.worker_measure import incomplete_exit, run_in_worker, stopped_by_user
from specscope.profiler.run.config import MAX_K
from specscope.profiler.run.pump import worker_env
from specscope.profiler.run.records import SuiteCase
from specscope.profiler.run.tool_configs import CaptureConfig


def add_parser(sub) -> None:
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
    cap.add_argument("--session", metavar="FILE", help="keep the capture's session (what was captured and how; "
                     "`specscope gui FILE` shows it on the Checks page)")
    cap.set_defaults(func=cmd_capture)


def cmd_capture(a) -> int:
    validate(a)  # Metal first: elsewhere this refuses before any model or folder is touched
    if a.check:
        print(f"GPU trace capture is available: MLX runs on {metal_status()['device']}")
        return 0
    requested = a.model
    resolve_model_args(a)
    name = None
    if a.model:
        from specscope.model_ref import ref_for_folder

        name = ref_for_folder(a.model, requested).label
    return run_capture(a, a.model, name)


def output_files(k: int) -> list[str]:
    """The files a capture writes into its folder (the only ones ``--force`` replaces)."""
    return ["decode.gputrace", f"verify-k{k}.gputrace", "capture.json"]


def metal_status() -> MetalStatus:
    """{"metal": bool, "device": words} for this machine (imports MLX; loads no model)."""
    from specscope.engine_adapter.measure.gpu_trace import metal_status as probe

    return probe()  # the engine's MetalStatus record


def require_metal() -> MetalStatus:
    st = metal_status()
    if not st["metal"]:
        from specscope.engine_adapter.measure.gpu_trace import not_metal_message

        raise SpecscopeError(not_metal_message(st["device"]))
    return st


def capture_env() -> dict[str, str]:  # dict: environment variables (names are data)
    """The worker's environment for a capture (``runner.run_worker`` adds ``CaptureConfig.worker_env``)."""
    return {**worker_env(), **CaptureConfig.worker_env}


def check_output_dir(path: str, force: bool) -> Path:
    """Refuse a file, a non-empty folder (unless ``force``) or an unwritable place; create nothing."""
    p = Path(path).expanduser()
    if p.exists() and not p.is_dir():
        raise SpecscopeError(f"{p} is a file; give a folder for the traces")
    if p.is_dir():
        if any(p.iterdir()) and not force:
            raise SpecscopeError(f"{p} exists and is not empty; pass --force to write into it (its decode.gputrace, "
                                 f"verify-k*.gputrace and capture.json are replaced, nothing else is touched), "
                                 f"or give a new folder")
        if not os.access(p, os.W_OK):
            raise SpecscopeError(f"cannot write into {p}: the folder is not writable")
        return p
    anc = p.parent
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir() or not os.access(anc, os.W_OK):
        raise SpecscopeError(f"cannot create {p}: {anc} is not a writable folder")
    return p


def prepare_output_dir(p: Path, k: int, force: bool) -> bool:
    """Create the folder (True if it was created); with ``force``, remove the files a capture writes."""
    created = not p.exists()
    try:
        p.mkdir(parents=True, exist_ok=True)
        if force:
            for name in output_files(k):
                f = p / name
                if f.is_dir() and not f.is_symlink():
                    shutil.rmtree(f)  # a .gputrace is a folder (a bundle); Metal will not write over one
                elif f.exists() or f.is_symlink():
                    f.unlink()
    except OSError as exc:
        raise SpecscopeError(f"cannot prepare {p}: {exc.strerror or exc}") from None
    return created


def pick_prompt(suite: str | None, case: str | None) -> SuiteCase:
    """The capture's prompt: the suite's first case (the built-in suite unless ``suite``), or the case ``case``."""
    from specscope.profiler.run.suite import load_suite

    cases = load_suite(suite)["cases"]
    if case is None:
        return cases[0]
    for c in cases:
        if c["id"] == case:
            return c
    raise SpecscopeError(f"no case {case!r} in the suite (its ids: {', '.join(c['id'] for c in cases)})")


def validate(a) -> None:
    """Everything that can be refused before a model is touched; on a machine without Metal, that comes first."""
    if not 1 <= a.num_draft_tokens <= MAX_K:
        raise SpecscopeError(f"-k must be between 1 and {MAX_K} (got {a.num_draft_tokens})")
    require_metal()
    if a.check:
        return
    if not a.demo and not a.model:
        raise SpecscopeError("no model: pass --model MODEL or --demo")
    if not a.output:
        raise SpecscopeError("give the folder for the traces with -o DIR")
    check_output_dir(a.output, a.force)
    pick_prompt(a.suite, a.case)
    if getattr(a, "session", None):
        check_output_path(a.session, a.force)


def format_result(desc: dict, out: Path) -> str:
    caps = {c["name"]: c for c in desc["captures"]}
    k = desc["k"]
    lines = [
        f"captured {desc['model']} on {desc['environment']['device']}: k = {k}, at position "
        f"{desc['prompt_tokens']} (after the {desc['prompt_tokens']}-token prompt {desc['prompt'].get('id') or ''})".rstrip(),
        f"  {out / caps['decode']['file']}   one decode step, 1 position",
        f"  {out / caps['verify']['file']}   one verify forward, {k + 1} positions",
        f"  {out / 'capture.json'}   what was captured",
        "Open a .gputrace in Xcode (double-click it); compare per-kernel times between the two.",
    ]
    return "\n".join(lines)


def run_capture(a, model_path: str | None, model_name: str | None) -> int:
    """Measure the capture in the worker (``MTL_CAPTURE_ENABLED=1``) for a validated request; print where the traces
    are. Its progress reaches stderr as ``specscope: …`` lines."""
    out = check_output_dir(a.output, a.force)
    case = pick_prompt(a.suite, a.case)
    k = a.num_draft_tokens
    created = prepare_output_dir(out, k, a.force)
    cfg = CaptureConfig(out_dir=str(out.resolve()), prompt=case["prompt"], model=model_path, model_name=model_name,
                        demo=bool(a.demo), k=k, prompt_id=case["id"], allow_oversize=bool(getattr(a, "allow_oversize", False)))
    kept = getattr(a, "session", None)
    try:
        s = run_in_worker(cfg, lambda ev: print(f"specscope: {ev['message']}", file=sys.stderr, flush=True), kept)
    except BaseException:
        _remove_if_empty(out, created)
        raise
    if s.status != "complete" or "capture" not in s.data:
        _remove_if_empty(out, created)
        if stopped_by_user(s):
            return incomplete_exit("capture", s, kept)
        raise SpecscopeError(f"the capture worker failed: {'; '.join(s.data['errors'][-1:]) or 'no result'}")
    desc = s.data["capture"]["description"]
    if a.json:
        print(json.dumps(desc, indent=1, ensure_ascii=False))
    else:
        print(format_result(desc, out))
    return 0


def _remove_if_empty(p: Path, created: bool) -> None:
    if created:
        try:
            p.rmdir()  # only if nothing was written
        except OSError:
            pass
