import atexit
import gc
import os
import shutil
import tempfile

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

# The suite runs from an empty home, made here once (xdist's workers inherit it): what a developer's machine holds
# (~/.cache/specscope, ~/.local/share, the Hugging Face cache, app settings) can never make a test pass that fails
# on a fresh machine, and no test writes into the real home. `.ci/run` points these at an empty folder too.
if not os.environ.get("SPECSCOPE_TEST_HOME"):
    _home = tempfile.mkdtemp(prefix="specscope-test-home-")
    os.environ["SPECSCOPE_TEST_HOME"] = _home
    for _var, _sub in (("HOME", ""), ("XDG_CACHE_HOME", ".cache"), ("XDG_DATA_HOME", ".local/share"),
                       ("XDG_CONFIG_HOME", ".config"), ("HF_HOME", ".cache/huggingface"),
                       ("SPECSCOPE_HOME", ".cache/specscope")):
        os.environ[_var] = os.path.join(_home, _sub) if _sub else _home
    os.environ.pop("HF_HUB_CACHE", None)
    atexit.register(shutil.rmtree, _home, ignore_errors=True)  # the process that made it removes it (not a worker)

# Every run in the suite takes its pre-flight from a recorded calm machine (engine_adapter.preflight), so a laptop in
# Low Power Mode or a busy CI box cannot stop the suite's runs; the tests of the pre-flight itself read this machine
# or their own recordings (they unset it).
os.environ["SPECSCOPE_PREFLIGHT_READINGS"] = os.path.join(os.path.dirname(__file__), "fixtures", "preflight_calm_linux.json")

# Loaded into every Python process of a test (sitecustomize): records that it is active and
# refuses, and logs, every attempt to open a connection.
NO_NETWORK = r'''
import os, socket
_dir = os.environ["SPECSCOPE_TEST_NET_DIR"]
open(os.path.join(_dir, "active-%d" % os.getpid()), "w").close()

def _refuse(*a, **k):
    with open(os.path.join(_dir, "attempts"), "a") as f:
        f.write("%d %r\n" % (os.getpid(), a[:2]))
    raise OSError("network access blocked by the specscope test")

socket.socket.connect = _refuse
socket.socket.connect_ex = _refuse
socket.socket.sendto = _refuse
socket.create_connection = _refuse
socket.getaddrinfo = _refuse
'''


@pytest.fixture
def no_network(tmp_path):
    """(env, folder): an environment whose Python processes cannot connect anywhere (offline flags removed,
    so a library that would reach a hub tries, and is caught); the folder collects the evidence."""
    site = tmp_path / "no-network-site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(NO_NETWORK)
    net = tmp_path / "net"
    net.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")}
    env["PYTHONPATH"] = str(site) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["SPECSCOPE_TEST_NET_DIR"] = str(net)
    return env, net


# -- the desktop app (pytest-qt, offscreen) ---------------------------------------------------------------
# Shared by tests/reliability (and any directory without a conftest of its own that defines them).

@pytest.fixture(autouse=True)
def _qt_garbage_collected_on_the_main_thread(request):
    """After a test with Qt widgets (torn down last, after qtbot has closed them), collect their cycles here, on the
    main thread. Otherwise the next cyclic collection may run on whatever thread allocates next, such as the History
    page's reader thread, and destroy Qt objects there: a worker died without a traceback in
    test_file_menu_compare_sessions (CI, once, near the end of the run), which this is meant to rule out."""
    yield
    if "qtbot" in request.fixturenames:
        # qtbot has closed its widgets and called deleteLater(); without an event loop to run them those deletions
        # wait, and a test process held up to six main windows of earlier tests (each re-polished by every later one)
        from PySide6 import QtCore

        QtCore.QCoreApplication.sendPostedEvents(None, QtCore.QEvent.Type.DeferredDelete)
        gc.collect()


@pytest.fixture
def settings(tmp_path):
    """App settings in a private ini file: a test never reads or writes the user's settings."""
    from PySide6 import QtCore

    return QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)


@pytest.fixture
def window(qtbot, settings, tmp_path):
    """The main window, shown offscreen at the screenshot size; any run still going is stopped afterwards."""
    from specscope.gui.main_window import MainWindow

    w = MainWindow(settings=settings, autosave_dir=str(tmp_path / "sessions"))
    qtbot.addWidget(w)
    w.resize(1440, 900)
    w.show()
    yield w
    if w.is_running():
        w.worker.stop_and_wait()
    w.setup.inspector.shutdown()


def _small_demo_run(w, max_tokens=8, cases=2, breakdown=True):
    """Set the app's setup panel for a small greedy demo run with the draft-model drafter."""
    from specscope.gui.inspector import DEMO

    s = w.setup
    s.set_model(DEMO)
    s.set_drafter("draft")
    s.k.setValue(2)
    s.cases.setValue(cases)
    s.max_tokens.setValue(max_tokens)
    s.warmup.setValue(0)
    s.repeats.setValue(1)
    s.breakdown.setChecked(breakdown)
    s.greedy.setChecked(True)


@pytest.fixture
def small_demo_run():
    """Set the app's setup panel for a small greedy demo run (draft-model drafter, no warm-up)."""
    return _small_demo_run
