"""The pre-flight's macOS checks (``preflight.evaluate`` runs them on a Mac's readings): the chip and what its GPU
generation does (bfloat16, a wide verify's expected cost), the model against the GPU's working set and wired limit,
Low Power Mode, thermal pressure, swap, the GPU busy before the run, the versions, and whether energy can be read.
Pure functions over readings (``preflight_base.Readings``); nothing here runs a command."""

from __future__ import annotations

import re

from specscope.events import PreflightCheck

from .chip_facts import (FIRST_NATIVE_BF16_FAMILY, GPU_FAMILIES, QMV_WIDE_MLX, chip_name, generation, mlx_has_qmv_wide,
                         wide_verify_facts)
from .machine_probe import IOREG_ACCELERATOR, SYSTEM_PROFILER_DISPLAYS, gpu_cores_from, recognise_chip
from .machine_reader import MAC_EXTRA
from .mlx_lm_compat import untested
from .preflight_base import FAIL, NOT_CHECKED, PASS, WARN, Readings, check, gib, out as _out

PMSET = ("pmset", "-g")
PMSET_THERM = ("pmset", "-g", "therm")
THERMAL_PRESSURE = ("notifyutil", "-g", "com.apple.system.thermalpressurelevel")
SWAP = ("sysctl", "vm.swapusage")
WIRED_LIMIT = ("sysctl", "iogpu.wired_limit_mb")
MACOS_VERSION = ("sw_vers", "-productVersion")
MAC_COMMANDS = (PMSET, PMSET_THERM, THERMAL_PRESSURE, SWAP, WIRED_LIMIT, IOREG_ACCELERATOR, MACOS_VERSION)

# thresholds (a share of the thing compared against)
WORKING_SET_WARN = 0.85   # weights above this share of the recommended working set leave little for the KV cache
GPU_BUSY_WARN, GPU_BUSY_FAIL = 10, 50   # % "Device Utilization" while specscope has not started measuring
SWAP_WARN_MB = 512
# notifyutil's thermal pressure levels (com.apple.system.thermalpressurelevel; the names powermetrics prints) and what
# ProcessInfo.thermalState calls them
THERMAL_LEVELS = {0: ("nominal", "nominal"), 1: ("moderate", "fair"), 2: ("heavy", "serious"),
                  3: ("trapping", "critical"), 4: ("sleeping", "critical")}


def check_chip(r: Readings) -> PreflightCheck:
    info = r.get("device_info") or {}
    name = info.get("device_name")
    if not name:
        return check("chip and GPU", NOT_CHECKED, "MLX gave no device name (mx.device_info() was empty)")
    cores, where = gpu_cores_from(info, _out(r, IOREG_ACCELERATOR), _out(r, SYSTEM_PROFILER_DISPLAYS))
    chip = recognise_chip(name, cores)
    fam = generation(architecture=info.get("architecture"))
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
    fam = generation(info.get("device_name"), info.get("architecture"))
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



WIDE_VERIFY = "wide verify on this chip"
MEASURE_HERE = "The Verify cost page (`specscope roofline`) measures this machine's own."


def check_wide_verify(r: Readings) -> PreflightCheck:
    """What a verify of several positions is expected to cost against one decode step on this chip, from the public
    measurements (``chip_facts``), and whether mlx's qmv_wide serves it. A statement, not a fault: it fails nothing;
    it warns only where the chip has qmv_wide and this MLX predates it."""
    info = r.get("device_info") or {}
    facts = wide_verify_facts(info.get("device_name"), r.get("mlx_device") or None, info.get("architecture"))
    if not facts["applies"]:
        return check(WIDE_VERIFY, NOT_CHECKED, facts["text"])
    ev = facts["text"]
    mlx = (r.get("versions") or {}).get("mlx")
    has = mlx_has_qmv_wide(mlx)
    if facts["qmv_wide"] and has is False:
        need = ".".join(map(str, QMV_WIDE_MLX))
        return check(WIDE_VERIFY, WARN, f"{ev} This MLX ({mlx}) predates qmv_wide (MLX {need}): a wide verify here "
                     f"pays the per-row path. {MEASURE_HERE}", f"`pip install -U 'mlx>={need}'`")
    if facts["qmv_wide"]:
        ev += f" This MLX: {mlx}" + (" (has it)" if has else " (version unreadable)") + "."
    return check(WIDE_VERIFY, PASS, f"{ev} {MEASURE_HERE}")


ENERGY = "energy readings"
ENERGY_NOT_HERE = "not available here (energy counters are read on macOS on Apple silicon only)"
# The counters' update cadence, from public notes (SiliconScope's, as the design brief reports them; the notes were not
# read here and do not say from which macOS version on): per-domain energy counters update in batches, the GPU counter
# stays live. Chips the notes name, and what they say for each:
ENERGY_CADENCE = {"M5 Max": "in batches about every 2 s",
                  "M1 Max": "only at power-management events (roughly every 30 minutes)"}


def energy_cadence(chip: str | None, macos: str | None) -> str:
    """What the public notes say of this chip's energy counters' cadence, and that the run checks it."""
    seen = ENERGY_CADENCE.get(chip or "")
    here = (f"on this chip ({chip}) the notes say the per-domain counters update {seen}" if seen else
            f"the notes give no cadence for this chip ({chip or 'unknown'}); on an M5 Max they update about every 2 s, "
            "on an M1 Max only at power-management events")
    return (f"public notes (SiliconScope) say that on recent macOS the per-domain energy counters update in batches "
            f"while the GPU counter stays live; {here} (macOS {macos or '?'} here: the notes do not say from which "
            "version on). A window shorter than the update period reads a stale counter: specscope checks the cadence "
            "during the run")


def check_energy(r: Readings) -> PreflightCheck:
    """Whether energy can be read here and how: never a fault (a run does not need it), so never warn or fail."""
    info = r.get("device_info") or {}
    if r.get("system") != "Darwin":
        return check(ENERGY, NOT_CHECKED, f"{ENERGY_NOT_HERE}; this machine: {r.get('system') or '?'}")
    chip = chip_name(info.get("device_name"))
    if not chip and generation(architecture=info.get("architecture")) is None:
        return check(ENERGY, NOT_CHECKED, f"{ENERGY_NOT_HERE}; MLX names no Apple-silicon GPU here")
    versions = r.get("versions") or {}
    if "macmon-lib" not in versions:
        return check(ENERGY, NOT_CHECKED, "the readings do not say whether the `mac` extra (macmon-lib) is installed "
                     "(recorded before specscope read it)")
    lib = versions.get("macmon-lib")
    if not lib:
        return check(ENERGY, NOT_CHECKED, f"not read: the `mac` extra (macmon-lib) is not installed or cannot be "
                     f"imported; `{MAC_EXTRA}` installs it (IOReport's energy counters, no sudo)")
    macos = (_out(r, MACOS_VERSION) or "").strip() or None
    return check(ENERGY, PASS, f"read through macmon-lib {lib} (IOReport's counters, no sudo); "
                 + energy_cadence(chip, macos))
