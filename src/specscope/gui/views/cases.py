"""Cases page: a sortable table of cases and side-by-side plain vs speculative output.

Text is inserted as plain text through QTextCursor (never parsed as HTML).
Accepted draft tokens are highlighted and the first divergence is marked.
Per-token text comes from ``plain_pieces`` / ``spec_pieces`` when the session has
them; otherwise tokens are shown by id under the decoded text.
"""

from __future__ import annotations

import unicodedata

from PySide6 import QtCore, QtGui, QtWidgets

from specscope.profiler.analysis.formatting import rate
from specscope.profiler.analysis.round_model import DIVISION_LABEL, RoundModel
from specscope.profiler.analysis.stats import LOW_SAMPLE_DRAFTED
from specscope.profiler.run.suite import CONTENT_CLASS_NAMES

from ..text import breakable
from .common import fmt, plain_label, sortable_table
from .trace_panel import TracePanel
from ..charts.records import ChartTheme

# short header lines: fits 1280 px. "Predicted" is the case's own judged round model (its components, rollback and
# bookkeeping); its error is against the case's full rounds, as the headline's is
COLUMNS = ["Case", "Content", "Acceptance\n(95% CI,\nrounds)", "Drafted\n(tokens)", "Plain\ntok/s", "Spec\ntok/s",
           "Predicted\n(whole\nround)", "Measured\nspeedup", "Error vs\nfull\nrounds", "Output\nmatch", "Status"]
SORT_ROLE = QtCore.Qt.ItemDataRole.UserRole + 1


def is_textless(piece: str) -> bool:
    """A piece that shows nothing: empty (an added or special token), only U+FFFD (a byte fragment of a
    character split across tokens, decoded alone), or only invisible control and format characters (a BEL,
    a zero-width joiner). Spaces, tabs and newlines are text."""
    return not any(ch in "\n\t\r " or (ch != "\ufffd" and unicodedata.category(ch) not in ("Cc", "Cf"))
                   for ch in piece)


def marker(token: int) -> str:
    """What an output pane shows for a token with no text of its own."""
    return f"⟨#{token}⟩"


def token_origins(case: dict) -> list[str]:
    """For each speculative token: 'prefill', 'draft' (accepted draft) or 'verify' (the target's own token)."""
    out = ["prefill"] if case["spec"]["tokens"] else []
    for r in case["spec"]["rounds"]:
        n = len(r["emitted"])
        acc = min(r["accepted"], n)
        out += ["draft"] * acc + ["verify"] * (n - acc)
    return out


def case_prediction_tip(st: dict) -> str:
    """What a case's Predicted, Measured and Error cells are: its own whole round (``RoundModel``'s formula with the
    terms the case timed), the seed's division beside it, and the full rounds the error is judged against."""
    formula = RoundModel(1.0, 1.0, 0.0, 0.0, st.get("components_t_rollback_ms"),
                         st.get("components_t_bookkeeping_ms")).formula  # which terms were timed: the text only
    return "\n".join([
        f"Predicted: the case's own components timed apart, the whole round {formula}: "
        f"{fmt(st.get('predicted_speedup'), '.3f', '×')}",
        f"{DIVISION_LABEL[:1].upper() + DIVISION_LABEL[1:]}: {fmt(st.get('division_speedup'), '.3f', '×')}",
        f"Measured: all rounds {fmt(st.get('measured_speedup'), '.3f', '×')}; full rounds (k drafts, what the error is "
        f"judged against) {fmt(st.get('judged_measured_speedup'), '.3f', '×')}",
    ])


class CasesView(QtWidgets.QWidget):
    def __init__(self, theme: ChartTheme, parent=None):
        super().__init__(parent)
        self.theme = theme
        self._rows: list = []
        self._selected_id: str | None = None
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(8, 8, 8, 8)
        split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        self.model, self.proxy, self.table = sortable_table(self, COLUMNS, SORT_ROLE)
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.setAlternatingRowColors(True)
        hh = self.table.horizontalHeader()
        hh.setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        hh.setStretchLastSection(True)
        self.table.selectionModel().selectionChanged.connect(self._selection_changed)
        split.addWidget(self.table)

        bottom = QtWidgets.QWidget()
        bl = QtWidgets.QVBoxLayout(bottom)
        bl.setContentsMargins(0, 0, 0, 0)
        self.prompt = plain_label("Select a case to compare its plain and speculative output.")
        self.prompt.setObjectName("prompt")
        bl.addWidget(self.prompt)
        self.legend = plain_label("")
        self.legend.setObjectName("muted")
        bl.addWidget(self.legend)
        texts = QtWidgets.QHBoxLayout()
        self.plain_text = self._text_edit()
        self.spec_text = self._text_edit()
        for title, w in (("Plain decoding", self.plain_text), ("Speculative decoding", self.spec_text)):
            col = QtWidgets.QVBoxLayout()
            lab = plain_label(title, wrap=False, selectable=False)
            lab.setObjectName("sectionTitle")
            col.addWidget(lab)
            col.addWidget(w, 1)
            texts.addLayout(col, 1)
        bl.addLayout(texts, 1)
        self.trace = TracePanel(theme)  # A(s) along the selected case, E(k) by content (sessions with traces)
        bl.addWidget(self.trace, 1)
        split.addWidget(bottom)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        lay.addWidget(split)

    @staticmethod
    def _text_edit() -> QtWidgets.QTextEdit:
        w = QtWidgets.QTextEdit()
        w.setReadOnly(True)
        w.setAcceptRichText(False)
        w.setUndoRedoEnabled(False)
        return w

    def apply_theme(self, theme: ChartTheme) -> None:
        self.theme = theme
        self.trace.apply_theme(theme)
        self._show_selected()

    # -- table ---------------------------------------------------------------------
    def update_cases(self, rows: list) -> None:
        self._rows = rows
        sort_col = self.table.horizontalHeader().sortIndicatorSection()
        sort_order = self.table.horizontalHeader().sortIndicatorOrder()
        self.table.setSortingEnabled(False)
        self.model.setRowCount(0)
        for case, st in rows:
            acc = st["acceptance"]
            match = st["match"]
            div = st.get("divergence")
            msort: float
            if match is None:
                mtext, msort = "—", -1
            elif st.get("regime", "greedy") != "greedy":
                mtext, msort = "differs by design (sampled)", -0.5
            elif match["equal"]:
                mtext, msort = "identical", 2
            else:
                fd = match["first_divergence"]
                why = "" if not div else (": ENGINE FAULT" if div["verdict"] == "engine_fault" else ": near-tie")
                mtext, msort = f"{match['match_rate'] * 100:.0f}% (diverges at token {fd}{why})", match["match_rate"]
            cells = [
                (case["id"], case["id"]),
                (CONTENT_CLASS_NAMES.get(case["content_class"], case["content_class"]), case["content_class"]),
                _acceptance_cell(case, acc),
                (f"{acc['rounds']} tree rounds", acc["rounds"]) if _tree(case) else (str(acc["drafted"]), acc["drafted"]),
                (rate(st["plain_tok_s"]), st["plain_tok_s"] or -1.0),
                (rate(st["spec_tok_s"]), st["spec_tok_s"] or -1.0),
                # "*": a term of the case's round was not timed (named in the tooltip), never silently taken as zero
                (fmt(st["predicted_speedup"], ".3f") + ("*" if st.get("predicted_speedup") is not None
                                                         and st.get("prediction_untimed") else ""),
                 st["predicted_speedup"] or -1.0),
                (fmt(st["measured_speedup"], ".3f"), st["measured_speedup"] or -1.0),
                (fmt(st.get("prediction_error") and st["prediction_error"] * 100, "+.1f", "%"),
                 st["prediction_error"] if st.get("prediction_error") is not None else -1e9),
                (mtext, msort),
                (("discarded (--discard-first)" if case.get("discarded") else "done") if case.get("complete") else "partial",
                 (0.5 if case.get("discarded") else 1) if case.get("complete") else 0),
            ]
            items = []
            for i, (text, key) in enumerate(cells):
                it = QtGui.QStandardItem(text)
                it.setData(key, SORT_ROLE)
                it.setData(case["id"], QtCore.Qt.ItemDataRole.UserRole)
                if i >= 2:
                    it.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
                if i in (6, 7, 8):
                    it.setToolTip(case_prediction_tip(st))
                if i == 2 and acc["p"] is not None and not _tree(case):
                    it.setToolTip(f"{acc['drafted']} drafted tokens; greedy/temperature regime as configured"
                                  + (f"; fewer than {LOW_SAMPLE_DRAFTED}: treat as noise" if acc["low_sample"] else ""))
                items.append(it)
            self.model.appendRow(items)
        self.table.setSortingEnabled(True)
        if sort_col >= 0:
            self.table.sortByColumn(sort_col, sort_order)
        # keep the selection on the same case
        target = self._selected_id or (rows[0][0]["id"] if rows else None)
        if target is not None:
            for r in range(self.proxy.rowCount()):
                if self.proxy.index(r, 0).data(QtCore.Qt.ItemDataRole.UserRole) == target:
                    self.table.selectRow(r)
                    break
        self._show_selected()

    def _selection_changed(self, *_):
        idx = self.table.selectionModel().selectedRows()
        if idx:
            self._selected_id = idx[0].data(QtCore.Qt.ItemDataRole.UserRole)
        self._show_selected()

    def select_case(self, case_id: str) -> None:
        self._selected_id = case_id
        self.update_cases(self._rows)

    # -- texts ---------------------------------------------------------------------
    def _show_selected(self) -> None:
        row = next(((c, s) for c, s in self._rows if c["id"] == self._selected_id), None)
        self.trace.set_cases([c for c, _ in self._rows], row[0] if row else None)
        if row is None:
            self.plain_text.clear()
            self.spec_text.clear()
            return
        case, st = row
        self.prompt.setText(f"Prompt ({case['id']}, {CONTENT_CLASS_NAMES.get(case['content_class'], case['content_class'])}): {case['prompt']}")
        match = st["match"]
        fd = match["first_divergence"] if match else None
        if match is None:
            mline = "no speculative output yet"
        elif st.get("regime", "greedy") != "greedy":
            mline = "sampled: the outputs differ by design" + ("" if fd is None else f" (first difference at token {fd} marked red)")
        elif fd is None:
            mline = "outputs identical"
        else:
            div = st.get("divergence")
            why = "" if not div else (", engine fault: clear margin" if div["verdict"] == "engine_fault" else ", near-tie: kernel rounding")
            mline = f"first divergence at token {fd} (marked red{why})"
        textless = any(is_textless(p) for key in ("plain_pieces", "spec_pieces") for p in (case.get(key) or []))
        self.legend.setText(f"Green: accepted draft tokens · plain: the target's own tokens · {mline}"
                            + (" · ⟨#id⟩: a token with no text of its own (an added token or a byte fragment)"
                               if textless else ""))
        origins = token_origins(case)
        self._fill(self.plain_text, case.get("plain_text", ""), case["plain"]["tokens"], case.get("plain_pieces"), None, fd)
        self._fill(self.spec_text, case.get("spec_text", ""), case["spec"]["tokens"], case.get("spec_pieces"), origins, fd)

    def _fill(self, edit: QtWidgets.QTextEdit, text: str, tokens: list, pieces, origins, divergence) -> None:
        dark = self.theme.get("name") == "dark"
        acc_fmt = QtGui.QTextCharFormat()
        acc_fmt.setBackground(QtGui.QColor("#1f4d2b" if dark else "#c8f0d2"))
        div_fmt = QtGui.QTextCharFormat()
        div_fmt.setBackground(QtGui.QColor("#6e1b1b" if dark else "#ffc9c9"))
        div_fmt.setFontUnderline(True)
        muted = QtGui.QTextCharFormat()
        muted.setForeground(QtGui.QColor(self.theme.get("muted", "#6e7781")))
        plain_fmt = QtGui.QTextCharFormat()
        edit.clear()
        cur = edit.textCursor()
        if pieces and len(pieces) == len(tokens):
            for i, piece in enumerate(pieces):
                f = plain_fmt
                if divergence is not None and i == divergence:
                    f = div_fmt
                elif origins and i < len(origins) and origins[i] == "draft":
                    f = acc_fmt
                if is_textless(piece):  # an added token, a byte fragment: its id, marked, instead of nothing
                    m = QtGui.QTextCharFormat(f)
                    m.setForeground(QtGui.QColor(self.theme.get("muted", "#6e7781")))
                    m.setFontItalic(True)
                    cur.insertText(marker(tokens[i]), m)
                else:
                    cur.insertText(breakable(piece, 200), f)
        else:
            empty = "(no text yet)" if not tokens else "(these tokens decode to no text; their ids are below)"
            cur.insertText(breakable(text, 200) or empty, plain_fmt)
            if tokens:
                cur.insertText("\n\nTokens (ids; green = accepted draft, red = first divergence):\n", muted)
                for i, t in enumerate(tokens):
                    f = plain_fmt
                    if divergence is not None and i == divergence:
                        f = div_fmt
                    elif origins and i < len(origins) and origins[i] == "draft":
                        f = acc_fmt
                    cur.insertText(str(t), f)
                    cur.insertText(" ", plain_fmt)
        edit.moveCursor(QtGui.QTextCursor.MoveOperation.Start)


def _tree(case) -> bool:
    """A tree run's case (``--tree-budget``): its rounds carry their tree."""
    return any("tree" in r for r in case["spec"]["rounds"])


def _acceptance_cell(case, acc) -> tuple[str, float]:
    """A chain's per-token acceptance with its interval; a tree's accepted path per round with its interval."""
    if acc["p"] is None:
        return "—", -1.0
    if _tree(case):
        E, iv = acc["tokens_per_round"], acc.get("tokens_per_round_ci95")
        text = f"path {E - 1:.2f}" + (f" ({iv[0] - 1:.1f}–{iv[1] - 1:.1f})" if iv else "")
        return text, E - 1
    return f"{acc['p'] * 100:.1f}% ({acc['p_ci95'][0] * 100:.0f}–{acc['p_ci95'][1] * 100:.0f}%)", acc["p"]
