"""What the machine that runs the model can do, measured, beside what its maker says.

- **Bandwidth probe**: a streaming read (a sum) over an array far larger than the caches, on MLX's
  default device (the one the model runs on), median of a few repetitions, in GB/s.
- **Compute probe**: a square matmul in the model's dtype, median of a few repetitions, in TFLOP/s.
- **Chip recognition**: the device name (Metal) or the CPU's brand string, matched against a table of
  Apple M1–M5 base / Pro / Max / Ultra with their nominal unified-memory bandwidth and GPU FP32
  throughput; anything else is "unknown" (no nominal figures).

Both probes take a size so a test runs in well under a second; the defaults (512 MiB, a 1024² matmul
on a CPU, 4096² on a GPU) run in a few seconds. The roofline's floors divide by the *measured* figures:
a nominal figure is what the chip could do, the measured one is what MLX gets from it here.
"""

from __future__ import annotations

import re
import statistics
import time

import mlx.core as mx

DEFAULT_BANDWIDTH_MIB = 512
DEFAULT_REPS = 5

# Nominal figures per chip, top GPU configuration: (unified-memory bandwidth GB/s, GPU FP32 TFLOP/s).
# None where no figure was found in a source. Bandwidth is Apple's own number for each chip; FP32
# TFLOP/s is ALUs x 2 (FMA) x clock as the sources below compute it.
# Sources:
#  - M1 / M1 Pro / M1 Max / M1 Ultra bandwidth: Apple's spec pages (support.apple.com/en-us/111901 and
#    the M1 Pro/Max/Ultra announcements); 68.25 GB/s for M1 as in Wikipedia's "Apple M1".
#  - M2 family bandwidth: Apple's M2 announcement (100 GB/s) and M2 Pro/Max/Ultra (200/400/800 GB/s);
#    M2 10-core GPU 1398 MHz x 1280 ALUs = 3.6 TFLOP/s (github.com/StarBeat/cpu-gpu-arch gpu/Apple-M2.md,
#    after AnandTech and Chips and Cheese), the Pro/Max/Ultra scaled by GPU cores (19/38/76).
#  - M3 Ultra 819.2 GB/s (Ars Technica's table, 2025-03-05, which gives 819.2 for the M1/M2 Ultra too, where
#    Apple says 800; quoted at mjtsai.com/blog/2025/03/05/apple-m3-ultra/); M3 Pro 150 GB/s, M3 Max 400 GB/s
#    (40-core GPU; 300 GB/s for 30-core): Apple's M3 announcement.
#  - M3 / M4 FP32 TFLOP/s: hmc-tech.com GPU pages (40-core M3 Max 14.32, 18-core M3 Pro 6.44, 10-core M4
#    3.76, 16-core M4 Pro 6.02 -> 20-core 7.53, 32-core M4 Max 13.74 -> 40-core 17.18); M3 10-core and
#    M3 Ultra 80-core scaled from the M3 Max's per-core figure.
#  - M4 120 GB/s, M4 Pro 273 GB/s, M4 Max 546 GB/s (40-core GPU; 410 GB/s for 32-core): Apple's M4 Max
#    announcement (macrumors.com/2024/10/30/apple-announces-m4-max-chip/, notebookcheck.net).
#  - M5 153 GB/s (Apple's M5 announcement, 2025-10-15, as reported by techradar.com and allyoucantech.com);
#    M5 Max 614 GB/s (thedailyscout.com, M5 Pro/Max launch). No M5 Pro bandwidth and no M5 TFLOP/s
#    figure was found in a source: left None.
NOMINAL: dict[str, tuple[float | None, float | None]] = {
    "M1": (68.25, 2.6),
    "M1 Pro": (200.0, 5.2),
    "M1 Max": (400.0, 10.4),
    "M1 Ultra": (800.0, 20.8),
    "M2": (100.0, 3.6),
    "M2 Pro": (200.0, 6.8),
    "M2 Max": (400.0, 13.6),
    "M2 Ultra": (800.0, 27.2),
    "M3": (100.0, 3.58),
    "M3 Pro": (150.0, 6.44),
    "M3 Max": (400.0, 14.32),
    "M3 Ultra": (819.2, 28.64),
    "M4": (120.0, 3.76),
    "M4 Pro": (273.0, 7.53),
    "M4 Max": (546.0, 17.18),
    "M5": (153.0, None),
    "M5 Pro": (None, None),
    "M5 Max": (614.0, None),
}

_CHIP = re.compile(r"\bM([1-9])(?:\s+(Pro|Max|Ultra))?\b")


def recognise_chip(name: str | None = None) -> dict:
    """The Apple chip named in ``name`` (default: this machine's device / CPU name) and its nominal figures."""
    if name is None:
        name = machine_name()
    m = _CHIP.search(name or "") if name and "apple" in name.lower() else None
    if not m:
        return {"chip": "unknown", "name": name, "nominal_bandwidth_gbs": None, "nominal_tflops": None}
    chip = f"M{m.group(1)}" + (f" {m.group(2)}" if m.group(2) else "")
    bw, tf = NOMINAL.get(chip, (None, None))
    return {"chip": f"Apple {chip}", "name": name, "nominal_bandwidth_gbs": bw, "nominal_tflops": tf}


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
        ms.append((time.perf_counter() - t0) * 1000.0)
    return statistics.median(ms), ms


def bandwidth_probe(size_mib: float = DEFAULT_BANDWIDTH_MIB, reps: int = DEFAULT_REPS) -> dict:
    """GB/s of a streaming read: the sum of a float32 array of ``size_mib`` MiB (each byte read once)."""
    n = max(1024, int(size_mib * 2**20) // 4)
    a = mx.ones((n,), dtype=mx.float32) + 0  # materialised, not a broadcast constant
    mx.eval(a)
    med, ms = _median_ms(lambda: mx.eval(mx.sum(a)), reps)
    nbytes = n * 4
    return {"bandwidth_gbs": nbytes / (med / 1000.0) / 1e9, "bytes": nbytes, "reps": len(ms), "ms": ms,
            "method": f"sum over {nbytes / 2**20:.0f} MiB of float32 (median of {len(ms)})"}


def compute_probe(n: int | None = None, dtype: str = "float32", reps: int = DEFAULT_REPS) -> dict:
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
                  reps: int = DEFAULT_REPS, chip_name: str | None = None) -> dict:
    """Both probes on the default device plus the recognised chip: a JSON-able dict."""
    bw = bandwidth_probe(bandwidth_mib, reps)
    cp = compute_probe(matmul_n, dtype, reps)
    chip = recognise_chip(chip_name)
    return {
        "device": str(mx.default_device()),
        "chip": chip["chip"],
        "device_name": chip["name"],
        "bandwidth_gbs": bw["bandwidth_gbs"],
        "peak_tflops": cp["peak_tflops"],
        "nominal_bandwidth_gbs": chip["nominal_bandwidth_gbs"],
        "nominal_tflops": chip["nominal_tflops"],
        "bandwidth_probe": bw,
        "compute_probe": cp,
    }
