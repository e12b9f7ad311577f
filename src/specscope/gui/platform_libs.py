"""Can Qt's X11 platform plugin load here? Said before Qt tries, since Qt's own answer is an abort.

PySide6's wheel ships Qt's ``xcb`` plugin but not every X library it needs: a fresh Debian or Fedora desktop lacks
some ``xcb-util`` libraries, and Qt then aborts naming only the first (``xcb-cursor0``). Where the plugin opens in
this process, nothing is said; else this asks the dynamic loader (``ldd`` on the plugin) what is missing, adds the
one library Qt opens itself at run time (``libxcb-cursor``), and says all of them with the command that installs
them. Nothing here imports Qt.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

# shared object -> (Debian/Ubuntu package, Fedora package)
PACKAGES = {
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor"),
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image"),
    "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil"),
    "libxcb-util.so.1": ("libxcb-util1", "xcb-util"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11"),
    "libxkbcommon.so.0": ("libxkbcommon0", "libxkbcommon"),
    "libxcb-xinerama.so.0": ("libxcb-xinerama0", "libxcb"),
    "libxcb-randr.so.0": ("libxcb-randr0", "libxcb"),
    "libxcb-shape.so.0": ("libxcb-shape0", "libxcb"),
    "libxcb-xfixes.so.0": ("libxcb-xfixes0", "libxcb"),
    "libxcb-sync.so.1": ("libxcb-sync1", "libxcb"),
    "libxcb-shm.so.0": ("libxcb-shm0", "libxcb"),
    "libxcb-xkb.so.1": ("libxcb-xkb1", "libxcb"),
    "libxcb-render.so.0": ("libxcb-render0", "libxcb"),
    "libxcb-glx.so.0": ("libxcb-glx0", "libxcb"),
    "libxcb.so.1": ("libxcb1", "libxcb"),
    "libX11-xcb.so.1": ("libx11-xcb1", "libX11-xcb"),
    "libX11.so.6": ("libx11-6", "libX11"),
    "libSM.so.6": ("libsm6", "libSM"),
    "libICE.so.6": ("libice6", "libICE"),
    "libEGL.so.1": ("libegl1", "libglvnd-egl"),
    "libGL.so.1": ("libgl1", "libglvnd-glx"),
    "libOpenGL.so.0": ("libopengl0", "libglvnd-opengl"),
    "libfontconfig.so.1": ("libfontconfig1", "fontconfig"),
    "libfreetype.so.6": ("libfreetype6", "freetype"),
    "libdbus-1.so.3": ("libdbus-1-3", "dbus-libs"),
    "libglib-2.0.so.0": ("libglib2.0-0", "glib2"),
}
# Qt >= 6.5 opens this one with dlopen, so ldd never lists it
RUNTIME_LOADED = ("libxcb-cursor.so.0",)

_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found", re.M)


def uses_xcb(env=os.environ, platform: str = sys.platform) -> bool:
    """Will Qt pick its X11 plugin: Linux, a display, and no other platform chosen?"""
    if not platform.startswith("linux"):
        return False
    chosen = env.get("QT_QPA_PLATFORM", "")
    if chosen:
        return chosen.split(":")[0].split(";")[0] == "xcb"
    wayland = env.get("WAYLAND_DISPLAY") and env.get("XDG_SESSION_TYPE") == "wayland"
    return bool(env.get("DISPLAY")) and not wayland


def xcb_plugin() -> Path | None:
    spec = importlib.util.find_spec("PySide6")
    for root in (spec.submodule_search_locations or []) if spec else []:
        p = Path(root) / "Qt" / "plugins" / "platforms" / "libqxcb.so"
        if p.exists():
            return p
    return None


def missing_from_ldd(output: str) -> list[str]:
    """The shared objects ``ldd`` could not find, in its order, once each."""
    return list(dict.fromkeys(_NOT_FOUND.findall(output)))


def _loadable(soname: str) -> bool:
    try:
        ctypes.CDLL(soname)
        return True
    except OSError:
        return False


def missing_libraries(plugin: Path | None = None, run=subprocess.run, loadable=_loadable) -> list[str] | None:
    """The libraries Qt's xcb plugin needs and cannot find here; None where that cannot be told (no ldd, no plugin)."""
    plugin = plugin or xcb_plugin()
    if plugin is None or shutil.which("ldd") is None and run is subprocess.run:
        return None
    try:
        out = run(["ldd", str(plugin)], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    missing = missing_from_ldd(out)
    return missing + [so for so in RUNTIME_LOADED if so not in missing and not loadable(so)]


def plugin_loads(plugin: Path | None = None, loadable=_loadable) -> bool:
    """The quick answer, in this process: the dynamic loader opens the plugin (so finds every library it links)
    and the library Qt opens itself. A few ms, where ``ldd`` (a process) costs 20-50 ms on every start; only when
    this fails is ``ldd`` asked which libraries are missing. (Qt opens the same plugin file a moment later.)"""
    plugin = plugin or xcb_plugin()
    return plugin is not None and loadable(str(plugin)) and all(loadable(so) for so in RUNTIME_LOADED)


def install_hint(missing: list[str]) -> str:
    deb = sorted({PACKAGES[m][0] for m in missing if m in PACKAGES})
    rpm = sorted({PACKAGES[m][1] for m in missing if m in PACKAGES})
    unknown = [m for m in missing if m not in PACKAGES]
    lines = []
    if deb:
        lines.append(f"  Debian/Ubuntu: sudo apt-get install {' '.join(deb)}")
    if rpm:
        lines.append(f"  Fedora:        sudo dnf install {' '.join(rpm)}")
    if unknown:
        lines.append(f"  and the packages that provide {', '.join(unknown)}")
    return "\n".join(lines)


def xcb_problem(env=os.environ, platform: str = sys.platform, **kw) -> str | None:
    """The message to show instead of Qt's abort, or None when the X11 plugin can load (or is not used)."""
    if not uses_xcb(env, platform):
        return None
    if not kw and plugin_loads():
        return None
    missing = missing_libraries(**kw)
    if not missing:
        return None
    return ("the desktop app cannot open a window: Qt's X11 platform plugin needs libraries this system lacks: "
            f"{', '.join(missing)}. Install them with:\n{install_hint(missing)}\n"
            "(or draw offscreen: QT_QPA_PLATFORM=offscreen specscope gui --screenshot FILE.png ...)")
