"""The app half of ``specscope bench gui``: one run with the window open and charts updating."""

from __future__ import annotations

import os
import tempfile

from PySide6 import QtCore

from specscope.profiler.run.config import RunConfig
from specscope.profiler.analysis.summary import summarize
from specscope.profiler.session.records import Summary


def run_with_app(cfg: RunConfig) -> Summary:
    """Run ``cfg`` through the real main window (offscreen where there is no display); return the summary."""
    from .app import make_app
    from .main_window import MainWindow

    app = make_app()
    tmp = tempfile.mkdtemp(prefix="specscope-bench-")
    win = MainWindow(settings=QtCore.QSettings(os.path.join(tmp, "s.ini"), QtCore.QSettings.Format.IniFormat), autosave_dir=tmp)
    win.setup.config = lambda: RunConfig(**cfg.to_dict())  # type: ignore[method-assign]  # the bench runs its cfg, not the panel's fields
    win.show()
    loop = QtCore.QEventLoop()
    win.run_finished.connect(lambda _status: loop.quit())
    if not win.start_run():
        raise RuntimeError("the app refused to start the run")
    loop.exec()
    summary = summarize(win.model.session)
    win.close()
    win.deleteLater()
    app.processEvents()
    return summary
