"""Metal GPU traces of one decode step and one verify forward (the MLX side of ``specscope capture``).

``run(spec)`` is what the worker (``profiler.run.capture_run``, in ``python -m specscope.profiler.run.worker``) runs
for a ``CaptureConfig``: the spec names the model, ``k``, the prompt and the output folder. It loads the model, encodes
the prompt and prefills it (outside any capture), then records, each with
``mx.metal.start_capture(path)`` / ``mx.metal.stop_capture()``:

- ``decode.gputrace``: one decode step, 1 position, at the end of the prompt;
- ``verify-k{K}.gputrace``: one verify forward over ``k + 1`` positions, at the same
  position (the cache is restored between the two), run the way speculative decoding
  runs it (with the per-position state capture on hybrid models).

The verify's drafts are the target's own greedy continuation (every draft right), so
MoE routing sees real tokens. Each captured shape is run once beforehand, outside the
capture, so pipeline compilation is not in the trace. ``capture.json`` says what was
captured; the same description is the worker's ``capture`` event.

Metal only records when the process was started with ``MTL_CAPTURE_ENABLED=1``; the
CLI and the app start the worker with it.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Mapping, cast

import mlx.core as mx

from specscope.errors import SpecscopeError

from specscope.engine_adapter.mlx_types import scalar, values

from .records import CaptureDescription, CaptureEnvironment, CaptureRecord, DeviceInfo, MetalStatus

CAPTURE_ENV = "MTL_CAPTURE_ENABLED"
DECODE_FILE = "decode.gputrace"
DESCRIPTION_FILE = "capture.json"


def verify_file(k: int) -> str:
    return f"verify-k{k}.gputrace"


def output_files(k: int) -> list[str]:
    """What a capture writes into its folder (and what ``--force`` replaces)."""
    return [DECODE_FILE, verify_file(k), DESCRIPTION_FILE]


def _device_info(metal) -> DeviceInfo:
    """Metal's device description (``mx.device_info`` where MLX has it: ``mx.metal.device_info`` is deprecated),
    plain values."""
    info = mx.device_info() if metal is mx.metal and hasattr(mx, "device_info") else metal.device_info()
    return cast(DeviceInfo, {k: (v if isinstance(v, (int, float, str)) else str(v)) for k, v in dict(info).items()})


def device_label(metal=None) -> str:
    """What this machine runs MLX on, in words: 'Metal (Apple M2 Max)', 'CPU (Linux x86_64)', 'CUDA (…)'."""
    metal = metal or mx.metal
    where = f"{platform.system()} {platform.machine()}"
    try:
        if metal.is_available():
            try:
                name = _device_info(metal).get("device_name")
            except Exception:
                name = None
            return f"Metal ({name})" if name else "Metal"
    except Exception:
        pass
    try:
        if mx.cuda.is_available():
            return f"CUDA ({where})"
    except Exception:  # an MLX without the cuda module
        pass
    dev = str(mx.default_device())
    return f"CPU ({where})" if "cpu" in dev else f"{dev} ({where})"


def not_metal_message(device: str) -> str:
    return (f"GPU trace capture needs Metal (macOS on Apple silicon); this machine runs MLX on {device}")


def metal_status(metal=None) -> MetalStatus:
    """{"metal": bool, "device": words}: whether a GPU trace can be captured here (no model is loaded)."""
    metal = metal or mx.metal
    try:
        ok = bool(metal.is_available())
    except Exception:
        ok = False
    return {"metal": ok, "device": device_label(metal)}


def require_metal(metal=None) -> None:
    st = metal_status(metal)
    if not st["metal"]:
        raise SpecscopeError(not_metal_message(st["device"]))


@contextmanager
def _captured(metal, path: Path):
    if path.exists():  # Metal refuses to write over an existing trace
        raise SpecscopeError(f"{path} already exists; remove it (or pass --force to `specscope capture`)")
    try:
        metal.start_capture(str(path))
    except Exception as exc:  # "Capture layer is not inserted" without MTL_CAPTURE_ENABLED=1 at process start
        hint = "" if os.environ.get(CAPTURE_ENV) == "1" else \
            f"; the process must start with {CAPTURE_ENV}=1 (`specscope capture` sets it for you)"
        raise SpecscopeError(f"could not start the Metal capture into {path}: {exc}{hint}") from None
    try:
        yield
    finally:
        metal.stop_capture()


def _sync() -> None:
    sync = getattr(mx, "synchronize", None)
    if sync is not None:
        sync()


def capture_forwards(model, prompt: list[int], k: int, out_dir, metal=None) -> CaptureRecord:
    """Prefill ``prompt``, then capture one decode step and one (k+1)-position verify at its end.

    ``metal`` is anything with ``start_capture(path)`` and ``stop_capture()`` (default ``mx.metal``;
    tests pass a fake). Returns what was captured (without model or environment details).
    """
    from mlx_lm.models.cache import make_prompt_cache

    from specscope.engine_adapter.decode.decoding import prefill
    from specscope.engine_adapter.cache.capture import capturing, install_capture, is_hybrid
    from specscope.engine_adapter.cache.rollback import CacheSnapshot

    metal = metal or mx.metal
    if not prompt:
        raise SpecscopeError("the prompt encodes to no tokens")
    if not 1 <= k <= 16:
        raise SpecscopeError(f"k must be between 1 and 16 (got {k})")
    out = Path(out_dir)
    hybrid = is_hybrid(model)
    if hybrid:
        install_capture(model)

    def forward(tokens: list[int], verify: bool) -> mx.array:
        x = mx.array(tokens, dtype=mx.uint32)[None]
        if verify and hybrid:  # as speculative decoding runs a verify: per-position states kept for rollback
            with capturing():
                logits = model(x, cache=cache)
                mx.eval(logits)
        else:
            logits = model(x, cache=cache)
            mx.eval(logits)
        return logits

    def settle() -> None:  # nothing lazy left over for a capture to pick up
        mx.eval([c.state for c in cache])
        _sync()

    # Outside any capture: the prompt, then the greedy continuation (the drafts a perfect drafter
    # would propose), which also runs the decode shape once; then the verify shape once.
    cache = make_prompt_cache(model)
    last = prefill(model, cache, prompt)
    mx.eval(last)
    settle()
    snap = CacheSnapshot(cache)
    tokens = [int(scalar(mx.argmax(last)))]
    for _ in range(k):
        logits = forward(tokens[-1:], verify=False)
        tokens.append(int(scalar(mx.argmax(logits[0, -1]))))
    snap.restore()
    forward(tokens, verify=True)
    snap.restore()
    settle()

    decode_path, verify_path = out / DECODE_FILE, out / verify_file(k)
    with _captured(metal, decode_path):
        forward(tokens[:1], verify=False)
        _sync()
    snap.restore()
    settle()
    with _captured(metal, verify_path):
        logits = forward(tokens, verify=True)
        _sync()
    snap.restore()
    # a check that the verify ran where the decode did: its greedy picks should be the drafts
    # (on Metal a near-tie may round differently in a batched row; that is reported, not refused)
    picks = values(mx.argmax(logits[0, :k], axis=-1))
    accepted = next((i for i, (p, t) in enumerate(zip(picks, tokens[1:])) if p != t), k)
    n = len(prompt)
    return {
        "k": k,
        "prompt_tokens": n,
        "captures": [
            {"name": "decode", "file": DECODE_FILE, "positions": 1, "start_position": n, "tokens": tokens[:1]},
            {"name": "verify", "file": verify_file(k), "positions": k + 1, "start_position": n, "tokens": tokens,
             "state_capture": hybrid, "accepted": accepted},
        ],
        "drafts": "the target's own greedy continuation (every draft right)",
        "hybrid": hybrid,
    }


def environment(metal=None) -> CaptureEnvironment:
    metal = metal or mx.metal
    try:
        from importlib.metadata import version

        mlx_version, mlx_lm_version = version("mlx"), version("mlx-lm")
    except Exception:  # pragma: no cover - metadata missing in odd installs
        mlx_version, mlx_lm_version = getattr(mx, "__version__", "?"), "?"
    info: DeviceInfo = {}
    try:
        if metal.is_available():
            info = _device_info(metal)
    except Exception:
        info = {}
    return {
        "mlx": mlx_version,
        "mlx_lm": mlx_lm_version,
        "device": device_label(metal),
        "mlx_device": str(mx.default_device()),
        "device_info": info,
        "os": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "python": platform.python_version(),
    }


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def run(spec: dict, metal=None, log=None) -> CaptureDescription:
    """The capture: check Metal, load the model, capture, write ``capture.json``; return its content."""
    from specscope.engine_adapter.model.loader import load_model

    log = log or (lambda msg: print(f"specscope: {msg}", file=sys.stderr, flush=True))
    require_metal(metal)  # again here: the worker may be started by hand
    out = Path(spec["out_dir"])
    if not out.is_dir():
        raise SpecscopeError(f"output folder {out} does not exist")
    k = int(spec["k"])
    if spec.get("demo"):
        from specscope.engine_adapter.model.demo_model import default_demo_path

        log("building/loading the demo model")
        path, name = str(default_demo_path("hybrid")), "the demo model"
    else:
        path, name = spec["model_path"], spec.get("model_name") or Path(spec["model_path"]).name
    log(f"loading {name}")
    lm = load_model(path, allow_oversize=bool(spec.get("allow_oversize")))
    prompt = lm.encode(spec["prompt"])
    if not prompt:
        raise SpecscopeError("the prompt encodes to no tokens")
    log(f"prefilling {len(prompt)} prompt tokens, then capturing decode (1 position) and verify ({k + 1} positions)")
    t0 = time.perf_counter()
    got = capture_forwards(lm.model, prompt, k, out, metal=metal)
    desc: CaptureDescription = {
        "what": "Metal GPU traces of one decode step and one verify forward (specscope capture)",
        "model": name,
        "model_path": str(path),
        "model_type": lm.config.get("model_type"),
        **got,
        "prompt": {"id": spec.get("prompt_id"), "text": spec["prompt"], "tokens": len(prompt)},
        "environment": environment(metal),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    _write_json(out / DESCRIPTION_FILE, desc)
    return desc
