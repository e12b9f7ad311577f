"""Make the README's screenshots and the sample report from a current, clean demo session.

    python tools/screenshots.py [--out docs] [--keep DIR] [--sessions DIR] [--allow-undecided]

Runs, from a fresh temporary home (so no path, setting or session of this machine shows in a picture):

1. `specscope run --demo --until decided --roofline -o demo.json` (the MTP head) and the same with `--drafter draft`:
   measured until the prediction's verdict is decided, the verify cost curve kept in the first;
2. `specscope tune --demo` on one prompt (a short tune: its page, not a figure to quote);

checks the pictures' session is clean (complete, the verdict decided, no clock-probe drift: a picture of a warning
says nothing about the app) and measures it again if it is not, once; a busy machine cannot decide a verdict, so
before measuring it it waits (up to --wait-quiet seconds) until the 1-minute load is under the CPU count less
half a core; then opens the sessions in the app offscreen
(QT_QPA_PLATFORM=offscreen, QWidget.grab) and saves every main page into OUT/screenshots/ at 1440×900, and writes
OUT/sample-report.html and .pdf with `specscope report`. `--sessions DIR` reuses demo.json, draft.json and tune.json
from an earlier `--keep DIR` instead of measuring again. On a 2-core machine the measuring takes 10–15 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = {  # session file -> the command that makes it (after `specscope`)
    "demo.json": ["run", "--demo", "--until", "decided", "--roofline"],  # the pictures' session: must be clean
    "draft.json": ["run", "--demo", "--drafter", "draft", "--cases", "6"],  # the other side of Compare, a row in History
    "tune.json": ["tune", "--demo", "--drafters", "mtp,draft", "--k-max", "2", "--cases", "1", "--max-tokens", "32",
                  "--reps", "3"],  # its page, not a figure to quote
}
PAGES = {"demo.json": ["live", "breakdown", "division", "verify_cost", "cases"], "tune.json": ["tune"]}


def fresh_env(home: Path) -> dict[str, str]:
    env = dict(os.environ, HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), XDG_DATA_HOME=str(home / ".local/share"),
               XDG_CONFIG_HOME=str(home / ".config"), HF_HOME=str(home / ".cache/huggingface"),
               SPECSCOPE_HOME=str(home / ".cache/specscope"), HF_HUB_OFFLINE="1", QT_QPA_PLATFORM="offscreen",
               SPECSCOPE_THEME="light")
    env.pop("HF_HUB_CACHE", None)
    return env


def specscope(env: dict[str, str], *args: str) -> int:
    print("+ specscope", " ".join(args), flush=True)
    return subprocess.run([sys.executable, "-m", "specscope", *args], env=env, cwd=env["HOME"]).returncode


def why_not_clean(path: Path, allow_undecided: bool = False) -> str | None:
    """None when the run session is fit for a picture; else what is wrong with it. ``allow_undecided``: a verdict
    still "too little data" is fit (an honest state of a noisy machine, said on the page), a warning never is."""
    from specscope.profiler.analysis.summary import summarize
    from specscope.profiler.session.session import Session

    s = Session.load(str(path))
    if s.status != "complete":
        return f"status {s.status}"
    m = summarize(s)
    verdict = m["prediction_verdict"]
    if verdict.get("state") not in ("agrees", "off") and not allow_undecided:
        return f"verdict not decided: {verdict.get('text')}"
    if (m.get("probe") or {}).get("drift"):
        return "the clock probe drifted"
    return None


def wait_quiet(seconds: float) -> None:
    """Wait until other processes leave the cores alone (the 1-minute load under the CPU count less half a core)."""
    limit, waited = (os.cpu_count() or 1) - 0.5, 0.0
    while os.getloadavg()[0] >= limit and waited < seconds:
        if waited == 0:
            print(f"waiting for a quiet machine (1-minute load {os.getloadavg()[0]:.1f}, wanted < {limit})", flush=True)
        time.sleep(15)
        waited += 15
    print(f"1-minute load {os.getloadavg()[0]:.1f} after {waited:.0f} s", flush=True)


def measure(env: dict[str, str], home: Path, quiet_s: float, allow_undecided: bool = False) -> None:
    for name, cmd in RUNS.items():
        for attempt in (1, 2):
            (home / name).unlink(missing_ok=True)  # a retry replaces the unclean session
            if name == "demo.json":
                wait_quiet(quiet_s)
            rc = specscope(env, *cmd, "-o", str(home / name), "--quiet")
            problem = f"exit {rc}" if rc != 0 else (why_not_clean(home / name, allow_undecided) if name == "demo.json" else None)
            if problem is None:
                break
            print(f"{name}: {problem}" + ("; measuring it again" if attempt == 1 else ""), flush=True)
        else:
            sys.exit(f"screenshots: {name} is not clean after two tries ({problem}): nothing written")


def grab(home: Path, shots: Path) -> None:
    from PySide6 import QtCore

    from specscope.gui.app import SCREEN_SIZE, make_app
    from specscope.gui.main_window import MainWindow

    app = make_app()
    settings = QtCore.QSettings(str(home / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    sessions = home / ".local/share/specscope/sessions"  # History lists what the app would have autosaved
    sessions.mkdir(parents=True, exist_ok=True)
    for name in ("demo.json", "draft.json"):
        shutil.copy(home / name, sessions / f"session-{name}")
    win = MainWindow(settings=settings, autosave_dir=str(sessions))
    win.resize(*SCREEN_SIZE)
    win.show()

    def settle(ms: int = 600) -> None:
        end = QtCore.QDeadlineTimer(ms)
        while not end.hasExpired():
            app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 50)

    def busy() -> bool:  # the model's compatibility line, the pre-flight line, a page reading files (History)
        return (win.setup.inspector.query is not None or win.setup.preflight.query is not None
                or any(getattr(v, "busy", lambda: False)() for v in win.views.built().values()))

    def shoot(page: str) -> None:
        win.show_page(page)
        settle()
        deadline = QtCore.QDeadlineTimer(30000)
        while busy() and not deadline.hasExpired():  # let them fill in before the picture is taken
            settle(200)
        win.statusBar().clearMessage()  # a hint about this machine (a missing font) is not part of the picture
        out = shots / f"{page}.png"
        assert win.grab_png(str(out)), f"could not write {out}"
        print(f"wrote {out}", flush=True)

    os.chdir(home)  # the app names files relative to home: "opened ~/demo.json"
    for name, pages in PAGES.items():
        win.open_session(str(home / name))
        for page in pages:
            shoot(page)
    win.open_session(str(home / "demo.json"))
    assert win.compare_paths(str(home / "demo.json"), str(home / "draft.json"))
    shoot("compare")
    shoot("history")
    win.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs"), help="the docs folder")
    ap.add_argument("--keep", help="copy the measured sessions here")
    ap.add_argument("--sessions", help="reuse demo.json, draft.json and tune.json from this folder")
    ap.add_argument("--wait-quiet", type=float, default=1800, metavar="S",
                    help="wait at most S seconds for a quiet machine before the pictured run (default 1800)")
    ap.add_argument("--allow-undecided", action="store_true",
                    help="picture a session whose verdict is still undecided (a noisy machine cannot decide ±5%% in the "
                         "run's 40 cases; drift and an incomplete run are still refused)")
    args = ap.parse_args(argv)
    out = Path(args.out).resolve()
    shots = out / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="specscope-shots-")) / "home"
    home.mkdir()
    env = fresh_env(home)
    os.environ.update(env)  # the in-process app below reads the same home
    if args.sessions:
        for name in RUNS:
            shutil.copy(Path(args.sessions) / name, home / name)
        problem = why_not_clean(home / "demo.json", args.allow_undecided)
        if problem:
            sys.exit(f"screenshots: {args.sessions}/demo.json is not clean ({problem}): nothing written")
    else:
        measure(env, home, args.wait_quiet, args.allow_undecided)
    if args.keep:
        Path(args.keep).mkdir(parents=True, exist_ok=True)
        for name in RUNS:
            shutil.copy(home / name, Path(args.keep) / name)
    for ext in ("html", "pdf"):
        if specscope(env, "report", str(home / "demo.json"), "-o", str(out / f"sample-report.{ext}"), "--force") != 0:
            sys.exit(f"screenshots: the {ext} report failed")
    grab(home, shots)
    print(json.dumps({"screenshots": sorted(p.name for p in shots.glob("*.png"))}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
