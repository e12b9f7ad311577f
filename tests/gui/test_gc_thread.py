"""The app collects Python's reference cycles on its own thread only: a cycle freed by an automatic collection on
another thread (the History page's reader) would destroy the Qt objects it holds off the thread that owns them."""

from __future__ import annotations

import gc
import threading


class _Node:
    """One half of a reference cycle that records the thread its collection ran on."""

    where: list[str] = []

    def __del__(self):
        _Node.where.append(threading.current_thread().name)


def _cycle() -> None:
    a, b = _Node(), _Node()
    a.other, b.other = b, a


def _reader(held: list) -> threading.Thread:
    """A thread that allocates past the automatic threshold, as the History reader summarizing a file does; what it
    allocates stays held, so the counts stay past the threshold after it ends."""
    t = threading.Thread(target=lambda: held.extend([] for _ in range(5 * gc.get_threshold()[0])), name="reader")
    t.start()
    t.join()
    return t


def test_cycles_are_collected_on_the_apps_thread_not_a_reader_thread(qapp, qtbot):
    from specscope.gui.app import collect_on_the_gui_thread

    assert gc.isenabled()
    held: list = []
    try:
        # the negative control: automatic collection frees the cycle on the reader thread
        gc.collect()
        _Node.where.clear()
        _cycle()
        _reader(held)
        assert "reader" in _Node.where
        held.clear()
        gc.collect()
        _Node.where.clear()
        collector = collect_on_the_gui_thread(qapp)
        try:
            assert not gc.isenabled()
            _cycle()
            _reader(held)
            assert _Node.where == []  # nothing collected on the reader thread
            qtbot.waitUntil(lambda: len(_Node.where) == 2, timeout=5000)  # the app's timer, on this thread
            assert set(_Node.where) == {threading.main_thread().name}
        finally:
            collector.timer.stop()
    finally:
        gc.enable()
        held.clear()
