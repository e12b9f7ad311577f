"""Context page: how the speedup, the verify cost, the block split and the acceptance change as the context grows.

From the session's sweep (``session["sweep"]``, figures from ``profiler.analysis.sweep.sweep_figures``), or run now in
the worker (a ``RunConfig`` with ``sweep`` set, as ``specscope sweep --context …`` runs it): the figures are recomputed
as each visit of a context is done, and the page fills in live. The table gives the same figures with the context's own
prefill time."""

from __future__ import annotations

from typing import Any, Mapping, cast

from PySide6 import QtCore, QtWidgets

from specscope.profiler.analysis.intervals import draft_time_text
from specscope.profiler.analysis.sweep import dominant_effect, point_break_even_text
from specscope.profiler.run.config import RunConfig
from specscope.profiler.run.context import parse_contexts
from specscope.profiler.session.measured import ContextSweep, SweepPointFigures
from specscope.profiler.session.records import SessionData

from ..charts.context import ContextChart
from ..charts.records import ContextChartData, ContextSeries
from ..records import Snapshot
from .common import fmt, plain_label, read_only_table
from .measurement_page import MeasurementPage
from ..charts.records import ChartTheme

IDLE_TEXT = "Press “Sweep context”: the protocol at each context (same cases, k and drafter), each context prefilled once."
RUNNING_TEXT = "Sweeping: each context's figures come when its visits are done (the context prefilled first)."
COLUMNS = ["context", "plain\ntok/s", "spec\ntok/s", "T_decode\nms", "T_verify /\nT_decode", "T_draft\nms",
           "full attention\ndecode / verify", "acceptance p\n(95% CI)", "E", "predicted\n(whole round)", "measured\n(95% CI)", "break-even\nT_verify",
           "context\nprefill"]
CATS = (("linear_attention", "linear attention"), ("full_attention", "full attention"), ("moe", "MoE"),
        ("output_head", "output head"), ("other", "other"))


def _size(n: int) -> str:
    return f"{n // 1024}k" if n and n % 1024 == 0 else str(n)


def _ci(v: list[float] | None, i: int) -> float | None:
    return v[i] if isinstance(v, list) and len(v) == 2 else None


def _over_decode(r: SweepPointFigures, ms: float | None) -> float | None:
    dec = r.get("t_decode_ms")
    return ms / dec if ms and dec else None


def chart_data(rows: list[SweepPointFigures]) -> ContextChartData:
    xs = [r["context"] for r in rows]
    split: list[ContextSeries] = []
    for cat, name in CATS:
        ys: list[float | None] = []
        for r in rows:
            b = r.get("blocks_decode") or {}
            tot = sum(v for v in b.values() if isinstance(v, (int, float)))
            ys.append(100 * v / tot if tot and isinstance(v := b.get(cat), (int, float)) else None)
        split.append({"name": name, "y": ys})
    return {
        "speedup": {"contexts": xs, "ref": 1.0, "ref_name": "break-even (1×)", "series": [
            {"name": "predicted (whole round)", "y": [r.get("predicted_speedup") for r in rows]},
            {"name": "measured (95%)", "y": [r.get("measured_speedup") for r in rows], "symbol": "s",
             "lo": [_ci(r.get("measured_speedup_ci95"), 0) for r in rows],
             "hi": [_ci(r.get("measured_speedup_ci95"), 1) for r in rows]}]},
        "verify": {"contexts": xs, "series": [
            {"name": "T_verify(k+1) / T_decode", "y": [r.get("verify_multiple") for r in rows]},
            {"name": "T_draft / T_decode", "y": [_over_decode(r, r.get("t_draft_ms")) for r in rows],
             "negative_note": "< 0: noise"},  # a round less the verify before it: noise can make it negative
            {"name": "break-even T_verify / T_decode", "y": [r.get("break_even_multiple") for r in rows], "symbol": "t"}]},
        "split": {"contexts": xs, "stacked": True, "series": [s for s in split if any(v for v in s["y"])]},
        "acceptance": {"contexts": xs, "series": [
            {"name": "per-token acceptance p (95%, rounds)", "y": [r.get("p") for r in rows],
             "lo": [_ci(r.get("p_ci95"), 0) for r in rows], "hi": [_ci(r.get("p_ci95"), 1) for r in rows]}]},
    }


def _progress_key(data: dict) -> tuple:
    """What the figures of a sweep depend on as it runs: the session's status and each point's visits."""
    points = (data.get("sweep") or {}).get("points") or []
    return data.get("status"), tuple((p.get("context"), p.get("visits"), p.get("complete")) for p in points)


class ContextView(MeasurementPage):
    key = "context_sweep"  # older sessions: the figures the app kept beside a run; a sweep's own session: "sweep"
    what = "context sweep"

    def __init__(self, theme: ChartTheme, config=None, session=None, parent=None):
        super().__init__(config, session, parent)
        self._figures_of: tuple[Any, tuple] = (None, ())  # the session data and progress the figures shown are of
        lay = self.page_layout
        self.contexts = QtWidgets.QLineEdit("0,1k,4k,16k")
        self.contexts.setToolTip("context sizes in tokens (4k = 4,096)")
        self.contexts.setMaximumWidth(160)
        self.add_button_row("Sweep context", "specscope sweep: the protocol at each context, each prefilled once, "
                            "visited in mirrored order", QtWidgets.QLabel("contexts:"), self.contexts)
        self.run_btn = self.start_btn
        self.headline = plain_label(IDLE_TEXT)
        lay.addWidget(self.headline)
        grid = QtWidgets.QGridLayout()
        self.charts = {
            "speedup": ContextChart(theme, "Speedup vs context", ("speedup over plain decoding", "×")),
            "verify": ContextChart(theme, "Verify and draft cost vs context", ("multiple of T_decode", "×")),
            "split": ContextChart(theme, "Decode step by block vs context", ("share of the block sum", "%")),
            "acceptance": ContextChart(theme, "Acceptance vs context", ("per-token acceptance p", "")),
        }
        for i, key in enumerate(("speedup", "verify", "split", "acceptance")):
            grid.addWidget(self.charts[key], i // 2, i % 2)
        lay.addLayout(grid, 3)
        self.table = read_only_table(COLUMNS)
        lay.addWidget(self.table, 1)

    def apply_theme(self, theme: ChartTheme) -> None:
        for c in self.charts.values():
            c.apply_theme(theme)

    def measurement(self, cfg: RunConfig) -> RunConfig:
        """The setup's model, drafter, k, cases, tokens and context document, at each of the page's contexts; the
        rest as ``specscope sweep`` has it by default."""
        return RunConfig(model=cfg.model, demo=cfg.demo, allow_oversize=cfg.allow_oversize, max_tokens=cfg.max_tokens,
                         cases=cfg.cases, draft_model=cfg.draft_model or None, drafter=cfg.drafter or "auto",
                         num_draft_tokens=cfg.num_draft_tokens, context_file=cfg.context_file or None,
                         context_kind=cfg.context_kind, sweep=parse_contexts(self.contexts.text().replace(" ", "")))

    def update_snapshot(self, _snap: Snapshot | None) -> None:
        """A session with a sweep shows it (its figures recomputed from its points as each visit is done)."""
        if not self._session:
            return
        data: Any = self._session() or {}
        stored = data.get(self.key)
        measuring = self._started or (data.get("status") == "running" and self.measures(data))
        if stored is None and data.get("sweep"):
            key = _progress_key(data)
            if data is self._figures_of[0] and key == self._figures_of[1]:
                stored = self._result  # no visit done since the last figures: the same figures
            else:
                from specscope.profiler.session.session import Session
                from specscope.profiler.analysis.sweep import sweep_figures

                self._figures_of = (data, key)
                stored = {"points": sweep_figures(Session(cast(SessionData, data)))}
                if stored == self._result:
                    stored = self._result  # the same figures: nothing to redraw
        self._show_if_new(stored, measuring)

    def measures(self, data) -> bool:
        return bool((data.get("config") or {}).get("sweep"))

    def draw(self, result: ContextSweep | None) -> None:
        rows = (result.get("points") or []) if result else []
        panels: Mapping[str, Any] = chart_data(rows)  # a panel per chart, by the chart's name
        for key, chart in self.charts.items():
            chart.set_data(panels[key])
        self.headline.setText(dominant_effect(rows) or (f"{len(rows)} context(s) in; the next fills in when its visits "
                                                        "are done" if rows else self.idle_text(IDLE_TEXT, RUNNING_TEXT)))
        self.table.setRowCount(len(rows))
        for i, r in enumerate(rows):
            fa = r.get("full_attention_share_decode"), r.get("full_attention_share_verify")
            cells = [_size(r["context"]), fmt(r.get("plain_tok_s"), ".2f"), fmt(r.get("spec_tok_s"), ".2f"),
                     fmt(r.get("t_decode_ms"), ".1f"), fmt(r.get("verify_multiple"), ".2f", "×"),
                     draft_time_text(r.get("t_draft_ms"), r.get("t_draft_ms_ci95"), ".1f"),
                     f"{fmt(fa[0] and 100 * fa[0], '.0f', '%')} / {fmt(fa[1] and 100 * fa[1], '.0f', '%')}",
                     f"{fmt(r.get('p'), '.2f')} ({fmt(_ci(r.get('p_ci95'), 0), '.2f')}–{fmt(_ci(r.get('p_ci95'), 1), '.2f')})",
                     fmt(r.get("tokens_per_round"), ".2f"), fmt(r.get("predicted_speedup"), ".2f", "×"),
                     f"{fmt(r.get('measured_speedup'), '.2f', '×')} ({fmt(_ci(r.get('measured_speedup_ci95'), 0), '.2f')}–"
                     f"{fmt(_ci(r.get('measured_speedup_ci95'), 1), '.2f')})",
                     point_break_even_text(r, "× T_dec"),
                     fmt((ms := r.get("prefill_ms")) and ms / 1000, ".1f", " s") if r["context"] else "—"]
            for j, text in enumerate(cells):
                item = QtWidgets.QTableWidgetItem(text)
                if j:
                    item.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(i, j, item)
