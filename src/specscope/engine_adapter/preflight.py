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
from typing import Any, Final, Literal, Mapping, NotRequired, TypedDict, cast

from specscope.errors import SpecscopeError
from specscope.events import Preflight, PreflightCheck, PreflightStatus

from .machine_probe import IOREG_ACCELERATOR, SYSTEM_PROFILER_DISPLAYS, gpu_cores_from, recognise_chip
from .machine_reader import SystemReader, Versions, command_key
from .mlx_lm_compat import untested
from .preflight_parts import parts_from_checkpoints

PASS: Final = "pass"
WARN: Final = "warn"
FAIL: Final = "fail"
NOT_CHECKED: Final = "not checked"
_RANK = {NOT_CHECKED: 0, PASS: 0, WARN: 1, FAIL: 2}
_WORST: dict[int, Literal["pass", "warn", "fail"]] = {0: PASS, 1: WARN, 2: FAIL}


class Readings(TypedDict):
    """What the checks read (``take_readings``), JSON-able: command outputs by ``command_key`` (None: could not run),
    files by path. Readings recorded elsewhere (``load_readings``) need only ``system``; the checks ``.get`` the rest."""
    system: str
    time: NotRequired[float]
    device_info: NotRequired[dict[str, Any]]
    mlx_device: NotRequired[str | None]
    versions: NotRequired[Versions]
    cpu_count: NotRequired[int | None]
    outputs: NotRequired[dict[str, str | None]]
    files: NotRequired[dict[str, str | None]]
    from_file: NotRequired[str]     # readings loaded from this file (another machine's), not this machine's


class PreflightReport(Preflight, total=False):
    """``specscope preflight``'s report: the pre-flight and the target it was taken for."""
    model: str | None

PMSET = ("pmset", "-g")
PMSET_THERM = ("pmset", "-g", "therm")
THERMAL_PRESSURE = ("notifyutil", "-g", "com.apple.system.thermalpressurelevel")
SWAP = ("sysctl", "vm.swapusage")
WIRED_LIMIT = ("sysctl", "iogpu.wired_limit_mb")
MACOS_VERSION = ("sw_vers", "-productVersion")
MAC_COMMANDS = (PMSET, PMSET_THERM, THERMAL_PRESSURE, SWAP, WIRED_LIMIT, IOREG_ACCELERATOR, MACOS_VERSION)
GOVERNORS = "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor"
LOADAVG, MEMINFO = "/proc/loadavg", "/proc/meminfo"

# thresholds (a share of the thing compared against)
WORKING_SET_WARN = 0.85   # weights above this share of the recommended working set leave little for the KV cache
GPU_BUSY_WARN, GPU_BUSY_FAIL = 10, 50   # % "Device Utilization" while specscope has not started measuring
SWAP_WARN_MB = 512
LOAD_WARN = 0.5           # other processes' 1-minute load per CPU
MEM_AVAILABLE_WARN = 0.8  # model size as a share of MemAvailable
# notifyutil's thermal pressure levels (com.apple.system.thermalpressurelevel; the names powermetrics prints) and what
# ProcessInfo.thermalState calls them
THERMAL_LEVELS = {0: ("nominal", "nominal"), 1: ("moderate", "fair"), 2: ("heavy", "serious"),
                  3: ("trapping", "critical"), 4: ("sleeping", "critical")}
# Apple GPU families (MLX's "architecture": applegpu_g13s -> 13) and the chips they are; bfloat16 runs natively from
# the M3 family on; M1 and M2 emulate it
GPU_FAMILIES = {13: "M1", 14: "M2", 15: "M3", 16: "M4", 17: "M5"}
FIRST_NATIVE_BF16_FAMILY = 15


def check(name: str, status: PreflightStatus, evidence: str, fix: str = "") -> PreflightCheck:
    return {"name": name, "status": status, "evidence": evidence, "fix": fix}


def gib(n: float | int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


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


def _out(r: Readings, cmd) -> str | None:
    return (r.get("outputs") or {}).get(command_key(cmd))


# -- macOS checks ---------------------------------------------------------------------------------------------------

def gpu_family(info: dict) -> int | None:
    m = re.search(r"applegpu_g(\d+)", str(info.get("architecture") or ""))
    return int(m.group(1)) if m else None


def check_chip(r: Readings) -> PreflightCheck:
    info = r.get("device_info") or {}
    name = info.get("device_name")
    if not name:
        return check("chip and GPU", NOT_CHECKED, "MLX gave no device name (mx.device_info() was empty)")
    cores, where = gpu_cores_from(info, _out(r, IOREG_ACCELERATOR), _out(r, SYSTEM_PROFILER_DISPLAYS))
    chip = recognise_chip(name, cores)
    fam = gpu_family(info)
    bw = chip["nominal_bandwidth_gbs"]
    ev = (f"{name}, GPU family {info.get('architecture', '?')}"
          + (f" ({GPU_FAMILIES[fam]} generation)" if fam in GPU_FAMILIES else "")
          + (f", {cores}-core GPU ({where})" if cores else ", GPU cores not found")
          + (f"; nominal {bw:g} GB/s" if bw else f"; no nominal bandwidth ({chip['nominal_bin']})"))
    if chip["chip"] == "unknown":
        return check("chip and GPU", WARN, ev + "; not an Apple chip specscope knows",
                     "the roofline has no nominal figures for it; the measured figures still hold")
    return check("chip and GPU", PASS, ev)


def check_bf16(r: Readings, parts: list[dict]) -> PreflightCheck:
    info = r.get("device_info") or {}
    fam = gpu_family(info)
    if fam is None:
        m = re.search(r"\bM([1-9])\b", str(info.get("device_name") or ""))
        fam = {1: 13, 2: 14, 3: 15, 4: 16, 5: 17}.get(int(m.group(1))) if m else None
    if not parts:
        return check("bfloat16 on this GPU", NOT_CHECKED, "no model given: the parts' dtypes are not known")
    if fam is None:
        return check("bfloat16 on this GPU", NOT_CHECKED, "GPU family unknown (no architecture in MLX's device info)")
    listed = "; ".join(f"{p['part']} {p['dtype'] or '?'} ({p['how']})" for p in parts)
    if all(p["dtype"] is None for p in parts):
        return check("bfloat16 on this GPU", NOT_CHECKED, f"{listed}: no part's dtype could be read")
    if fam >= FIRST_NATIVE_BF16_FAMILY:
        return check("bfloat16 on this GPU", PASS, f"{listed}; this GPU ({GPU_FAMILIES.get(fam, fam)}) runs bfloat16 natively")
    bf = [p for p in parts if p["dtype"] == "bfloat16"]
    if not bf:
        return check("bfloat16 on this GPU", PASS, f"{listed}; nothing runs in bfloat16")
    fixes = []
    for p in bf:
        if p["part"] == "target":
            fixes.append(f"target: `mlx_lm.convert --hf-path {p['path']} --mlx-path {p['path']}-fp16 --dtype float16` "
                         "(add -q to quantize) and run that; the conversion drops the mtp.* tensors, so keep the "
                         "original folder for --mtp-weights")
        elif p["part"] == "MTP head":
            fixes.append("MTP head: it is cast to the target's dtype when it loads, so it runs in float16 once the target "
                         f"does: convert the target as above and pass `--mtp-weights {p['path']}` (the original folder)")
        else:
            fixes.append(f"draft model: `mlx_lm.convert --hf-path {p['path']} --mlx-path {p['path']}-fp16 --dtype float16` "
                         f"and pass `--draft-model {p['path']}-fp16`")
    return check("bfloat16 on this GPU", WARN,
                 f"{listed}; {GPU_FAMILIES.get(fam, 'this')} GPUs have no native bfloat16 (emulated: verify, which is "
                 "compute-bound, pays more than decode)", "; ".join(fixes))


RAISE_WIRED = ("raising it is your choice: `sudo sysctl iogpu.wired_limit_mb=<MB>` (until reboot; leave macOS at least "
               "8 GB: a bad value can hang the machine)")


def check_working_set(r: Readings, model_bytes: int | None) -> PreflightCheck:
    info = r.get("device_info") or {}
    ws = info.get("max_recommended_working_set_size")
    if not model_bytes:
        return check("model vs GPU working set", NOT_CHECKED, "no model given")
    if not isinstance(ws, (int, float)) or ws <= 0:
        return check("model vs GPU working set", NOT_CHECKED, "MLX gave no max_recommended_working_set_size")
    ev = (f"weights {gib(model_bytes)} vs recommended working set {gib(ws)}"
          + (f" (memory {gib(info['memory_size'])})" if isinstance(info.get("memory_size"), (int, float)) else ""))
    if model_bytes > ws:
        return check("model vs GPU working set", FAIL, ev + ": the weights page in and out, so the run measures paging",
                     "a smaller quantization or a smaller model; or " + RAISE_WIRED)
    if model_bytes > WORKING_SET_WARN * ws:
        return check("model vs GPU working set", WARN, ev + f": over {WORKING_SET_WARN:.0%}, little left for the KV cache",
                     "keep contexts short, or use a smaller quantization; or " + RAISE_WIRED)
    return check("model vs GPU working set", PASS, ev)


def check_wired_limit(r: Readings, model_bytes: int | None) -> PreflightCheck:
    out = _out(r, WIRED_LIMIT)
    m = re.search(r"iogpu\.wired_limit_mb:\s*(\d+)", out or "")
    if not m:
        return check("GPU wired limit", NOT_CHECKED, "`sysctl iogpu.wired_limit_mb` gave nothing readable"
                     + ("" if out is None else f": {out.strip()[:80]!r}"))
    mb = int(m.group(1))
    if mb == 0:
        return check("GPU wired limit", PASS, "iogpu.wired_limit_mb = 0 (the system default)")
    ev = f"iogpu.wired_limit_mb = {mb} ({gib(mb * 2**20)})"
    if model_bytes and model_bytes > mb * 2**20:
        return check("GPU wired limit", WARN, f"{ev}, below the weights ({gib(model_bytes)})", RAISE_WIRED)
    return check("GPU wired limit", PASS, ev + (f", above the weights ({gib(model_bytes)})" if model_bytes else ""))


def check_low_power(r: Readings) -> PreflightCheck:
    out = _out(r, PMSET)
    if out is None:
        return check("Low Power Mode", NOT_CHECKED, "`pmset -g` could not run")
    m = re.search(r"^\s*(lowpowermode|powermode)\s+(\d+)", out, re.M)
    if not m:
        return check("Low Power Mode", NOT_CHECKED, "`pmset -g` has no lowpowermode or powermode line")
    key, val = m.group(1), int(m.group(2))
    if val == 1:
        return check("Low Power Mode", FAIL, f"pmset -g: {key} {val} (Low Power Mode is on: GPU and CPU clocks are capped)",
                     "turn it off: System Settings → Battery → Low Power Mode: Never (or `sudo pmset -a lowpowermode 0`)")
    return check("Low Power Mode", PASS, f"pmset -g: {key} {val}" + (" (High Power Mode)" if val == 2 else ""))


def check_thermal(r: Readings) -> PreflightCheck:
    level_out, therm = _out(r, THERMAL_PRESSURE), _out(r, PMSET_THERM)
    m = re.search(r"thermalpressurelevel\s+(\d+)", level_out or "")
    limits = {k: int(v) for k, v in re.findall(r"(CPU_\w+_Limit)\s*=\s*(\d+)", therm or "")}
    fix = ("let the Mac cool down (lid open, nothing on the vents, plugged in) and run again; `--cooldown` waits "
           "before each case")
    if m:
        lvl = int(m.group(1))
        name, pinfo = THERMAL_LEVELS.get(lvl, (f"level {lvl}", "critical"))
        ev = f"thermal pressure {name} (ProcessInfo: {pinfo}; notifyutil level {lvl})"
        if lvl >= 2:
            return check("thermal state", FAIL, ev + ": the chip is throttling", fix)
        if lvl == 1:
            return check("thermal state", WARN, ev, fix)
        speed = limits.get("CPU_Speed_Limit")
        if speed is not None and speed < 100:
            return check("thermal state", WARN, f"{ev}; pmset -g therm: CPU_Speed_Limit = {speed}", fix)
        return check("thermal state", PASS, ev)
    speed = limits.get("CPU_Speed_Limit")
    if speed is not None:
        ev = "pmset -g therm: " + ", ".join(f"{k} = {v}" for k, v in limits.items())
        return check("thermal state", PASS if speed >= 100 else FAIL, ev, "" if speed >= 100 else fix)
    # On Apple silicon `pmset -g therm` only says "No thermal warning level has been recorded": no evidence either way
    return check("thermal state", NOT_CHECKED, "no thermal pressure level (notifyutil) and no CPU speed limit in "
                 "`pmset -g therm`" + (f": {therm.strip().splitlines()[0]!r}" if therm and therm.strip() else ""))


def _megabytes(num: str, unit: str) -> float:
    return float(num) * {"K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2}.get(unit.upper(), 1.0)


def check_swap(r: Readings) -> PreflightCheck:
    out = _out(r, SWAP)
    m = re.search(r"used\s*=\s*([\d.]+)([KMGT])", out or "")
    if not m:
        return check("swap in use", NOT_CHECKED, "`sysctl vm.swapusage` gave nothing readable")
    used = _megabytes(*m.groups())
    t = re.search(r"total\s*=\s*([\d.]+)([KMGT])", out or "")
    ev = f"vm.swapusage: {used:.0f} MB used" + (f" of {_megabytes(*t.groups()):.0f} MB" if t else "")
    if used >= SWAP_WARN_MB:
        return check("swap in use", WARN, ev + ": memory was short; a model that pages measures the SSD",
                     "quit memory-hungry apps (Activity Monitor → Memory); a restart clears the swap")
    return check("swap in use", PASS, ev)


def check_gpu_idle(r: Readings) -> PreflightCheck:
    out = _out(r, IOREG_ACCELERATOR)
    vals = [int(v) for v in re.findall(r'"Device Utilization %"\s*=\s*(\d+)', out or "")]
    if not vals:
        return check("GPU busy before the run", NOT_CHECKED, "ioreg's IOAccelerator entry has no \"Device Utilization %\"")
    busy = max(vals)
    ev = f"GPU {busy}% busy (ioreg \"Device Utilization %\") while specscope measures nothing"
    fix = ("something else is using the GPU (a model server such as LM Studio or Ollama, a browser playing video, "
           "a game): quit it; Activity Monitor → Window → GPU History shows who")
    if busy >= GPU_BUSY_FAIL:
        return check("GPU busy before the run", FAIL, ev, fix)
    if busy >= GPU_BUSY_WARN:
        return check("GPU busy before the run", WARN, ev, fix)
    return check("GPU busy before the run", PASS, ev)


def check_versions(r: Readings) -> PreflightCheck:
    v = r.get("versions") or {}
    mac = (_out(r, MACOS_VERSION) or "").strip()
    parts = ([f"macOS {mac}"] if mac else []) + [f"MLX {v.get('mlx') or '?'}", f"mlx-lm {v.get('mlx-lm') or '?'}"]
    dev = r.get("mlx_device") or "?"
    if r.get("system") == "Darwin" and "gpu" not in dev:
        return check("versions and device", FAIL, ", ".join(parts) + f"; MLX runs on {dev}, not the GPU",
                     "install MLX's Metal build (`pip install -U mlx`) on an Apple-silicon Mac, in a native arm64 Python")
    why = untested(v.get("mlx-lm"))
    if why:  # specscope builds models through mlx-lm's private names (engine_adapter.mlx_lm_compat)
        return check("versions and device", WARN, ", ".join(parts) + f"; MLX device {dev}; {why.split('; ')[0]}",
                     why.split("; ", 1)[1])
    return check("versions and device", PASS, ", ".join(parts) + f"; MLX device {dev}")


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
        checks = [check_chip(readings), check_bf16(readings, parts), check_working_set(readings, model_bytes),
                  check_wired_limit(readings, model_bytes), check_low_power(readings), check_thermal(readings),
                  check_swap(readings), check_gpu_idle(readings), check_versions(readings)]
    elif system == "Linux":
        checks = [check_backend(readings), check_governor(readings), check_load(readings),
                  check_free_memory(readings, model_bytes)]
    else:
        checks = [check_backend(readings)]
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
