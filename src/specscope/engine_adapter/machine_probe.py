"""What the machine that runs the model can do, measured, beside what its maker says.

- **Bandwidth probe**: a streaming read (a sum) over an array far larger than the caches, on MLX's
  default device (the one the model runs on), median of a few repetitions, in GB/s.
- **Compute probe**: a square matmul in the model's dtype, median of a few repetitions, in TFLOP/s.
- **Chip recognition**: the device name (Metal) or the CPU's brand string, matched against a table of
  Apple M1–M5 base / Pro / Max / Ultra by GPU bin (the core count read through ``machine_reader``) with their
  nominal unified-memory bandwidth and GPU FP32 throughput; anything else is "unknown" (no nominal figures).

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

from specscope.engine_adapter.clock import ms_since

DEFAULT_BANDWIDTH_MIB = 512
DEFAULT_REPS = 5

# Nominal figures per chip and GPU bin: (GPU cores, unified-memory bandwidth GB/s, GPU FP32 TFLOP/s), one row per bin.
# The one table every nominal figure comes from (the roofline, the Verify cost page and the reports read it through
# ``nominal``). A chip sold with two GPU bins that differ in bandwidth (M3 Max, M4 Max) has no nominal bandwidth until
# the GPU core count is known. None where no source gave a figure. Achieved bandwidth is lower than any of these
# (about 318 GB/s measured on an M1 Max, 78% of its 409.6: the roofline divides by the *measured* figure).
# Bandwidth is the memory interface: bus width x transfer rate, which is where Apple's rounded marketing numbers come
# from (Apple says 200 for 204.8, 400 for 409.6, 800 for 819.2, 100 for 102.4, 150 for 153.6, 300 for 307.2, 410 for
# 409.6). Sources:
#  - M1 68.25 GB/s (LPDDR4X-4266, 128-bit; Wikipedia "Apple M1"); M1 Pro 204.8 (LPDDR5-6400, 256-bit), M1 Max 409.6
#    (512-bit), M1 Ultra 819.2 (1024-bit): Apple's M1 Pro/Max/Ultra announcements (200/400/800 GB/s, rounded);
#    409.6 GB/s and 32 GPU cores for an M1 Max as philipturner/applegpuinfo prints it (github.com/philipturner/
#    applegpuinfo/issues/2); M1 Max bins 24/32 cores, M1 Pro 14/16, M1 7/8 (Apple's tech specs).
#  - M2 102.4 (LPDDR5-6400, 128-bit; Apple: 100), M2 Pro 204.8, M2 Max 409.6 (applegpuinfo issue #10: M2 Max, 38
#    cores, 409.6 GB/s), M2 Ultra 819.2; bins M2 8/10, Pro 16/19, Max 30/38, Ultra 60/76. M2 10-core GPU 1398 MHz x
#    1280 ALUs = 3.6 TFLOP/s (github.com/StarBeat/cpu-gpu-arch gpu/Apple-M2.md, after AnandTech and Chips and Cheese).
#  - M3 102.4; M3 Pro 153.6 (LPDDR5-6400, 192-bit; Apple: 150); M3 Max 307.2 with the 30-core GPU (384-bit; Apple:
#    300) and 409.6 with the 40-core GPU (512-bit; Apple: 400; applegpuinfo issue #4: M3 Max, 40 cores, 409.6 GB/s);
#    M3 Ultra 819.2 (Ars Technica's table, 2025-03-05, quoted at mjtsai.com/blog/2025/03/05/apple-m3-ultra/).
#  - M4 120 (LPDDR5X-7500, 128-bit), M4 Pro 273 (LPDDR5X-8533, 256-bit), M4 Max 409.6 with the 32-core GPU (384-bit;
#    Apple: 410) and 546 with the 40-core GPU (512-bit): Apple's M4 Max announcement (macrumors.com/2024/10/30/
#    apple-announces-m4-max-chip/, notebookcheck.net).
#  - M5 153 (Apple's M5 announcement, 2025-10-15, as reported by techradar.com and allyoucantech.com); M5 Max 614
#    (thedailyscout.com, M5 Pro/Max launch); no M5 Pro bandwidth and no M5 TFLOP/s figure was found: None.
#  - FP32 TFLOP/s: ALUs x 2 (FMA) x clock for the top bin (M1 family 1278 MHz: 10.4 for 32 cores; M2 as above;
#    hmc-tech.com GPU pages for M3/M4: 40-core M3 Max 14.32, 18-core M3 Pro 6.44, 10-core M4 3.76, 16-core M4 Pro
#    6.02, 32-core M4 Max 13.74); every other bin scaled by its GPU cores at the same clock.
BINS: dict[str, list[tuple[int | None, float | None, float | None]]] = {
    "M1": [(7, 68.25, 2.28), (8, 68.25, 2.6)],
    "M1 Pro": [(14, 204.8, 4.55), (16, 204.8, 5.2)],
    "M1 Max": [(24, 409.6, 7.8), (32, 409.6, 10.4)],
    "M1 Ultra": [(48, 819.2, 15.6), (64, 819.2, 20.8)],
    "M2": [(8, 102.4, 2.88), (10, 102.4, 3.6)],
    "M2 Pro": [(16, 204.8, 5.73), (19, 204.8, 6.8)],
    "M2 Max": [(30, 409.6, 10.74), (38, 409.6, 13.6)],
    "M2 Ultra": [(60, 819.2, 21.47), (76, 819.2, 27.2)],
    "M3": [(8, 102.4, 2.86), (10, 102.4, 3.58)],
    "M3 Pro": [(14, 153.6, 5.01), (18, 153.6, 6.44)],
    "M3 Max": [(30, 307.2, 10.74), (40, 409.6, 14.32)],
    "M3 Ultra": [(60, 819.2, 21.48), (80, 819.2, 28.64)],
    "M4": [(8, 120.0, 3.01), (10, 120.0, 3.76)],
    "M4 Pro": [(16, 273.0, 6.02), (20, 273.0, 7.53)],
    "M4 Max": [(32, 409.6, 13.74), (40, 546.0, 17.18)],
    "M5": [(None, 153.0, None)],
    "M5 Pro": [(None, None, None)],
    "M5 Max": [(None, 614.0, None)],
}

_CHIP = re.compile(r"\bM([1-9])(?:\s+(Pro|Max|Ultra))?\b")


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
    m = _CHIP.search(name or "") if name and "apple" in name.lower() else None
    if not m:
        return {"chip": "unknown", "name": name, "nominal_bandwidth_gbs": None, "nominal_tflops": None,
                "gpu_cores": gpu_cores, "nominal_bin": None}
    chip = f"M{m.group(1)}" + (f" {m.group(2)}" if m.group(2) else "")
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
