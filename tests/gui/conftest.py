import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402


@pytest.fixture
def settings(tmp_path):
    from PySide6 import QtCore

    return QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)


@pytest.fixture
def window(qtbot, settings, tmp_path):
    from specscope.gui.main_window import MainWindow

    w = MainWindow(settings=settings, autosave_dir=str(tmp_path / "sessions"))
    qtbot.addWidget(w)
    w.resize(1440, 900)
    w.show()
    yield w
    if w.is_running():
        w.worker.stop_and_wait()
    w.setup.inspector.shutdown()
