"""Machine sensors around each measured run: GPU frequency, power, temperature, energy; macOS thermal limits.

One small seam, :class:`SensorSource`, with three fillings:

- :class:`MacmonSource` — macOS on Apple silicon with the optional ``mac`` extra installed
  (``pip install 'specscope[mac]'``: `macmon-lib`_, maintained bindings with a bundled library that read
  the same counters as ``powermetrics`` without sudo). specscope never binds private frameworks itself.
- :class:`NotAvailable` — everywhere else (or the extra missing): says why, records nothing.
- :class:`RecordedSource` — samples recorded earlier, played back (tests).

A window is opened before each measured pass (``start``) and closed after it (``stop``), which gives the pass's
mean GPU frequency, GPU and package power, GPU temperature, and its energy (mean power × the window's length).
``thermal()`` returns ``pmset -g therm`` (no sudo) on macOS, taken before and after each case.

Energy is also kept as counters, one per domain (``package``, ``gpu``): joules since the source opened, advanced by
every sampler call (between windows too), with each window's rise. On recent macOS the per-domain counters update in
batches (about every 2 s on an M5 Max; on an M1 Max only at power-management events) while the GPU's stays live, so a
window shorter than the update period reads a counter that did not move, or one batch that belongs to seconds
outside it. The counters let ``analysis.energy`` tell a live counter from a stale or batched one, and widen or refuse.

.. _macmon-lib: https://pypi.org/project/macmon-lib/
"""

from __future__ import annotations

import platform
import re
import subprocess
import sys
import time
from typing import cast

from specscope.engine_adapter.machine_reader import MAC_EXTRA  # the one spelling (the pre-flight says it too)
from specscope.events import Mode, PassName, SensorsEvent, SensorWindow, ThermalReading
from specscope.profiler.run.records import SensorDescription



def _now() -> float:
    return time.monotonic()


def _machine() -> str:
    return f"{platform.system()} {platform.machine()}"


def pmset_therm() -> ThermalReading | None:
    """``pmset -g therm`` on macOS: the raw text and the limits it names (e.g. CPU_Speed_Limit = 100);
    None elsewhere or when it cannot run."""
    if sys.platform != "darwin":
        return None
    try:
        out = subprocess.run(["pmset", "-g", "therm"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_therm(out)


def parse_therm(text: str) -> ThermalReading:
    limits = {m.group(1): int(m.group(2)) for m in re.finditer(r"(\w+)\s*=\s*(\d+)", text or "")}
    warnings = [ln.strip() for ln in (text or "").splitlines() if "warning" in ln.lower() and ln.strip()]
    return {"text": (text or "").strip()[:2000], "limits": limits, "warnings": warnings}


class SensorSource:
    """The seam. ``available`` says whether ``stop`` returns samples; ``reason`` says why not."""

    name = "none"
    available = False
    reason = ""

    def describe(self) -> SensorDescription:
        therm = "pmset -g therm before and after each case" if sys.platform == "darwin" else "not available (not macOS)"
        return {"source": self.name, "available": self.available, "reason": self.reason, "thermal": therm}

    def start(self) -> None:
        """Open a window (before a run)."""

    def stop(self) -> SensorWindow | None:
        """Close the window: ``{"seconds", "gpu_freq_mhz", "gpu_power_w", "package_power_w", "gpu_temp_c",
        "joules"}`` (any of them None when the source lacks it), or None when nothing is available."""
        return None

    def thermal(self) -> ThermalReading | None:
        return pmset_therm()

    def close(self) -> None:
        pass


class NotAvailable(SensorSource):
    name = "none"

    def __init__(self, reason: str):
        self.reason = reason


class RecordedSource(SensorSource):
    """Plays back recorded windows (and thermal readings) in order, as a real source would return them."""

    name = "recorded"
    available = True

    def __init__(self, windows: list[dict], thermal: list[str] | None = None):
        self._windows, self._thermal = list(windows), list(thermal or [])
        self.started = 0

    def start(self) -> None:
        self.started += 1

    def stop(self) -> SensorWindow | None:
        return cast(SensorWindow, dict(self._windows.pop(0))) if self._windows else None  # as recorded

    def thermal(self) -> ThermalReading | None:
        return parse_therm(self._thermal.pop(0)) if self._thermal else None


class MacmonSource(SensorSource):
    """macmon-lib's ``Sampler``: each ``metrics()`` call returns the means since the previous call, so
    one call opens a window and the next closes it."""

    name = "macmon-lib"
    available = True

    def __init__(self):
        import macmon  # the optional extra; ImportError is handled by open_sensors

        self._sampler = macmon.Sampler()
        self._t0 = None
        self._last = _now()   # the previous sampler call: its metrics are the means since then
        self.counters = Counters()
        try:
            self.chip = macmon.soc_info().chip_name
        except Exception:  # noqa: BLE001 - a name is a nicety
            self.chip = ""

    def describe(self) -> SensorDescription:
        return {**super().describe(), "chip": self.chip}

    def _sample(self):
        """One sampler call: its means since the previous call, the counters advanced by them."""
        m = self._sampler.metrics()
        now = _now()
        self.counters.advance({"package": m.power.package, "gpu": m.power.gpu}, now - self._last)
        self._last = now
        return m, now

    def start(self) -> None:
        self._sample()  # ends the previous averaging window (the time between windows reaches the counters too)
        self._t0 = self._last
        self.counters.mark()

    def stop(self) -> SensorWindow | None:
        if self._t0 is None:
            return None
        m, now = self._sample()
        seconds = now - self._t0
        self._t0 = None
        gpu = m.gpu_usage[0] if m.gpu_usage else None
        return window(seconds=seconds, gpu_freq_mhz=gpu.frequency_mhz if gpu else None, gpu_power_w=m.power.gpu,
                      package_power_w=m.power.package, gpu_temp_c=m.temperature.gpu_average,
                      energy_j=self.counters.rise(), counter_j=dict(self.counters.total), source=self.name)

    def close(self) -> None:
        try:
            self._sampler.close()
        except Exception:  # noqa: BLE001
            pass


class Counters:
    """Energy counters per domain, rebuilt from a sampler's mean powers: joules since the source opened (a mean over an
    interval times its length is the counter's rise over it, stale or batched as the counter was)."""

    def __init__(self):
        self.total: dict[str, float | None] = {}
        self._at_mark: dict[str, float | None] = {}

    def advance(self, watts: dict[str, float | None], seconds: float) -> None:
        for domain, w in watts.items():
            before = self.total.get(domain, 0.0)
            self.total[domain] = None if w is None or before is None else before + w * max(seconds, 0.0)

    def mark(self) -> None:
        self._at_mark = dict(self.total)

    def rise(self) -> dict[str, float | None]:  # dict: one entry per energy domain the sampler reports
        """Each domain's rise since ``mark``."""
        out: dict[str, float | None] = {}
        for domain, now in self.total.items():
            then = self._at_mark.get(domain, 0.0)
            out[domain] = None if now is None or then is None else now - then
        return out


def window(seconds: float, gpu_freq_mhz=None, gpu_power_w=None, package_power_w=None, gpu_temp_c=None,
           energy_j: dict[str, float | None] | None = None, counter_j: dict[str, float | None] | None = None,
           source: str | None = None) -> SensorWindow:
    """One pass's sensor record; energy is the package's mean power over the window (the GPU's when the
    package is not reported); the counters' rise and reading where the source keeps them."""
    power = package_power_w if package_power_w is not None else gpu_power_w
    out: SensorWindow = {"seconds": seconds, "gpu_freq_mhz": gpu_freq_mhz, "gpu_power_w": gpu_power_w,
                         "package_power_w": package_power_w, "gpu_temp_c": gpu_temp_c,
                         "joules": power * seconds if power is not None else None}
    if energy_j is not None:
        out["energy_j"] = energy_j
    if counter_j is not None:
        out["counter_j"] = counter_j
    if source:
        out["source"] = source
    return out


def window_event(window: SensorWindow, case: str, mode: Mode, repeat: int, tokens: int, t: float,
                 accepted: int | None = None, pass_name: PassName | None = None) -> SensorsEvent:
    """A pass's closed window as the run emits it: the pass it belongs to, its tokens (and a speculative pass's
    accepted drafts and, in a paired phase, which pass)."""
    ev: SensorsEvent = {"event": "sensors", "case": case, "mode": mode, "repeat": repeat, "tokens": tokens, "t": t,
                        **window}
    if accepted is not None:
        ev["accepted"] = accepted
    if pass_name:
        ev["pass"] = pass_name
    return ev


def open_sensors() -> SensorSource:
    """The best source this machine has; never raises."""
    if sys.platform != "darwin" or platform.machine() != "arm64":
        return NotAvailable(f"not available: GPU frequency, power and temperature are read on macOS on Apple silicon "
                            f"only (this machine: {_machine()})")
    try:
        return MacmonSource()
    except ImportError:
        return NotAvailable(f"not available: install the optional sensor library ({MAC_EXTRA}, macmon-lib)")
    except Exception as exc:  # noqa: BLE001 - a sampler that cannot start must not cost the run
        return NotAvailable(f"not available: macmon-lib could not start ({type(exc).__name__}: {exc})")
