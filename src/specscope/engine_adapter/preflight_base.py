"""The pre-flight's common parts: the four statuses, a check's record, the readings' shape (``preflight``,
``preflight_mac``)."""

from __future__ import annotations

from typing import Any, Final, NotRequired, TypedDict

from specscope.events import PreflightCheck, PreflightStatus

from .machine_reader import Versions, command_key

PASS: Final = "pass"
WARN: Final = "warn"
FAIL: Final = "fail"
NOT_CHECKED: Final = "not checked"


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


def check(name: str, status: PreflightStatus, evidence: str, fix: str = "") -> PreflightCheck:
    return {"name": name, "status": status, "evidence": evidence, "fix": fix}


def gib(n: float | int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def out(r: Readings, cmd) -> str | None:
    """A command's recorded output (None: it could not run, or was not asked)."""
    return (r.get("outputs") or {}).get(command_key(cmd))
