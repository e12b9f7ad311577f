"""Breakdown page: per-block decode vs verify, the two rulers side by side, barrier distortion; for a
distributed run, compute vs communication of each rank (a second chart and lines under the table)."""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from specscope.profiler.analysis.formatting import scaled
from specscope.profiler.analysis.intervals import BIAS, noise_state, not_a_time, spread_text, time_text

from ..charts import BreakdownChart
from specscope.profiler.session.records import BreakdownAggregate

from ..charts.breakdown import RankChart, rank_data
from ..charts.records import RankData
from ..records import Snapshot
from .common import fmt, plain_label, read_only_table
from ..charts.records import ChartTheme

NARROW = 1000  # below this page width (a 1280-px window) the table and notes go under the chart
CHART_MIN = 560  # and whenever the chart would get less than this beside the table
NO_BREAKDOWN_YET = "No breakdown yet: it is measured after each case's plain run (Breakdown option)."
NOTES_MIN = 320  # narrow: the notes go beside the table only with this much room, else under it
COLUMNS = ["Block", "Decode\n(ms)", "Verify\n(ms)", "Verify ÷\ndecode", "Decode skip\nest. (ms)", "Verify skip\nest. (ms)"]
RANK_COLUMNS = ["Rank", "Decode\ncompute", "Decode\ncomm.", "Verify\ncompute", "Verify\ncomm.", "Compute\nverify ÷ decode",
                "Comm.\nverify ÷ decode"]


def _time_cell(cell) -> str:
    """A time with its spread over reps; an estimate (skip, inter-block) whose spread reaches zero is "below noise"."""
    if cell is None:
        return ""
    value, iv, estimate = cell
    if estimate and iv and noise_state(value, iv) == BIAS:  # short in the table ("ruler bias" is in the notes)
        return f"bias {value:.2f} ({iv[0]:.1f}…{iv[1]:.1f})"
    text = time_text(value, iv) if estimate else fmt(value, ".2f")
    if iv and text != "—" and not (estimate and not_a_time(value, iv)):
        text += f" ({spread_text(iv, '.1f')})"
    return text


class BreakdownView(QtWidgets.QWidget):
    def __init__(self, theme: ChartTheme, parent=None):
        super().__init__(parent)
        lay = QtWidgets.QBoxLayout(QtWidgets.QBoxLayout.Direction.LeftToRight, self)
        lay.setContentsMargins(8, 8, 8, 8)
        self._outer = lay
        self.chart = BreakdownChart(theme)
        self.rank_chart = RankChart(theme)  # distributed runs only
        self.rank_chart.hide()
        charts = QtWidgets.QBoxLayout(QtWidgets.QBoxLayout.Direction.TopToBottom)
        charts.setContentsMargins(0, 0, 0, 0)
        charts.addWidget(self.chart, 3)
        charts.addWidget(self.rank_chart, 2)
        self._charts = charts
        lay.addLayout(charts, 2)
        side = QtWidgets.QBoxLayout(QtWidgets.QBoxLayout.Direction.TopToBottom)
        self._side = side
        tablebox = QtWidgets.QVBoxLayout()
        tablebox.setContentsMargins(0, 0, 0, 0)
        self.table = read_only_table(COLUMNS)
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.NoSelection)
        self.table.horizontalHeader().setStretchLastSection(False)  # sized to its content: see _fit_table
        self.table.setToolTip("median over cases, with the spread over reps in brackets; skip est.: the block's cost "
                              "estimated without barriers (whole graph minus the graph with that block skipped). "
                              "An estimate whose spread reaches zero is below noise, never a negative time.")
        self.table.setWordWrap(False)
        self.table.setVerticalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 10)
        tablebox.addWidget(plain_label("Per block (median over cases)"))
        tablebox.addWidget(self.table, 0)
        # distributed runs: one row per rank (hidden otherwise)
        self.rank_title = plain_label("Per rank: compute + communication (median over cases)")
        self.rank_table = read_only_table(RANK_COLUMNS)
        self.rank_table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.NoSelection)
        self.rank_table.setWordWrap(False)
        self.rank_table.setVerticalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.rank_table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 10)
        self.rank_table.setToolTip("compute: the forward with local stand-ins for the collectives (no communication); "
                                   "communication: whole graph − compute (the barrier-free estimate). Hover a "
                                   "communication cell for the barrier-timed figure: waiting for the slowest rank + transfer.")
        for w in (self.rank_title, self.rank_table):
            w.hide()
            tablebox.addWidget(w, 0)
        tablebox.addStretch(1)
        side.addLayout(tablebox, 0)
        self.rulers = plain_label(NO_BREAKDOWN_YET)
        self.rulers.setObjectName("rulers")
        self.rulers.setAlignment(QtCore.Qt.AlignmentFlag.AlignTop)
        # the notes scroll rather than being cut off when the page is short or they sit in a narrow column
        self.notes = QtWidgets.QScrollArea()
        self.notes.setWidgetResizable(True)
        self.notes.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        self.notes.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.notes.setWidget(self.rulers)
        self.notes.setMinimumHeight(6 * self.rulers.fontMetrics().lineSpacing())
        side.addWidget(self.notes, 1)
        side_box = QtWidgets.QWidget()
        side_box.setLayout(side)
        side.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(side_box, 1)
        self._narrow: tuple | None = None  # (narrow, notes beside the table)

    def _too_narrow(self) -> bool:
        """Side by side only while the chart keeps CHART_MIN pixels beside the table (spreads widen the table)."""
        return self.width() < max(NARROW, self.table.width() + CHART_MIN)

    def resizeEvent(self, e) -> None:  # noqa: N802 (Qt naming)
        super().resizeEvent(e)
        self._fit_table()  # the decision reads the table's width: its columns' width, not the width it had before
        self._arrange(self._too_narrow())

    def _arrange(self, narrow: bool) -> None:
        """Wide: chart | table over notes. Narrow: chart over (table | notes), so the bars' labels keep their room;
        when the table (wide with its spreads) leaves the notes less than NOTES_MIN beside it, chart over table
        over notes."""
        beside = narrow and self.width() - self.table.width() >= NOTES_MIN
        if (narrow, beside) == self._narrow:
            return
        self._narrow = (narrow, beside)
        D = QtWidgets.QBoxLayout.Direction
        self._outer.setDirection(D.TopToBottom if narrow else D.LeftToRight)
        self._outer.setStretch(0, 1 if narrow else 2)  # wide: the chart gets two thirds, the table what it needs
        self._outer.setStretch(1, 0 if narrow else 1)
        self._side.setDirection(D.LeftToRight if beside else D.TopToBottom)
        # the per-rank chart: beside the breakdown chart when they share the top of a narrow page, else under it
        self._charts.setDirection(D.LeftToRight if narrow else D.TopToBottom)
        self._side.setSpacing(16 if narrow else 6)
        self._fit_table()

    def _fit_table(self) -> None:
        """The whole table stays visible (no horizontal scrolling), and no wider than its columns."""
        width = self.table.horizontalHeader().length() + 2 * self.table.frameWidth()
        self.table.setFixedWidth(width)

    def apply_theme(self, theme: ChartTheme) -> None:
        self.chart.apply_theme(theme)
        self.rank_chart.apply_theme(theme)

    def update_snapshot(self, snap: Snapshot) -> None:
        d = snap["breakdown"]
        self.chart.set_data(d)
        ranks = rank_data(snap["summary"]["breakdown"]) if d else None
        for w in (self.rank_chart, self.rank_title, self.rank_table):
            w.setVisible(ranks is not None)
        self.rank_chart.set_data(ranks)
        self._fill_ranks(ranks)
        if not d:
            self.table.setRowCount(0)
            if snap["config"].get("breakdown") is False:  # it never will be: say so, not "yet"
                self.rulers.setText("This session was recorded without the breakdown (--no-breakdown, or the "
                                    "Per-block breakdown option off): run again with it to see where verify time goes.")
                self.chart.show_empty("recorded without the breakdown")
            else:
                self.rulers.setText(NO_BREAKDOWN_YET)
            return
        dec, ver = d["decode"], d["verify"]
        sd, sv = dec.get("spread") or {}, ver.get("spread") or {}

        def at(xs, i):
            return xs[i] if xs and i < len(xs) else None

        # (label, then per column: (value, spread, estimated?)); the ratio column is a plain number
        rows: list[tuple] = []
        for i, label in enumerate(d["labels"]):
            rows.append((label, (dec["blocks"][i], at(sd.get("blocks"), i), False), (ver["blocks"][i], at(sv.get("blocks"), i), False),
                         d["ratios"][i], (dec["skip_estimates"][i], at(sd.get("skip_estimates"), i), True),
                         (ver["skip_estimates"][i], at(sv.get("skip_estimates"), i), True)))
        rows.append((d["inter_block_label"], (dec["inter_block_ms"], sd.get("inter_block_ms"), True),
                     (ver["inter_block_ms"], sv.get("inter_block_ms"), True), d["ratio_inter_block"], None, None))
        rows.append(("Whole graph", (dec["whole_ms"], sd.get("whole_ms"), False), (ver["whole_ms"], sv.get("whole_ms"), False),
                     d["ratio_whole"], None, None))
        self.table.setRowCount(len(rows))
        self.table.setFixedHeight(self.table.horizontalHeader().sizeHint().height()
                                  + sum(self.table.rowHeight(i) for i in range(len(rows))) + 2 * self.table.frameWidth()
                                  + (self.table.horizontalScrollBar().sizeHint().height() if self.table.horizontalScrollBar().isVisible() else 0))
        for r, row in enumerate(rows):
            for c, v in enumerate(row):
                if c == 0:
                    text = v
                elif c == 3:
                    text = fmt(v, ".2f", "×")
                else:
                    text = _time_cell(v)
                it = QtWidgets.QTableWidgetItem(text)
                if c:
                    it.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(r, c, it)
        self._fit_table()
        self._arrange(self._too_narrow())
        k1 = ver["positions"]
        lines = [
            "Two rulers",
            f"  decode: sum of blocks {dec['block_sum_ms']:.2f} ms vs whole graph {dec['whole_ms']:.2f} ms "
            f"→ inter-block overhead {time_text(dec['inter_block_ms'], sd.get('inter_block_ms'), unit=' ms')}",
            f"  verify ({k1} positions): sum of blocks {ver['block_sum_ms']:.2f} ms vs whole graph {ver['whole_ms']:.2f} ms "
            f"→ inter-block overhead {time_text(ver['inter_block_ms'], sv.get('inter_block_ms'), unit=' ms')}",
            "  Brackets: spread over reps. An estimate whose spread straddles zero is below noise; one wholly below zero",
            "  is a ruler bias (the barriers cost more than the gap between blocks), a measured effect, not noise.",
            "  Predictions use the whole-graph ruler only.",
            "",
            "Barrier distortion (timing each block with a barrier vs none)",
            f"  decode: instrumented {dec['instrumented_ms']:.2f} ms vs {dec['whole_ms']:.2f} ms "
            f"({fmt(scaled(dec['barrier_distortion'], 100), '+.1f', '%')})",
            f"  verify: instrumented {ver['instrumented_ms']:.2f} ms vs {ver['whole_ms']:.2f} ms "
            f"({fmt(scaled(ver['barrier_distortion'], 100), '+.1f', '%')})",
            "",
            f"A ratio near 1 means weights were read once for all {k1} positions; near {k1} means the work was repeated.",
        ]
        if ranks:
            bd = snap["summary"]["breakdown"]
            lines += ["", *rank_notes(ranks, bd)] if bd else []
        self.rulers.setText("\n".join(lines))

    def _fill_ranks(self, r: RankData | None) -> None:
        t = self.rank_table
        if not r:
            t.setRowCount(0)
            return
        hosts = r.get("hosts") or []
        t.setRowCount(r["ranks"])
        for i in range(r["ranks"]):
            host = hosts[i] if i < len(hosts) else ""
            cells: list[tuple[str, str | None]] = [(f"{i}" + (f" ({host})" if host else ""), None)]
            for sd in (r["decode"], r["verify"]):
                wait, transfer, barrier = sd["wait_ms"][i], sd["transfer_ms"][i], sd["communication_barrier_ms"][i]
                tip = (f"barrier-timed: {barrier:.1f} ms = {wait:.1f} ms waiting for the slowest rank + {transfer:.1f} ms transfer"
                       if None not in (wait, transfer, barrier) else None)
                cells += [(_ms(sd["compute_ms"][i]), None), (_ms(sd["communication_ms"][i]), tip)]
            cells += [(fmt(r["ratio"]["compute_ms"][i], ".2f", "×"), None), (fmt(r["ratio"]["communication_ms"][i], ".2f", "×"), None)]
            for c, (text, tip) in enumerate(cells):
                it = QtWidgets.QTableWidgetItem(text)
                if c:
                    it.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
                if tip:
                    it.setToolTip(tip)
                t.setItem(i, c, it)
        t.setFixedHeight(t.horizontalHeader().sizeHint().height() + sum(t.rowHeight(i) for i in range(r["ranks"]))
                         + 2 * t.frameWidth())
        t.setFixedWidth(t.horizontalHeader().length() + 2 * t.frameWidth())


def _ms(x) -> str:
    """A per-rank time; a communication estimate at or under zero is below noise, never a negative time."""
    return "below noise" if x is not None and x <= 0 else fmt(x, ".1f", " ms")


def rank_notes(r: RankData, bd: BreakdownAggregate) -> list[str]:
    """Two lines under the notes: what the per-rank figures are, and what communication does to the ratio."""
    dist = bd.get("distributed") or {}
    share = bd["decode"].get("communication_share")
    sh = share["barrier_free"] if share else None
    rm = (r["ratio"]["communication_ms"] or [None])[0]
    return [
        f"Distributed: {r['ranks']} ranks ({dist.get('backend', '?')}, {dist.get('parallelism', 'tensor')} parallel, "
        f"{dist.get('collectives_per_forward') or 'collectives'} per forward).",
        f"Communication is {'below noise' if sh is not None and sh <= 0 else fmt(sh and sh * 100, '.0f', '%')} of a decode "
        f"step (barrier-free) and grows ×{fmt(rm, '.2f')} for {r['verify']['positions']} positions: the larger its share, "
        "the closer the whole verify ÷ decode ratio falls toward it.",
    ]
