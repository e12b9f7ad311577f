"""Checks page: what ``specscope check``, ``specscope capture`` and ``specscope bench`` found, read from the session
they kept (``check -o FILE``, ``capture --session FILE`` or the app's Capture GPU trace action, ``bench WHAT -o
FILE``). Read-only: the commands measure, this page shows their typed records (``SessionData.check``,
``SessionData.capture``, ``SessionData.benchmarks``; a benchmark's line as the CLI prints it)."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from PySide6 import QtGui, QtWidgets

from specscope.profiler.analysis.bench_text import bench_headline, bench_line
from specscope.profiler.session.bench_record import benchmarks_of
from specscope.profiler.session.records import CaptureResult, CheckResult

from ..charts.records import ChartTheme
from .common import headline_label, plain_label

IDLE_TEXT = ("No check or GPU capture in this session, nor a benchmark. `specscope check MODEL -o FILE`, `specscope "
             "capture … --session FILE` and `specscope bench WHAT -o FILE` keep theirs; open that file here (File → Open "
             "session…).")


def check_headline(check: CheckResult) -> str:
    what = "the engine's acceptance rule" if check["what"] == "engine" else "the model"
    return f"Check of {what}: " + ("passed" if check["ok"] else "refused" if check["what"] == "model" else "differs")


def capture_text(capture: CaptureResult) -> str:
    """What was captured and where, as ``specscope capture`` says it."""
    d: Mapping[str, Any] = capture["description"]
    prompt = d.get("prompt") or {}
    lines = [f"{d.get('model')} on {(d.get('environment') or {}).get('device', '?')}: k = {d.get('k')}, at position "
             f"{d.get('prompt_tokens')} (after the prompt {prompt.get('id') or ''})".rstrip(),
             f"folder: {capture['out_dir']}"]
    for c in d.get("captures") or []:
        lines.append(f"  {c.get('file')}: {c.get('name')}, {c.get('positions')} position(s) from {c.get('start_position')}")
    lines.append("Open a .gputrace in Xcode (double-click it); compare per-kernel times between the two.")
    return "\n".join(lines)


def bench_text(data: Mapping[str, Any]) -> str:
    """Each benchmark's line as ``specscope bench`` prints it, in run order; a stopped session says so under them."""
    results = benchmarks_of(data)
    lines = [bench_line(r) for r in results]
    if data.get("status") not in (None, "complete"):
        lines.append(f"({data.get('status')}: {'; '.join(data.get('errors', [])[-1:]) or 'no reason given'}; "
                     f"{'no benchmark was' if not results else 'the benchmarks above were'} measured before it)")
    return "\n".join(lines)


def _text_box() -> QtWidgets.QPlainTextEdit:
    box = QtWidgets.QPlainTextEdit()
    box.setReadOnly(True)
    box.setLineWrapMode(QtWidgets.QPlainTextEdit.LineWrapMode.WidgetWidth)
    box.setFont(QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont))
    return box


class ChecksView(QtWidgets.QWidget):
    def __init__(self, theme: ChartTheme, session: Callable[[], Mapping[str, Any]], parent=None):
        super().__init__(parent)
        self._session = session
        self._shown: tuple[Any, Any, Any] = (None, None, None)
        lay = QtWidgets.QVBoxLayout(self)
        self.headline = headline_label(IDLE_TEXT)
        lay.addWidget(self.headline)
        self.check_title = plain_label("")
        self.check_text = _text_box()
        self.capture_title = plain_label("")
        self.capture_text = _text_box()
        self.bench_title = plain_label("")
        self.bench_text = _text_box()
        self.bench_text.setLineWrapMode(QtWidgets.QPlainTextEdit.LineWrapMode.NoWrap)  # a benchmark a line, as printed
        for w in (self.check_title, self.check_text, self.capture_title, self.capture_text, self.bench_title,
                  self.bench_text):
            lay.addWidget(w, 1 if isinstance(w, QtWidgets.QPlainTextEdit) else 0)
        self._show(None, None, None)

    def apply_theme(self, theme: ChartTheme) -> None:  # text only: the palette is the application's
        pass

    def update_snapshot(self, _snap: dict) -> None:
        data = self._session() or {}
        # a benchmark's session, also one stopped before its first result
        results = benchmarks_of(data)
        # what the page shows of a benchmark's session (one stopped before its first result too), copied: the
        # session's data changes in place
        bench = ({"status": data.get("status"), "errors": list(data.get("errors", [])[-1:]), "benchmarks": results}
                 if results or data.get("measure") == "bench" else None)
        check, capture = data.get("check"), data.get("capture")
        if (check, capture, bench) != self._shown:
            self._show(check, capture, bench)

    def _show(self, check: CheckResult | None, capture: CaptureResult | None,
              bench: Mapping[str, Any] | None) -> None:
        self._shown = (check, capture, bench)
        heads = (([check_headline(check)] if check else []) + (["GPU traces captured"] if capture else [])
                 + ([bench_headline(bench)] if bench else []))
        self.headline.setText("; ".join(heads) if heads else IDLE_TEXT)
        self.check_title.setText("specscope check" if check else "")
        self.check_text.setPlainText(check["text"] if check else "")
        self.capture_title.setText("specscope capture" if capture else "")
        self.capture_text.setPlainText(capture_text(capture) if capture else "")
        self.bench_title.setText("specscope bench" if bench else "")
        self.bench_text.setPlainText(bench_text(bench) if bench else "")
        for w, on in ((self.check_title, check), (self.check_text, check), (self.capture_title, capture),
                      (self.capture_text, capture), (self.bench_title, bench), (self.bench_text, bench)):
            w.setVisible(bool(on))
