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
* ``xdotool``: when ``xdotool search --sync --onlyvisible --name TITLE`` (started with the app) found the mapped
  window titled with the session's file name: an outside check of the same moment (the title is set when the
  session is opened, the window is mapped by the first pass of the event loop).
* the app's stages, from its other stamps: ``start`` (Python, the CLI, to the app's entry), ``imports`` (to the
  main window's module imported), ``build`` (the window built), ``open`` (the session opened and pushed to the
  pages), ``paint`` (to first paint).

It also times ``python -X importtime -c "import specscope.gui.main_window"`` for each install (paired, ABBA): the
cumulative import time of the window's module in a bare interpreter.
"""

from __future__ import annotations

import argparse
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


def fresh_env(display: str, home: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QT_", "XDG_", "SPECSCOPE_"))}
    env.update(DISPLAY=display, HOME=home, SPECSCOPE_REPORT_FIRST_PAINT="1", HF_HUB_OFFLINE="1",
               XDG_CONFIG_HOME=f"{home}/.config", XDG_DATA_HOME=f"{home}/.local/share",
               XDG_CACHE_HOME=f"{home}/.cache", XDG_RUNTIME_DIR=f"{home}/run", SPECSCOPE_HOME=f"{home}/specscope")
    os.makedirs(f"{home}/run", mode=0o700)
    return env


def launch(venv: str, session: str, display: str, timeout: float = 60.0) -> dict:
    """One launch: the app's stamps and the xdotool time, in seconds after the launch."""
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

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(timeout)
        try:
            xdo.wait(max(1.0, timeout - (time.monotonic() - t0)))
            got["xdotool"] = time.monotonic() - t0
        except subprocess.TimeoutExpired:
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
    if "xdotool" in run:
        s["xdotool"] = run["xdotool"]
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
        print(f"{'pair':>4} {'order':>7} {'old':>7} {'new':>7} {'new/old':>7}   old xdotool  new xdotool")
        for i in range(a.pairs):
            order = ("old", "new") if i % 2 == 0 else ("new", "old")
            got = {side: stages(launch(venvs[side], session, display)) for side in order}
            for side in order:
                runs[side].append(got[side])
            o, n = got["old"], got["new"]
            print(f"{i + 1:>4} {'-'.join(order):>7} {o['first_paint']:7.3f} {n['first_paint']:7.3f} "
                  f"{n['first_paint'] / o['first_paint']:7.2f}   {o.get('xdotool', float('nan')):11.3f} "
                  f"{n.get('xdotool', float('nan')):11.3f}", flush=True)
        if not a.no_imports:
            for i in range(a.pairs):
                for side in (("old", "new") if i % 2 == 0 else ("new", "old")):
                    imports[side].append(import_time(venvs[side]))
    finally:
        xvfb.terminate()
        xvfb.wait()

    med = {side: {k: statistics.median(r[k] for r in runs[side]) for k in runs[side][0]} for side in runs}
    ratios = [n["first_paint"] / o["first_paint"] for o, n in zip(runs["old"], runs["new"])]
    print(f"\nmedians over {a.pairs} pairs (s)   {'old':>7} {'new':>7} {'new/old':>7}")
    for k in ("start", "imports", "build", "open", "paint", "first_paint", "xdotool"):
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
