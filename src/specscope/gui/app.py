"""Entry point of the desktop app: ``specscope`` / ``specscope gui [options]``.

    specscope gui --demo --autorun --screenshot out.png --exit-when-done --cases 1 --max-tokens 8
    specscope gui --session s.json --screenshot breakdown.png --view breakdown
    specscope gui --demo --ranks 2 --autorun --exit-when-done --cases 2 --max-tokens 16 --screenshot ranks2.png
    specscope gui --session a.json --compare b.json --screenshot compare.png --size 1280x800

``SPECSCOPE_THEME=dark`` (or ``light``) forces the colour scheme (see ``theme.py``).
``SPECSCOPE_REPORT_FIRST_PAINT=1`` prints, to stderr, ``specscope-startup STAGE SECONDS`` lines (``time.monotonic()``,
comparable across processes on one machine) as the app starts: ``main`` (the app's entry, after the CLI),
``window_module`` (the main window's module imported), ``window_built``, ``session_opened`` and ``first_paint``
(the page on screen painted, with the opened session's figures set on it before; ``tools/startup_time.py``).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

from PySide6 import QtCore, QtWidgets

from specscope.display import offscreen_if_headless

from .inspector import DEMO

SCREEN_SIZE = (1440, 900)


def _stamp(stage: str) -> None:
    """With ``SPECSCOPE_REPORT_FIRST_PAINT`` set: one start-up stage's time on stderr (module docstring)."""
    if os.environ.get("SPECSCOPE_REPORT_FIRST_PAINT"):
        print(f"specscope-startup {stage} {time.monotonic():.6f}", file=sys.stderr, flush=True)


class _FirstPaint(QtCore.QObject):
    """Stamps ``first_paint`` once the watched page has received its first paint event, after the rest of that
    paint pass (the page's children, its charts among them) and the flush to the screen: the stamp is taken by a
    zero timer, which runs only after the event that painted."""

    def eventFilter(self, obj, ev):  # noqa: N802 (Qt naming)
        if ev.type() == QtCore.QEvent.Type.Paint:
            obj.removeEventFilter(self)
            QtCore.QTimer.singleShot(0, lambda: _stamp("first_paint"))
        return False


def _watch_first_paint(page: QtWidgets.QWidget) -> None:
    if os.environ.get("SPECSCOPE_REPORT_FIRST_PAINT"):
        watcher = _FirstPaint(page)
        page.installEventFilter(watcher)


def _arg(args, name, default=None):
    return getattr(args, name, default) if args is not None else default


def parse_size(text: str | None) -> tuple[int, int] | None:
    """``"1280x800"`` -> (1280, 800); None for None; ValueError for anything else."""
    if not text:
        return None
    try:
        w, h = (int(x) for x in str(text).lower().replace("×", "x").split("x"))
    except ValueError:
        raise ValueError(f"window size {text!r} is not WIDTHxHEIGHT, e.g. 1280x800") from None
    if not (320 <= w <= 10000 and 240 <= h <= 10000):
        raise ValueError(f"window size {text!r} is out of range (320x240 to 10000x10000)")
    return w, h


def collect_on_the_gui_thread(app: QtWidgets.QApplication):
    """Python's cyclic garbage collector run from a timer on the app's own thread, automatic collection off.

    An automatic collection runs on whichever thread allocates past the threshold, such as the History page's reader
    thread, and would destroy the Qt objects in the cycles it frees there, off the thread that owns them (a crash
    without a traceback). pyqtgraph's ``GarbageCollector`` (the recipe many Qt apps use) checks the thresholds every
    second and collects here instead. Kept on the app for its lifetime; returned for tests."""
    from pyqtgraph.util.garbage_collector import GarbageCollector

    collector = GarbageCollector(interval=1.0)
    app._specscope_gc = collector  # type: ignore[attr-defined]  # lives as long as the app
    return collector


def make_app(argv=None) -> QtWidgets.QApplication:
    app = QtWidgets.QApplication.instance()
    if app is None:
        app = QtWidgets.QApplication(argv or [sys.argv[0] if sys.argv else "specscope"])
    assert isinstance(app, QtWidgets.QApplication)  # the app's one application is a widgets one
    app.setApplicationName("specscope")
    app.setOrganizationName("specscope")
    app.setApplicationDisplayName("specscope")
    return app


def _error(message: str) -> int:
    print(f"specscope: error: {message}", file=sys.stderr)
    return 2


def _platform_problem(automated: bool) -> str | None:
    """Why Qt cannot open a window here (missing xcb libraries, named with the install command), else None."""
    if automated:
        offscreen_if_headless()
    if QtWidgets.QApplication.instance() is None:
        from .platform_libs import xcb_problem

        return xcb_problem()  # Qt would abort naming one library; say them all, with the install command
    return None


def _scripted_settings() -> QtCore.QSettings:
    """Scripted runs (screenshots, tests) never overwrite the user's saved settings: theirs live in a temp folder."""
    tmp = tempfile.mkdtemp(prefix="specscope-gui-")
    return QtCore.QSettings(os.path.join(tmp, "settings.ini"), QtCore.QSettings.Format.IniFormat)


def _apply_setup_args(setup, args) -> None:
    """The command line's model and run settings into the setup panel."""
    if _arg(args, "demo"):
        setup.set_model(DEMO)
    elif _arg(args, "model"):
        setup.add_recent(args.model)
        setup.refresh_models(select=args.model)
        setup.set_model(args.model)
    if _arg(args, "drafter"):
        setup.set_drafter(args.drafter)
    for name, box in (("num_draft_tokens", setup.k), ("cases", setup.cases), ("max_tokens", setup.max_tokens),
                      ("repeats", setup.repeats)):
        if _arg(args, name):
            box.setValue(getattr(args, name))
    if _arg(args, "discard_first") is not None:
        setup.discard_first.setValue(args.discard_first)
    if _arg(args, "cooldown"):
        setup.cooldown.setChecked(True)
    if _arg(args, "ranks") is not None:
        setup.set_ranks(args.ranks)


def _finisher(app, win, args, state: dict):
    """``finish(code)``: take the screenshot asked for (on ``--view``), keep ``code`` in ``state`` and, when scripted,
    close the window and end the app with it."""
    shot, view = _arg(args, "screenshot"), _arg(args, "view")

    def finish(code: int) -> None:
        if shot:
            if view:
                win.show_page(view)
            QtWidgets.QApplication.processEvents()
            if not win.grab_png(shot):
                print(f"specscope: could not write screenshot {shot}", file=sys.stderr)
                code = code or 1
            else:
                print(f"screenshot saved to {shot}", file=sys.stderr)
        state["code"] = code
        if _arg(args, "exit_when_done") or shot:
            win.close()
            app.exit(code)

    return finish


def _open_requested(win, args, automated: bool) -> int:
    """``--session`` (and ``--compare``): opened, or said why not; non-zero when a scripted run must end here."""
    if _arg(args, "session"):
        from specscope.profiler.session.schema import SessionError

        try:
            win.open_session(args.session)
        except SessionError as exc:
            print(f"specscope: error: {exc}", file=sys.stderr)
            if automated:
                win.close()
                return 2
            win.show_error("Cannot open the session", str(exc))
    if _arg(args, "compare"):
        if not _arg(args, "session"):
            print("specscope: error: --compare B needs --session A", file=sys.stderr)
            if automated:
                win.close()
                return 2
        elif not win.compare_paths(args.session, args.compare) and automated:
            print(f"specscope: error: cannot compare {args.session} with {args.compare}", file=sys.stderr)
            win.close()
            return 2
    return 0


def _finish_when_settled(win, finish) -> None:
    """A picture of the window as opened (session or model picked): once the compatibility line and the pages that
    read files in the background (History) have filled in, or after 15 s."""
    deadline = QtCore.QDeadlineTimer(15000)

    def busy():
        return win.setup.inspector.proc is not None or any(
            getattr(v, "busy", lambda: False)() for v in win.views.built().values())

    def when_inspected():
        if not busy() or deadline.hasExpired():
            finish(0)
        else:
            QtCore.QTimer.singleShot(200, when_inspected)

    QtCore.QTimer.singleShot(400, when_inspected)


def _autorun(win, automated: bool, finish) -> None:
    """``--autorun``: press Run once the app runs; a failed run says why; a scripted run ends with the run."""
    def on_done(status: str) -> None:
        if status == "failed":
            errs = win.model.session.data.get("errors") or ["unknown error"]
            print(f"specscope: run failed: {errs[-1]}", file=sys.stderr)
        if automated:
            QtCore.QTimer.singleShot(300, lambda: finish(0 if status == "complete" else 1))

    win.run_finished.connect(on_done)

    def go():
        if not win.start_run() and automated:
            finish(2)

    QtCore.QTimer.singleShot(0, go)


def main(args=None) -> int:
    _stamp("main")
    automated = bool(_arg(args, "screenshot") or _arg(args, "exit_when_done"))
    try:
        size = parse_size(_arg(args, "size"))
    except ValueError as exc:
        return _error(str(exc))
    problem = _platform_problem(automated)
    if problem:
        return _error(problem)
    app = make_app()
    collect_on_the_gui_thread(app)
    from .main_window import PAGES, MainWindow

    view = _arg(args, "view")
    if view and view not in PAGES:
        return _error(f"unknown --view {view!r}; choose one of {', '.join(PAGES)}")

    _stamp("window_module")
    win = MainWindow(settings=_scripted_settings() if automated else None)
    _stamp("window_built")
    if automated or size:
        win.resize(*(size or SCREEN_SIZE))
    _apply_setup_args(win.setup, args)
    win.show()

    state = {"code": 0}
    finish = _finisher(app, win, args, state)
    code = _open_requested(win, args, automated)
    if code:
        return code
    if view:
        win.show_page(view)
    _stamp("session_opened")
    _watch_first_paint(win.tabs.currentWidget())
    if automated and not _arg(args, "autorun"):
        _finish_when_settled(win, finish)
    if _arg(args, "autorun"):
        _autorun(win, automated, finish)
    rc = app.exec()
    return state["code"] if automated else rc


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser()
    for flag in ("--demo", "--autorun", "--exit-when-done", "--cooldown"):
        ap.add_argument(flag, action="store_true")
    for flag in ("--model", "--session", "--screenshot", "--drafter", "--view", "--size", "--compare"):
        ap.add_argument(flag)
    for flag in ("--cases", "--max-tokens", "--num-draft-tokens", "--repeats", "--discard-first", "--ranks"):
        ap.add_argument(flag, type=int)
    sys.exit(main(ap.parse_args()))
