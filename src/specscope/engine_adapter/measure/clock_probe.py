"""A clock probe: a short, fixed, compute-bound kernel whose time tracks the clock the device runs at.

A chain of square matmuls of a fixed size on the model's device (MLX's default device), evaluated
once per rep and timed after ``mx.eval``; its inputs are made (and evaluated) once, so a reading
measures arithmetic only. The size is fixed per device kind (a GPU gets a bigger chain: a small one
would time launch latency, not the clock), and recorded with every session, so readings from one run
compare with each other, never across machines.

A reading is the median of ``reps`` timed chains, with each rep's time kept: the spread of the reps
is the probe's own noise, against which a slow-down over a run is judged (``profiler.analysis.drift``).
"""

from __future__ import annotations

import time

import mlx.core as mx

from specscope.engine_adapter.clock import ms_since
from .records import ClockProbeInfo, ClockReading

# (matrix size, matmuls per chain) by device kind: about 70 MFLOP on a CPU (~10 ms on 2 cores),
# about 17 GFLOP on a GPU (a few ms on Apple silicon)
SIZES = {"cpu": (256, 2), "gpu": (1024, 8)}
REPS = 5


class ClockProbe:
    def __init__(self, reps: int = REPS, size: tuple[int, int] | None = None):
        device = mx.default_device()
        self.kind = "gpu" if device.type == mx.DeviceType.gpu else "cpu"
        self.n, self.chain = size or SIZES[self.kind]
        self.reps = reps
        self.device = str(device)
        key_a, key_b = mx.random.split(mx.random.key(20240611))
        self._a = mx.random.normal((self.n, self.n), key=key_a)
        # scaled so that a chain of products neither blows up nor vanishes (no inf/denormal slow paths)
        self._b = mx.random.normal((self.n, self.n), key=key_b) / (self.n ** 0.5)
        mx.eval(self._a, self._b)
        self._chain()  # compile and warm once, outside any reading

    def describe(self) -> ClockProbeInfo:
        flop = 2.0 * self.n ** 3 * self.chain
        return {"kernel": f"{self.chain} × matmul {self.n}×{self.n} float32", "device": self.device, "reps": self.reps,
                "flop": flop}

    def _chain(self) -> float:
        t0 = time.perf_counter()
        c = self._a
        for _ in range(self.chain):
            c = c @ self._b
        mx.eval(c)
        return ms_since(t0)

    def read(self) -> ClockReading:
        """One reading: the median of ``reps`` timed chains (ms), every rep kept."""
        samples = [self._chain() for _ in range(self.reps)]
        s = sorted(samples)
        n = len(s)
        med = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
        return {"ms": med, "reps_ms": samples}
