"""Is there a screen to draw on? One answer for the CLI, the app, reports and benchmarks: a shared leaf (no layer
imported), so the app need not reach into the CLI for it."""

from __future__ import annotations

import os
import sys


def headless() -> bool:
    """Linux with no X11/Wayland display and no Qt platform chosen: a window cannot open."""
    return (sys.platform.startswith("linux") and not os.environ.get("QT_QPA_PLATFORM")
            and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"))


def offscreen_if_headless() -> None:
    """Draw offscreen where there is no screen (pictures, reports, benchmarks need no window)."""
    if headless():
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
