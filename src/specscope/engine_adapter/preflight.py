"""The pre-flight: is this machine in a state whose numbers measure the method, not the machine?

Two steps, so each can be tested apart:

- ``take_readings(reader)``: every command, file and device fact the checks need, read once through the reader seam
  (``machine_reader``: this machine, or outputs recorded on other machines). Taken before the weights load, so free
  memory and GPU use are the machine's own, not the run's.
- ``evaluate(readings, parts, model_bytes)``: pure functions over those readings. Each check says ``pass``, ``warn``,
  ``fail`` or ``not checked`` (its probe could not run, or gave nothing it could read: never "ok" by default), with its
  evidence and the fix. The report's status is the worst of them; a ``fail`` stops a run unless the user insists
  (``--ignore-preflight``).

``parts`` are the dtypes each part of the model runs in *as loaded* (``preflight_parts``: from the files' headers with
the loader's rules, or from a loaded engine): the MTP head is cast to the target's dtype when it loads, so the shipped
demo's bfloat16 MTP file runs in float32 like its trunk.

Nothing here needs sudo and nothing changes the machine: every command only reads, and a fix is advice.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any, Literal, Mapping, cast

from specscope.errors import SpecscopeError
from specscope.events import Preflight, PreflightCheck

from .machine_probe import IOREG_ACCELERATOR, SYSTEM_PROFILER_DISPLAYS, gpu_cores_from
from .machine_reader import SystemReader, command_key
from .preflight_base import FAIL, NOT_CHECKED, PASS, WARN, Readings, check, gib
from .preflight_mac import (MAC_COMMANDS, check_bf16, check_chip, check_energy, check_gpu_idle, check_low_power,
                            check_swap, check_thermal, check_versions, check_wide_verify, check_wired_limit,
                            check_working_set)
from .preflight_parts import parts_from_checkpoints

_RANK = {NOT_CHECKED: 0, PASS: 0, WARN: 1, FAIL: 2}
_WORST: dict[int, Literal["pass", "warn", "fail"]] = {0: PASS, 1: WARN, 2: FAIL}


class PreflightReport(Preflight, total=False):
    """``specscope preflight``'s report: the pre-flight and the target it was taken for."""
    model: str | None


GOVERNORS = "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor"
LOADAVG, MEMINFO = "/proc/loadavg", "/proc/meminfo"

# thresholds (a share of the thing compared against)
LOAD_WARN = 0.5           # other processes' 1-minute load per CPU
MEM_AVAILABLE_WARN = 0.8  # model size as a share of MemAvailable


# -- readings ---------------------------------------------------------------------------------------------------------

READINGS_ENV = "SPECSCOPE_PREFLIGHT_READINGS"  # a file of readings recorded elsewhere, used instead of this machine's


def load_readings(path: str) -> Readings:
    """Readings saved by ``specscope preflight --save-readings`` (another machine's, a bug report's)."""
    try:
        d = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
    except OSError as exc:
        raise SpecscopeError(f"cannot read pre-flight readings {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise SpecscopeError(f"{path} is not a pre-flight readings file (not JSON)") from None
    if not isinstance(d, dict) or not isinstance(d.get("system"), str) or not isinstance(d.get("outputs", {}), dict) \
            or not isinstance(d.get("files", {}), dict) or not isinstance(d.get("device_info", {}), dict):
        raise SpecscopeError(f"{path} is not a pre-flight readings file (no system, outputs, files, device_info)")
    d["from_file"] = str(path)  # the report says the machine it describes is not this one
    return cast(Readings, d)


def take_readings(reader=None) -> Readings:
    """Everything the checks read, once (JSON-able): the system, MLX's device and versions, command outputs by
    ``command_key`` (None: could not run), files by path. With no reader and ``SPECSCOPE_PREFLIGHT_READINGS`` set,
    the readings in that file instead of this machine's."""
    if reader is None and os.environ.get(READINGS_ENV):
        return load_readings(os.environ[READINGS_ENV])
    reader = reader or SystemReader()
    system = reader.system
    r: Readings = {"system": system, "time": time.time(), "device_info": reader.device_info(),
               "mlx_device": reader.mlx_device(), "versions": reader.versions(), "cpu_count": reader.cpu_count(),
               "outputs": {}, "files": {}}
    if system == "Darwin":
        for cmd in MAC_COMMANDS:
            r["outputs"][command_key(cmd)] = reader.run(cmd)
        cores, _ = gpu_cores_from(r["device_info"], r["outputs"][command_key(IOREG_ACCELERATOR)])
        if cores is None:  # system_profiler is slow (about a second): asked only when ioreg did not say
            r["outputs"][command_key(SYSTEM_PROFILER_DISPLAYS)] = reader.run(SYSTEM_PROFILER_DISPLAYS)
    elif system == "Linux":
        for path in [LOADAVG, MEMINFO, *reader.glob(GOVERNORS)]:
            r["files"][path] = reader.read(path)
    return r


# -- Linux checks ---------------------------------------------------------------------------------------------------

def check_governor(r: Readings) -> PreflightCheck:
    govs = {p: (t or "").strip() for p, t in (r.get("files") or {}).items() if p.endswith("scaling_governor") and t}
    if not govs:
        return check("CPU frequency governor", NOT_CHECKED, "no /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor "
                     "(a VM or container without cpufreq)")
    counts: dict[str, int] = {}
    for g in govs.values():
        counts[g] = counts.get(g, 0) + 1
    ev = "scaling_governor: " + ", ".join(f"{g} on {n} CPU{'s' if n > 1 else ''}" for g, n in sorted(counts.items()))
    if "powersave" in counts:
        return check("CPU frequency governor", WARN, ev + ": clocks held low or scaling with load",
                     "your choice: `sudo cpupower frequency-set -g performance` (until reboot)")
    return check("CPU frequency governor", PASS, ev)


def check_load(r: Readings) -> PreflightCheck:
    text, n = (r.get("files") or {}).get(LOADAVG), r.get("cpu_count")
    try:
        load1 = float((text or "").split()[0])
    except (IndexError, ValueError):
        return check("other processes' load", NOT_CHECKED, "/proc/loadavg gave nothing readable")
    if not n:
        return check("other processes' load", NOT_CHECKED, f"load {load1:.2f}, but the CPU count is unknown")
    ev = f"1-minute load {load1:.2f} over {n} CPUs ({load1 / n:.0%} per CPU) before the run starts"
    if load1 / n >= LOAD_WARN:
        return check("other processes' load", WARN, ev + ": other processes compete for the cores",
                     "stop other heavy jobs; the ABBA order spreads drift over both modes, but not a busy machine's noise")
    return check("other processes' load", PASS, ev)


def check_free_memory(r: Readings, model_bytes: int | None) -> PreflightCheck:
    m = re.search(r"^MemAvailable:\s*(\d+)\s*kB", (r.get("files") or {}).get(MEMINFO) or "", re.M)
    if not m:
        return check("free memory", NOT_CHECKED, "/proc/meminfo has no MemAvailable")
    avail = int(m.group(1)) * 1024
    if not model_bytes:
        return check("free memory", NOT_CHECKED, f"MemAvailable {gib(avail)}; no model given to compare")
    ev = f"weights {gib(model_bytes)} vs MemAvailable {gib(avail)}"
    if model_bytes > avail:
        return check("free memory", FAIL, ev + ": the model would swap", "free memory, or a smaller model or quantization")
    if model_bytes > MEM_AVAILABLE_WARN * avail:
        return check("free memory", WARN, ev + f": over {MEM_AVAILABLE_WARN:.0%} of it", "free memory before the run")
    return check("free memory", PASS, ev)


def check_backend(r: Readings) -> PreflightCheck:
    info, v = r.get("device_info") or {}, r.get("versions") or {}
    dev = r.get("mlx_device") or "?"
    ev = (f"MLX {v.get('mlx') or '?'}, mlx-lm {v.get('mlx-lm') or '?'} on {dev}"
          + (f" ({info.get('device_name')}, {info.get('architecture')})" if info.get("device_name") else ""))
    if dev == "?":
        return check("MLX backend and device", NOT_CHECKED, ev)
    return check("MLX backend and device", PASS, ev + ("; CPU backend: timings are the CPU's" if "cpu" in dev else ""))


# -- the report -----------------------------------------------------------------------------------------------------

def evaluate(readings: Readings, parts: list[dict] | None = None, model_bytes: int | None = None) -> PreflightReport:
    """The checks for the readings' system, with the parts' dtypes and the model's bytes: ``{"status", "system",
    "checks": [...], "parts", "model_bytes", "counts", "time"}``."""
    parts = list(parts or [])
    system = readings.get("system")
    if system == "Darwin":
        checks = [check_chip(readings), check_bf16(readings, parts), check_wide_verify(readings),
                  check_working_set(readings, model_bytes), check_wired_limit(readings, model_bytes),
                  check_low_power(readings), check_thermal(readings), check_swap(readings), check_gpu_idle(readings),
                  check_versions(readings), check_energy(readings)]
    elif system == "Linux":
        checks = [check_backend(readings), check_governor(readings), check_load(readings),
                  check_free_memory(readings, model_bytes), check_wide_verify(readings), check_energy(readings)]
    else:
        checks = [check_backend(readings), check_wide_verify(readings), check_energy(readings)]
    worst = max((_RANK[c["status"]] for c in checks), default=0)
    counts = {s: sum(c["status"] == s for c in checks) for s in (PASS, WARN, FAIL, NOT_CHECKED)}
    return {"status": _WORST[worst], "system": system, "checks": checks, "parts": parts,
            "model_bytes": model_bytes, "counts": counts, "time": readings.get("time"),
            "readings_from": readings.get("from_file")}


def failed(report: Mapping[str, Any]) -> list[dict]:
    return [c for c in report.get("checks", []) if c["status"] == FAIL]


def refusal(report: Mapping[str, Any]) -> str:
    """The message a run that a failed pre-flight stops says."""
    names = "; ".join(f"{c['name']}: {c['evidence']}" for c in failed(report))
    return f"pre-flight failed ({names}); its numbers would measure the machine, not the method. " \
           "Fix it (`specscope preflight` says how), or pass --ignore-preflight to run anyway"


def format_report(report: Mapping[str, Any], only_problems: bool = False) -> str:
    """The report as text: one line per check (``only_problems``: warns and fails only), its fix under it."""
    c = report.get("counts") or {}
    where = report.get("system") or "?"
    if report.get("readings_from"):
        where += f", readings recorded in {report['readings_from']}, not this machine's"
    head = (f"pre-flight ({where}): {report.get('status', '?').upper()} — "
            f"{c.get(PASS, 0)} pass, {c.get(WARN, 0)} warn, {c.get(FAIL, 0)} fail, {c.get(NOT_CHECKED, 0)} not checked")
    lines = [head]
    for ch in report.get("checks", []):
        if only_problems and ch["status"] not in (WARN, FAIL):
            continue
        lines.append(f"  {ch['status'].upper():<11} {ch['name']}: {ch['evidence']}")
        if ch.get("fix") and ch["status"] in (WARN, FAIL):
            lines.append(f"  {'':<11} fix: {ch['fix']}")
    return "\n".join(lines)


def preflight_for_paths(target: str | None, drafter: str = "auto", draft_model: str | None = None,
                        mtp_weights: str | None = None, reader=None) -> PreflightReport:
    """``specscope preflight``: the readings now, and the parts a run of these models would load (from their headers)."""
    readings = take_readings(reader)
    parts, nbytes = parts_from_checkpoints(target, drafter, draft_model, mtp_weights)
    out = evaluate(readings, parts, nbytes)
    out["model"] = str(Path(target)) if target else None
    return out
