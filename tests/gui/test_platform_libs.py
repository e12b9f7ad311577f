"""The app says which X libraries Qt's xcb plugin lacks, with the install command, instead of Qt's abort."""

import os
import subprocess
import sys

import pytest

from specscope.gui import platform_libs as pl

# `ldd libqxcb.so` on a fresh Debian 12 machine with PySide6 6.11 from PyPI (this project's machine, 2026-12-02)
LDD_FRESH_DEBIAN = """\
\tlinux-vdso.so.1 (0x00007ffc0b3f2000)
\tlibQt6XcbQpa.so.6 => /v/lib/python3.11/site-packages/PySide6/Qt/plugins/platforms/../../lib/libQt6XcbQpa.so.6 (0x00007f)
\tlibxcb-icccm.so.4 => not found
\tlibxcb-keysyms.so.1 => not found
\tlibxcb.so.1 => /lib/x86_64-linux-gnu/libxcb.so.1 (0x00007f)
\tlibxcb-icccm.so.4 => not found
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)
"""


def fake_run(output):
    return lambda cmd, **kw: subprocess.CompletedProcess(cmd, 0, stdout=output, stderr="")


def test_every_missing_library_is_named_with_the_packages_that_install_it(tmp_path):
    msg = pl.xcb_problem(env={"DISPLAY": ":0"}, platform="linux", plugin=tmp_path / "libqxcb.so",
                         run=fake_run(LDD_FRESH_DEBIAN), loadable=lambda so: False)
    assert msg is not None
    for so in ("libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libxcb-cursor.so.0"):
        assert so in msg
    assert "sudo apt-get install libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1" in msg
    assert "sudo dnf install xcb-util-cursor xcb-util-keysyms xcb-util-wm" in msg


def test_nothing_is_said_where_the_plugin_can_load_or_is_not_used(tmp_path):
    ok = "\tlibxcb.so.1 => /lib/x86_64-linux-gnu/libxcb.so.1 (0x00007f)\n"
    kw = {"plugin": tmp_path / "libqxcb.so", "run": fake_run(ok), "loadable": lambda so: True}
    assert pl.xcb_problem(env={"DISPLAY": ":0"}, platform="linux", **kw) is None
    missing = {"plugin": tmp_path / "libqxcb.so", "run": fake_run(LDD_FRESH_DEBIAN), "loadable": lambda so: False}
    for env, platform in [({"DISPLAY": ":0", "QT_QPA_PLATFORM": "offscreen"}, "linux"), ({}, "linux"),
                          ({"DISPLAY": ":0"}, "darwin"),
                          ({"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0", "XDG_SESSION_TYPE": "wayland"}, "linux")]:
        assert pl.xcb_problem(env=env, platform=platform, **missing) is None, env
    assert pl.xcb_problem(env={"QT_QPA_PLATFORM": "xcb", "DISPLAY": ":0"}, platform="linux", **missing)


def test_the_real_plugin_is_found_and_read():
    plugin = pl.xcb_plugin()
    assert plugin is not None and plugin.name == "libqxcb.so"
    if not pl.shutil.which("ldd"):
        pytest.skip("no ldd on this machine")
    assert isinstance(pl.missing_libraries(plugin), list)


def test_gui_under_a_display_without_the_libraries_exits_with_the_list():
    """A real `specscope gui` with DISPLAY set and no platform chosen: where this machine lacks the libraries (a
    fresh Debian does), it must print them and exit 2 before Qt tries (and aborts). No display is needed: the
    check comes first."""
    missing = pl.missing_libraries()
    if not missing:
        pytest.skip("this machine has every library Qt's xcb plugin needs")
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY")}
    env["DISPLAY"] = ":97"
    p = subprocess.run([sys.executable, "-m", "specscope.profiler.cli", "gui"], env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith("specscope: error: the desktop app cannot open a window")
    assert all(so in p.stderr for so in missing) and "apt-get install" in p.stderr and "Traceback" not in p.stderr


def test_the_quick_check_agrees_with_ldd():
    """The in-process check (the plugin and libxcb-cursor open) says yes exactly where ldd finds nothing missing."""
    plugin = pl.xcb_plugin()
    if plugin is None or not pl.shutil.which("ldd"):
        pytest.skip("no xcb plugin or no ldd on this machine")
    assert pl.plugin_loads(plugin) == (pl.missing_libraries(plugin) == [])
    assert not pl.plugin_loads(plugin, loadable=lambda so: so != "libxcb-cursor.so.0")
