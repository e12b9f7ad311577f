"""``specscope capture``: Metal GPU traces of one decode step and one verify forward (the CLI side).

The capture itself runs in a worker process (``python -m specscope.engine_adapter.measure.gpu_trace``)
started with ``MTL_CAPTURE_ENABLED=1``: Metal only records GPU work in a process that
had the variable when it started. This side refuses early and clearly, before any
model is loaded or any folder is created: on a machine without Metal, on an output
folder that exists and is not empty (unless ``--force``), on a bad ``k``.

Nothing here imports MLX at module level (the Metal probe imports it when called).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from specscope.errors import SpecscopeError

from specscope.engine_adapter.measure.records import MetalStatus  # records only: no MLX
from specscope.profiler.run.config import MAX_K
from specscope.profiler.run.pump import describe_exit, worker_env
from specscope.profiler.run.records import SuiteCase

CAPTURE_ENV = "MTL_CAPTURE_ENABLED"
WORKER_MODULE = "specscope.engine_adapter.measure.gpu_trace"


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
    env = worker_env()
    env[CAPTURE_ENV] = "1"
    return env


def capture_command(spec: dict) -> list[str]:
    return [sys.executable, "-m", WORKER_MODULE, json.dumps(spec, ensure_ascii=False)]


def run_worker_process(cmd: list[str], env: dict) -> subprocess.CompletedProcess:
    """Run the worker; its progress and errors go straight to our stderr, its result comes on stdout."""
    return subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
                          encoding="utf-8", errors="replace")


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
    """Start the worker (``MTL_CAPTURE_ENABLED=1``) for a validated request; print where the traces are."""
    out = check_output_dir(a.output, a.force)
    case = pick_prompt(a.suite, a.case)
    k = a.num_draft_tokens
    created = prepare_output_dir(out, k, a.force)
    spec = {"demo": bool(a.demo), "model_path": model_path, "model_name": model_name, "k": k,
            "out_dir": str(out.resolve()), "prompt": case["prompt"], "prompt_id": case["id"],
            "allow_oversize": bool(getattr(a, "allow_oversize", False))}
    try:
        res = run_worker_process(capture_command(spec), capture_env())
    except BaseException:
        _remove_if_empty(out, created)
        raise
    if res.returncode != 0:
        _remove_if_empty(out, created)
        if res.returncode == 2:  # the worker said why on stderr ("specscope: error: …")
            return 2
        raise SpecscopeError(f"the capture worker failed ({describe_exit(res.returncode)}); its output is above")
    try:
        desc = json.loads(res.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise SpecscopeError("the capture worker ended without saying what it captured") from None
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
