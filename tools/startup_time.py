"""Launch to first paint of ``specscope gui --session S``, two installs side by side (paired, ABBA).

    python tools/startup_time.py --old /work/venv-old --new /work/venv-new --pairs 8 [--session S] [--json OUT]

Starts Xvfb on a free display (a real X window, Qt's xcb plugin: it needs ``xvfb``, ``xdotool`` and the X libraries
the README's Linux notes name), then for every pair launches ``VENV/bin/specscope gui --session S`` once with each
install, in ABBA order (old new, new old, old new, …), each from a fresh empty home (no saved window geometry, an
empty History), and kills it once it has painted.

What is measured, from the launcher's ``time.monotonic()`` just before the process starts (CLOCK_MONOTONIC, the
same clock in every process of the machine):

* ``first_paint``: the app's own stamp (``SPECSCOPE_REPORT_FIRST_PAINT=1``, see ``specscope.gui.app``): the page on
  screen has received its first paint event, with the session's figures set on it before, and that paint pass has
  been flushed. This is "first paint" in the table.
* ``mapped``: an outside check, from the X server: when a viewable top-level window titled with the session's file
  name first exists (``_NET_WM_NAME``, polled every 5 ms through libX11). The title is set when the session is
  opened and the window is mapped as the event loop starts, so this comes a little before the first paint: a
  lower bound on it that the app does not report itself.
* ``xdotool``: when ``xdotool search --sync --onlyvisible --name TITLE`` (started with the app) returned. It looks
  every 0.5 s (measured: a window mapped at 0.10 s was found at 0.51 s, one mapped at 0.60 s at 1.03 s), so it
  only bounds the others from above.
* the app's stages, from its other stamps: ``start`` (Python, the CLI, to the app's entry), ``imports`` (to the
  main window's module imported), ``build`` (the window built), ``open`` (the session opened and pushed to the
  pages), ``paint`` (to first paint).

It also times ``python -X importtime -c "import specscope.gui.main_window"`` for each install (paired, ABBA): the
cumulative import time of the window's module in a bare interpreter.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
nan = float("nan")
STAGES = ("main", "window_module", "window_built", "session_opened", "first_paint")


def free_display() -> int:
    for n in range(40, 400):
        if not Path(f"/tmp/.X11-unix/X{n}").exists() and not Path(f"/tmp/.X{n}-lock").exists():
            return n
    raise SystemExit("no free X display number")


def start_xvfb() -> tuple[subprocess.Popen, str]:
    if not shutil.which("Xvfb") or not shutil.which("xdotool"):
        raise SystemExit("needs Xvfb and xdotool: apt-get install -y xvfb xdotool")
    n = free_display()
    proc = subprocess.Popen(["Xvfb", f":{n}", "-screen", "0", "1920x1080x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sock = Path(f"/tmp/.X11-unix/X{n}")
    for _ in range(100):
        if sock.exists():
            return proc, f":{n}"
        if proc.poll() is not None:
            raise SystemExit(f"Xvfb :{n} exited ({proc.returncode})")
        time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"Xvfb :{n} did not start")


class _Attrs(ctypes.Structure):  # XWindowAttributes
    _fields_ = [("x", ctypes.c_int), ("y", ctypes.c_int), ("width", ctypes.c_int), ("height", ctypes.c_int),
                ("border_width", ctypes.c_int), ("depth", ctypes.c_int), ("visual", ctypes.c_void_p),
                ("root", ctypes.c_ulong), ("class_", ctypes.c_int), ("bit_gravity", ctypes.c_int),
                ("win_gravity", ctypes.c_int), ("backing_store", ctypes.c_int), ("backing_planes", ctypes.c_ulong),
                ("backing_pixel", ctypes.c_ulong), ("save_under", ctypes.c_int), ("colormap", ctypes.c_ulong),
                ("map_installed", ctypes.c_int), ("map_state", ctypes.c_int), ("all_event_masks", ctypes.c_long),
                ("your_event_mask", ctypes.c_long), ("do_not_propagate_mask", ctypes.c_long),
                ("override_redirect", ctypes.c_int), ("screen", ctypes.c_void_p)]


class XWatch:
    """The titles of the viewable top-level windows of an X display, read through libX11."""

    IS_VIEWABLE = 2

    def __init__(self, display: str) -> None:
        X = self.X = ctypes.CDLL(ctypes.util.find_library("X11") or "libX11.so.6")
        X.XOpenDisplay.restype = ctypes.c_void_p
        X.XOpenDisplay.argtypes = [ctypes.c_char_p]
        X.XDefaultRootWindow.restype = ctypes.c_ulong
        X.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
        X.XInternAtom.restype = ctypes.c_ulong
        X.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
        X.XQueryTree.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.POINTER(ctypes.c_ulong),
                                 ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.POINTER(ctypes.c_ulong)),
                                 ctypes.POINTER(ctypes.c_uint)]
        X.XGetWindowAttributes.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.POINTER(_Attrs)]
        X.XGetWindowProperty.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_long, ctypes.c_long,
                                         ctypes.c_int, ctypes.c_ulong, ctypes.POINTER(ctypes.c_ulong),
                                         ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_ulong),
                                         ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_void_p)]
        X.XFree.argtypes = [ctypes.c_void_p]
        X.XCloseDisplay.argtypes = [ctypes.c_void_p]
        self.d = X.XOpenDisplay(display.encode())
        if not self.d:
            raise SystemExit(f"cannot open X display {display}")
        self.root = X.XDefaultRootWindow(self.d)
        self.name = X.XInternAtom(self.d, b"_NET_WM_NAME", 0)
        self.utf8 = X.XInternAtom(self.d, b"UTF8_STRING", 0)

    def titles(self) -> list[str]:
        X, d = self.X, self.d
        root, parent, n = ctypes.c_ulong(), ctypes.c_ulong(), ctypes.c_uint()
        kids = ctypes.POINTER(ctypes.c_ulong)()
        if not X.XQueryTree(d, self.root, ctypes.byref(root), ctypes.byref(parent), ctypes.byref(kids), ctypes.byref(n)):
            return []
        out = []
        try:
            for i in range(n.value):
                w, attrs = kids[i], _Attrs()
                if not X.XGetWindowAttributes(d, w, ctypes.byref(attrs)) or attrs.map_state != self.IS_VIEWABLE:
                    continue
                kind, fmt, items, after = ctypes.c_ulong(), ctypes.c_int(), ctypes.c_ulong(), ctypes.c_ulong()
                prop = ctypes.c_void_p()
                if X.XGetWindowProperty(d, w, self.name, 0, 1024, 0, self.utf8, ctypes.byref(kind), ctypes.byref(fmt),
                                        ctypes.byref(items), ctypes.byref(after), ctypes.byref(prop)) == 0 and prop.value:
                    out.append(ctypes.string_at(prop.value, items.value).decode("utf-8", "replace"))
                    X.XFree(prop)
        finally:
            if kids:
                X.XFree(kids)
        return out

    def close(self) -> None:
        self.X.XCloseDisplay(self.d)


def fresh_env(display: str, home: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QT_", "XDG_", "SPECSCOPE_"))}
    env.update(DISPLAY=display, HOME=home, SPECSCOPE_REPORT_FIRST_PAINT="1", HF_HUB_OFFLINE="1",
               XDG_CONFIG_HOME=f"{home}/.config", XDG_DATA_HOME=f"{home}/.local/share",
               XDG_CACHE_HOME=f"{home}/.cache", XDG_RUNTIME_DIR=f"{home}/run", SPECSCOPE_HOME=f"{home}/specscope")
    os.makedirs(f"{home}/run", mode=0o700)
    return env


def launch(venv: str, session: str, display: str, timeout: float = 60.0) -> dict:
    """One launch: the app's stamps, the mapped window and xdotool, in seconds after the launch."""
    home = tempfile.mkdtemp(prefix="specscope-startup-")
    env = fresh_env(display, home)
    title = f"specscope — {Path(session).name}"
    try:
        t0 = time.monotonic()
        xdo = subprocess.Popen(["xdotool", "search", "--sync", "--onlyvisible", "--name", title], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        app = subprocess.Popen([f"{venv}/bin/specscope", "gui", "--session", session], env=env, cwd=home,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        got: dict[str, float] = {}
        other: list[str] = []

        def read():
            assert app.stderr is not None
            for line in app.stderr:
                parts = line.split()
                if len(parts) == 3 and parts[0] == "specscope-startup":
                    got[parts[1]] = float(parts[2]) - t0
                    if parts[1] == "first_paint":
                        return
                else:
                    other.append(line.rstrip())

        def watch():
            xw = XWatch(display)
            try:
                while time.monotonic() - t0 < timeout and app.poll() is None:
                    if any(title in t for t in xw.titles()):
                        got["mapped"] = time.monotonic() - t0
                        return
                    time.sleep(0.005)
            finally:
                xw.close()

        def sync():
            try:
                xdo.wait(timeout)
                got["xdotool"] = time.monotonic() - t0
            except subprocess.TimeoutExpired:
                pass

        threads = [threading.Thread(target=f, daemon=True) for f in (read, watch, sync)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(max(0.0, timeout - (time.monotonic() - t0)))
        xdo.kill()
        app.send_signal(signal.SIGKILL)
        app.wait()
        xdo.wait()
        if "first_paint" not in got:
            raise RuntimeError(f"{venv}: no first paint within {timeout:.0f} s; stderr: {' | '.join(other[-5:])}")
        return got
    finally:
        shutil.rmtree(home, ignore_errors=True)


def import_time(venv: str) -> float:
    """Seconds ``import specscope.gui.main_window`` takes in a fresh interpreter (``-X importtime``, cumulative)."""
    r = subprocess.run([f"{venv}/bin/python", "-X", "importtime", "-c", "import specscope.gui.main_window"],
                       capture_output=True, text=True, check=True, cwd=tempfile.gettempdir())
    for line in r.stderr.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == "specscope.gui.main_window":
            return int(parts[1]) / 1e6
    raise RuntimeError("no import time for specscope.gui.main_window")


def stages(run: dict) -> dict:
    s = {"start": run["main"], "imports": run["window_module"] - run["main"],
         "build": run["window_built"] - run["window_module"], "open": run["session_opened"] - run["window_built"],
         "paint": run["first_paint"] - run["session_opened"], "first_paint": run["first_paint"]}
    for k in ("mapped", "xdotool"):
        if k in run:
            s[k] = run[k]
    return s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True, help="the baseline's virtual environment")
    ap.add_argument("--new", required=True, help="the changed version's virtual environment")
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--session", default=str(ROOT / "tests" / "fixtures" / "session_demo.json"))
    ap.add_argument("--no-imports", action="store_true", help="skip the -X importtime pairs")
    ap.add_argument("--json", help="write every run here")
    a = ap.parse_args()
    session = str(Path(a.session).resolve())
    venvs = {"old": a.old, "new": a.new}
    xvfb, display = start_xvfb()
    runs: dict[str, list[dict]] = {"old": [], "new": []}
    imports: dict[str, list[float]] = {"old": [], "new": []}
    try:
        launch(a.new, session, display)  # warm the file cache for both, unmeasured
        launch(a.old, session, display)
        print(f"display {display}; {a.pairs} pairs, ABBA; seconds from launch", file=sys.stderr)
        print(f"{'pair':>4} {'order':>7} {'old':>7} {'new':>7} {'new/old':>7}   mapped: old    new   xdotool: old    new")
        for i in range(a.pairs):
            order = ("old", "new") if i % 2 == 0 else ("new", "old")
            got = {side: stages(launch(venvs[side], session, display)) for side in order}
            for side in order:
                runs[side].append(got[side])
            o, n = got["old"], got["new"]
            print(f"{i + 1:>4} {'-'.join(order):>7} {o['first_paint']:7.3f} {n['first_paint']:7.3f} "
                  f"{n['first_paint'] / o['first_paint']:7.2f}   {o.get('mapped', nan):11.3f} {n.get('mapped', nan):6.3f}"
                  f" {o.get('xdotool', nan):12.3f} {n.get('xdotool', nan):6.3f}", flush=True)
        if not a.no_imports:
            for i in range(a.pairs):
                for side in (("old", "new") if i % 2 == 0 else ("new", "old")):
                    imports[side].append(import_time(venvs[side]))
    finally:
        xvfb.terminate()
        xvfb.wait()

    med = {side: {k: statistics.median(r[k] for r in runs[side] if k in r) for k in runs[side][0]} for side in runs}
    ratios = [n["first_paint"] / o["first_paint"] for o, n in zip(runs["old"], runs["new"])]
    print(f"\nmedians over {a.pairs} pairs (s)   {'old':>7} {'new':>7} {'new/old':>7}")
    for k in ("start", "imports", "build", "open", "paint", "first_paint", "mapped", "xdotool"):
        if k in med["old"] and k in med["new"]:
            print(f"  {k:<28} {med['old'][k]:7.3f} {med['new'][k]:7.3f} {med['new'][k] / med['old'][k]:7.2f}")
    if imports["old"]:
        mo, mn = statistics.median(imports["old"]), statistics.median(imports["new"])
        print(f"  {'import main_window (bare)':<28} {mo:7.3f} {mn:7.3f} {mn / mo:7.2f}")
    print(f"first paint: median of the paired ratios new/old {statistics.median(ratios):.2f} "
          f"(range {min(ratios):.2f}–{max(ratios):.2f}); new median {med['new']['first_paint']:.3f} s")
    if a.json:
        Path(a.json).write_text(json.dumps({"runs": runs, "imports": imports, "ratios": ratios}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
