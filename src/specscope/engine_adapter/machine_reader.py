"""The one seam through which specscope reads the machine: command output, files, and MLX's device info.

``SystemReader`` reads this machine (no sudo, nothing changed: every command is a read); ``RecordedReader`` plays back
outputs recorded elsewhere, so the macOS probes are tested on Linux with real output captured on Macs. A reading that
cannot be taken (command missing, non-zero exit, timeout, a file that is not there) is ``None``: whoever reads it says
"not checked", never "ok".
"""

from __future__ import annotations

import glob as _glob
import os
import platform
import subprocess
from typing import Sequence, TypedDict, cast

from specscope.engine_adapter.measure.records import DeviceInfo

# the packages' versions and the platform (``versions``); "mlx-lm" is not a name, hence the functional form; a recording
# may hold any of them ("macmon-lib": the mac extra's sensor library, None when it is not installed or not importable;
# absent from recordings made before specscope read it)
Versions = TypedDict("Versions", {"mlx": str | None, "mlx-lm": str | None, "macmon-lib": str | None, "python": str,
                                  "os": str}, total=False)

# The optional sensor library's install command (the `mac` extra: macmon-lib, macOS on Apple silicon only). Said by the
# pre-flight's energy check and by the run's sensors (profiler.run.sensors) when it is missing.
MAC_EXTRA = "pip install 'specscope[mac]'"

COMMAND_TIMEOUT_S = 5.0


def command_key(cmd: Sequence[str]) -> str:
    """How a command is named in a recording: its words joined by single spaces."""
    return " ".join(cmd)


class SystemReader:
    """This machine, read."""

    def __init__(self, timeout_s: float = COMMAND_TIMEOUT_S):
        self.timeout_s = timeout_s
        self.system = platform.system()

    def run(self, cmd: Sequence[str]) -> str | None:
        """The command's stdout, or None when it cannot run, fails or takes longer than the timeout."""
        try:
            p = subprocess.run(list(cmd), capture_output=True, text=True, timeout=self.timeout_s,
                               stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError, ValueError):
            return None
        return p.stdout if p.returncode == 0 else None

    def read(self, path: str) -> str | None:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return None

    def glob(self, pattern: str) -> list[str]:
        return sorted(_glob.glob(pattern))

    def cpu_count(self) -> int | None:
        return os.cpu_count()

    def device_info(self) -> DeviceInfo:
        """MLX's device info (``mx.device_info()``; ``mx.metal.device_info()`` on MLX before 0.30), plain values;
        {} when MLX cannot say."""
        try:
            import mlx.core as mx

            fn = getattr(mx, "device_info", None)
            if fn is not None:
                info = fn()
            elif mx.metal.is_available():
                info = mx.metal.device_info()
            else:
                info = {}
        except Exception:  # noqa: BLE001 - a device that cannot be described is "not checked", not a crash
            return {}
        return cast(DeviceInfo, {k: (v if isinstance(v, (int, float, str)) else str(v)) for k, v in dict(info).items()})

    def mlx_device(self) -> str | None:
        """MLX's default device, as MLX prints it (``Device(gpu, 0)``)."""
        try:
            import mlx.core as mx

            return str(mx.default_device())
        except Exception:  # noqa: BLE001
            return None

    def versions(self) -> Versions:
        from importlib.metadata import PackageNotFoundError, version

        from importlib.util import find_spec

        found: dict[str, str | None] = {}
        for name in ("mlx", "mlx-lm", "macmon-lib"):
            try:
                found[name] = version(name)
            except PackageNotFoundError:
                found[name] = None
        if found["macmon-lib"] and find_spec("macmon") is None:  # installed but not importable: not usable
            found["macmon-lib"] = None
        return {"mlx": found["mlx"], "mlx-lm": found["mlx-lm"], "macmon-lib": found["macmon-lib"],
                "python": platform.python_version(), "os": f"{platform.system()} {platform.release()}"}


class RecordedReader:
    """Outputs recorded elsewhere, played back: ``outputs`` by command (``command_key``), ``files`` by path. A command
    or file not in the recording, or recorded as None, reads as None (it could not run there)."""

    def __init__(self, system: str, outputs: dict[str, str | None] | None = None, files: dict[str, str | None] | None = None,
                 device_info: dict | None = None, cpu_count: int | None = None, mlx_device: str | None = None,
                 versions: dict | None = None):
        self.system = system
        self.outputs = dict(outputs or {})
        self.files = dict(files or {})
        self._device_info = dict(device_info or {})
        self._cpu_count = cpu_count
        self._mlx_device = mlx_device
        self._versions = dict(versions or {})
        self.asked: list[str] = []  # every command asked for, in order (a test can check nothing else ran)

    def run(self, cmd: Sequence[str]) -> str | None:
        key = command_key(cmd)
        self.asked.append(key)
        return self.outputs.get(key)

    def read(self, path: str) -> str | None:
        return self.files.get(path)

    def glob(self, pattern: str) -> list[str]:
        import fnmatch

        return sorted(p for p in self.files if fnmatch.fnmatch(p, pattern))

    def cpu_count(self) -> int | None:
        return self._cpu_count

    def device_info(self) -> DeviceInfo:
        return cast(DeviceInfo, dict(self._device_info))

    def mlx_device(self) -> str | None:
        return self._mlx_device

    def versions(self) -> Versions:
        return cast(Versions, dict(self._versions))
