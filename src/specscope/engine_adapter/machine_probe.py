"""What the machine that runs the model can do, measured, beside what its maker says.

- **Bandwidth probe**: a streaming read (a sum) over an array far larger than the caches, on MLX's
  default device (the one the model runs on), median of a few repetitions, in GB/s.
- **Compute probe**: a square matmul in the model's dtype, median of a few repetitions, in TFLOP/s.
- **Chip recognition**: the device name (Metal) or the CPU's brand string, matched against the chip table
  (``chip_facts.BINS``: Apple M1–M5 base / Pro / Max / Ultra by GPU bin, the core count read through
  ``machine_reader``) with their nominal unified-memory bandwidth and GPU FP32 throughput; anything else is
  "unknown" (no nominal figures).

Both probes take a size so a test runs in well under a second; the defaults (512 MiB, a 1024² matmul
on a CPU, 4096² on a GPU) run in a few seconds. The roofline's floors divide by the *measured* figures:
a nominal figure is what the chip could do, the measured one is what MLX gets from it here.
"""

from __future__ import annotations

import re
import statistics
import time
from typing import TypedDict

import mlx.core as mx

from specscope.engine_adapter.chip_facts import BINS, chip_name
from specscope.engine_adapter.clock import ms_since

DEFAULT_BANDWIDTH_MIB = 512
DEFAULT_REPS = 5


class Nominal(TypedDict):
    """A chip's nominal figures for one GPU bin (``nominal``); ``bin`` says which, or why a figure is None."""
    bandwidth_gbs: float | None
    tflops: float | None
    gpu_cores: int | None
    bin: str


class Chip(TypedDict):
    """The recognised chip and its nominal figures (``recognise_chip``)."""
    chip: str
    name: str | None
    nominal_bandwidth_gbs: float | None
    nominal_tflops: float | None
    gpu_cores: int | None
    nominal_bin: str | None


class BandwidthProbe(TypedDict):
    """The streaming-read probe (``bandwidth_probe``)."""
    bandwidth_gbs: float
    bytes: int
    reps: int
    ms: list[float]
    method: str


class ComputeProbe(TypedDict):
    """The matmul probe (``compute_probe``)."""
    peak_tflops: float
    n: int
    dtype: str
    reps: int
    ms: list[float]
    method: str


class MachineProbe(TypedDict):
    """Both probes plus the recognised chip (``probe_machine``), JSON-able."""
    device: str
    chip: str
    device_name: str | None
    bandwidth_gbs: float
    peak_tflops: float
    nominal_bandwidth_gbs: float | None
    nominal_tflops: float | None
    gpu_cores: int | None
    nominal_bin: str | None
    bandwidth_probe: BandwidthProbe
    compute_probe: ComputeProbe


def nominal(chip: str, gpu_cores: int | None = None) -> Nominal:
    """The nominal figures of ``chip`` ("M3 Max", or "Apple M3 Max") with ``gpu_cores`` GPU cores: ``{"bandwidth_gbs",
    "tflops", "gpu_cores", "bin"}``. Unknown cores: a figure all the chip's bins share, else None (``bin`` says why);
    a core count the table does not list: None for both, said in ``bin``."""
    name = chip.removeprefix("Apple ").strip()
    rows = BINS.get(name)
    if not rows:
        return {"bandwidth_gbs": None, "tflops": None, "gpu_cores": gpu_cores, "bin": "chip not in the table"}
    if gpu_cores is not None:
        row = next((r for r in rows if r[0] == gpu_cores), None)
        if row is None:
            listed = ", ".join(str(r[0]) for r in rows if r[0])
            return {"bandwidth_gbs": None, "tflops": None, "gpu_cores": gpu_cores,
                    "bin": f"{gpu_cores}-core GPU is not a known {name} bin ({listed or 'no bins known'})"}
        return {"bandwidth_gbs": row[1], "tflops": row[2], "gpu_cores": gpu_cores,
                "bin": f"{gpu_cores}-core GPU" if gpu_cores else "one bin"}
    bws, tfs = {r[1] for r in rows}, {r[2] for r in rows}
    return {"bandwidth_gbs": bws.pop() if len(bws) == 1 else None, "tflops": tfs.pop() if len(tfs) == 1 else None,
            "gpu_cores": None, "bin": "GPU cores unknown" + ("" if len(bws) == 1 else
                                                             f": {name}'s bins differ in bandwidth")}


def recognise_chip(name: str | None = None, gpu_cores: int | None = None) -> Chip:
    """The Apple chip named in ``name`` (default: this machine's device / CPU name) and its nominal figures for
    ``gpu_cores`` (default for this machine: read through ``machine_reader``; see ``gpu_cores``)."""
    if name is None:
        name = machine_name()
        if gpu_cores is None:
            gpu_cores = read_gpu_cores()
    chip = chip_name(name)
    if not chip:
        return {"chip": "unknown", "name": name, "nominal_bandwidth_gbs": None, "nominal_tflops": None,
                "gpu_cores": gpu_cores, "nominal_bin": None}
    nom = nominal(chip, gpu_cores)
    return {"chip": f"Apple {chip}", "name": name, "nominal_bandwidth_gbs": nom["bandwidth_gbs"],
            "nominal_tflops": nom["tflops"], "gpu_cores": gpu_cores, "nominal_bin": nom["bin"]}


IOREG_ACCELERATOR = ("ioreg", "-r", "-d", "1", "-w", "0", "-c", "IOAccelerator")
SYSTEM_PROFILER_DISPLAYS = ("system_profiler", "SPDisplaysDataType")
_IOREG_CORES = re.compile(r'"gpu-core-count"\s*=\s*(\d+)')
_SP_CORES = re.compile(r"Total Number of Cores:\s*(\d+)")
_INFO_CORE_KEYS = ("gpu_core_count", "gpu_cores", "core_count")


def gpu_cores_from(device_info: dict, ioreg: str | None = None, system_profiler: str | None = None) -> tuple[int | None, str]:
    """The GPU core count and where it was read: MLX's device info where it gives one, else ``ioreg``'s accelerator
    entry (``"gpu-core-count" = 32``), else ``system_profiler SPDisplaysDataType`` (``Total Number of Cores: 32``)."""
    for k in _INFO_CORE_KEYS:
        v = device_info.get(k)
        if isinstance(v, int) and v > 0:
            return v, f"MLX device info ({k})"
    for text, rx, where in ((ioreg, _IOREG_CORES, "ioreg IOAccelerator gpu-core-count"),
                            (system_profiler, _SP_CORES, "system_profiler SPDisplaysDataType")):
        m = rx.search(text or "")
        if m:
            return int(m.group(1)), where
    return None, "not found"


def read_gpu_cores(reader=None) -> int | None:
    """This machine's GPU core count through the reader seam (macOS only; None elsewhere or when nothing says)."""
    from .machine_reader import SystemReader

    reader = reader or SystemReader()
    if reader.system != "Darwin":
        return None
    info = reader.device_info()
    cores, _ = gpu_cores_from(info, reader.run(IOREG_ACCELERATOR))
    if cores is None:
        cores, _ = gpu_cores_from(info, None, reader.run(SYSTEM_PROFILER_DISPLAYS))
    return cores


def machine_name() -> str:
    """The Metal device name where there is one, else the CPU's brand string."""
    from .engine import environment

    env = environment()
    name = env.get("device_name") or ""
    return name if "apple" in name.lower() else (env.get("chip") or name)


def _median_ms(fn, reps: int) -> tuple[float, list[float]]:
    fn()  # warm: allocation, first-touch, kernel compilation
    ms = []
    for _ in range(max(1, reps)):
        t0 = time.perf_counter()
        fn()
        ms.append(ms_since(t0))
    return statistics.median(ms), ms


def bandwidth_probe(size_mib: float = DEFAULT_BANDWIDTH_MIB, reps: int = DEFAULT_REPS) -> BandwidthProbe:
    """GB/s of a streaming read: the sum of a float32 array of ``size_mib`` MiB (each byte read once)."""
    n = max(1024, int(size_mib * 2**20) // 4)
    a = mx.ones((n,), dtype=mx.float32) + 0  # materialised, not a broadcast constant
    mx.eval(a)
    med, ms = _median_ms(lambda: mx.eval(mx.sum(a)), reps)
    nbytes = n * 4
    return {"bandwidth_gbs": nbytes / (med / 1000.0) / 1e9, "bytes": nbytes, "reps": len(ms), "ms": ms,
            "method": f"sum over {nbytes / 2**20:.0f} MiB of float32 (median of {len(ms)})"}


def compute_probe(n: int | None = None, dtype: str = "float32", reps: int = DEFAULT_REPS) -> ComputeProbe:
    """TFLOP/s of an ``n`` × ``n`` matmul in ``dtype`` (2·n³ FLOPs per product)."""
    if n is None:
        n = 4096 if mx.default_device().type == mx.DeviceType.gpu else 1024
    dt = getattr(mx, dtype, None)
    if not isinstance(dt, mx.Dtype) or not mx.issubdtype(dt, mx.floating):
        raise ValueError(f"not a floating dtype: {dtype!r}")
    key = mx.random.key(0)
    a = mx.random.normal((n, n), key=key).astype(dt)
    b = mx.random.normal((n, n), key=mx.random.split(key)[0]).astype(dt)
    mx.eval(a, b)
    med, ms = _median_ms(lambda: mx.eval(a @ b), reps)
    flops = 2.0 * n**3
    return {"peak_tflops": flops / (med / 1000.0) / 1e12, "n": n, "dtype": dtype, "reps": len(ms), "ms": ms,
            "method": f"{n}x{n} @ {n}x{n} matmul in {dtype} (median of {len(ms)})"}


def probe_machine(dtype: str = "float32", bandwidth_mib: float = DEFAULT_BANDWIDTH_MIB, matmul_n: int | None = None,
                  reps: int = DEFAULT_REPS, chip_name: str | None = None, gpu_cores: int | None = None) -> MachineProbe:
    """Both probes on the default device plus the recognised chip: a JSON-able dict."""
    bw = bandwidth_probe(bandwidth_mib, reps)
    cp = compute_probe(matmul_n, dtype, reps)
    chip = recognise_chip(chip_name, gpu_cores)
    return {
        "device": str(mx.default_device()),
        "chip": chip["chip"],
        "device_name": chip["name"],
        "bandwidth_gbs": bw["bandwidth_gbs"],
        "peak_tflops": cp["peak_tflops"],
        "nominal_bandwidth_gbs": chip["nominal_bandwidth_gbs"],
        "nominal_tflops": chip["nominal_tflops"],
        "gpu_cores": chip["gpu_cores"],
        "nominal_bin": chip["nominal_bin"],
        "bandwidth_probe": bw,
        "compute_probe": cp,
    }
