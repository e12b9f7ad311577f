"""Verify cost page: the cost of verifying n positions against the two bounds, the roofline per block,
and the MoE expert union — from the session, or measured now in the worker (``RooflineConfig``, as ``specscope roofline``
measures it; the page fills in live)."""

from __future__ import annotations

from typing import Any, Mapping, cast

from PySide6 import QtWidgets

from specscope.profiler.session.measured import Roofline, whole_roofline

from ..charts.cost_data import Roof, block_floor_data, expert_union_data, positions_available, verify_curve_data
from ..chip_text import chip_comparison
from ..charts.verify_cost import BlockFloorChart, ExpertUnionChart, VerifyCurveChart
from ..charts.tree_cost import TreeBlocksChart, TreeCostChart
from ..charts.tree_cost_data import (surface_contexts, surface_of, tree_blocks_data, tree_cost_data,
                                    tree_widths)
from specscope.profiler.run.config import RunConfig
from specscope.profiler.run.measure_config import RooflineConfig

from .common import FittingLabel, Tile, fmt, plain_label, headline_label, spin_box
from .measurement_page import MeasurementPage
from ..charts.records import ChartTheme


DEFAULT_POSITIONS, MAX_POSITIONS = 9, 17  # specscope roofline --positions: default 9, 1..17
IDLE_HEADLINE = "Press “Measure verify cost”: the cost of verifying n positions, beside what the hardware allows."
RUNNING = "Measuring: the curve comes first (whole-graph forwards over 1..n positions), then the machine and the blocks."


def machine_text(roof: Roofline) -> tuple[str, str]:
    bw, peak = roof.get("bandwidth_gbs"), roof.get("peak_tflops")
    nominal = roof.get("nominal_bandwidth_gbs")
    chip = roof.get("chip") or "unknown chip"
    compute = fmt(peak * 1000, '.1f', ' GFLOP/s') if peak is not None and peak < 0.1 else fmt(peak, '.2f', ' TFLOP/s')
    text = f"{fmt(bw, '.1f', ' GB/s')} · {compute} measured"
    return text, f"{chip}; nominal {fmt(nominal, '.0f', ' GB/s')}" if nominal else f"{chip}; no nominal figures for it"


class VerifyCostView(MeasurementPage):
    """``config`` returns the setup panel's RunConfig (which model to measure); ``session`` the current
    session's data, whose "roofline" the page shows (a finished measurement is stored there)."""

    key = "roofline"
    measure = "roofline"
    what = "verify cost measurement"

    def __init__(self, theme: ChartTheme, config=None, session=None, parent=None):
        super().__init__(config, session, parent)
        lay = self.page_layout

        self.positions = spin_box(2, MAX_POSITIONS, DEFAULT_POSITIONS, "up to n = ")
        self.with_trees = QtWidgets.QCheckBox("with trees")
        self.with_trees.setToolTip("Also measure the cost surface: trees of 2, 4, 8 and 16 nodes (best-first, wide, "
                                   "deep) beside chains, at the prompt and 1k tokens more (specscope roofline --tree)")
        self.add_button_row("Measure verify cost", "Time whole-graph forwards over 1..N positions, probe the machine, "
                            "and compute the roofline", self.positions, self.with_trees)
        self.measure_btn = self.start_btn

        self.headline = headline_label(IDLE_HEADLINE)
        self.headline.setObjectName("headline")
        lay.addWidget(self.headline)

        tiles = QtWidgets.QHBoxLayout()
        self.t_ideal = Tile("Ideal verify (each weight read once)")
        self.t_floor = Tile("Speedup a batched verify could buy")
        self.t_machine = Tile("Machine")
        for t in (self.t_ideal, self.t_floor, self.t_machine):
            tiles.addWidget(t)
        lay.addLayout(tiles)

        # the public wide-verify figures for the session's chip, beside this machine's curve (engine_adapter.chip_facts)
        self.chip_facts = FittingLabel("", 4)
        self.chip_facts.setObjectName("chip_facts")
        lay.addWidget(self.chip_facts)

        grid = QtWidgets.QGridLayout()
        self.curve = VerifyCurveChart(theme)
        self.cats = BlockFloorChart(theme)
        self.experts = ExpertUnionChart(theme)
        # the cost surface (roofline --tree): chains and trees by width, and per block at one width, each on a tab
        # beside the chain's chart it extends (one page height: the window's least size is its tallest page's)
        self.tree_curve = TreeCostChart(theme)
        self.tree_blocks = TreeBlocksChart(theme)
        pickers = QtWidgets.QWidget()  # the tree tabs' context and width, in the tab bar's corner
        tpick = QtWidgets.QHBoxLayout(pickers)
        tpick.setContentsMargins(0, 0, 4, 0)
        tpick.addWidget(plain_label("context", wrap=False, selectable=False))
        self.tree_context = QtWidgets.QComboBox()
        self.tree_context.currentIndexChanged.connect(self._draw_trees)
        tpick.addWidget(self.tree_context)
        tpick.addWidget(plain_label("width", wrap=False, selectable=False))
        self.tree_width = QtWidgets.QComboBox()
        self.tree_width.currentIndexChanged.connect(self._draw_trees)
        tpick.addWidget(self.tree_width)
        self.left_tabs = QtWidgets.QTabWidget()
        self.left_tabs.addTab(self.curve, "Chain")
        self.left_tabs.addTab(self.tree_curve, "Trees")
        self.left_tabs.addTab(self.tree_blocks, "Trees per block")
        self.left_tabs.setCornerWidget(pickers)
        right = QtWidgets.QVBoxLayout()
        pick = QtWidgets.QHBoxLayout()
        pick.addWidget(plain_label("Blocks at n =", wrap=False, selectable=False))
        self.cat_n = QtWidgets.QComboBox()
        self.cat_n.currentIndexChanged.connect(self._draw_blocks)
        pick.addWidget(self.cat_n)
        pick.addStretch(1)
        right.addLayout(pick)
        right.addWidget(self.cats, 1)
        grid.addWidget(self.left_tabs, 0, 0, 2, 1)
        grid.addLayout(right, 0, 1)
        grid.addWidget(self.experts, 1, 1)
        grid.setColumnStretch(0, 3)
        grid.setColumnStretch(1, 2)
        lay.addLayout(grid, 1)
        self._had_surface = False

    def follow_k(self, k: int) -> None:
        """Measure up to the setup's verify (k + 1 positions; a DFlash block of 16), at least the default 9."""
        self.positions.setValue(min(self.positions.maximum(), max(DEFAULT_POSITIONS, k + 1)))

    def apply_theme(self, theme: ChartTheme) -> None:
        for c in (self.curve, self.cats, self.experts, self.tree_curve, self.tree_blocks):
            c.apply_theme(theme)

    def measurement(self, cfg: RunConfig) -> RooflineConfig:
        """The setup's model, the curve up to the page's n, the headline verify at the setup's k (at most n - 1)."""
        n = self.positions.value()
        return RooflineConfig(model=cfg.model, demo=cfg.demo, allow_oversize=cfg.allow_oversize,
                              positions=n, num_draft_tokens=min(cfg.num_draft_tokens, n - 1),
                              tree_budgets=[2, 4, 8, 16] if self.with_trees.isChecked() else None)

    def set_roofline(self, roof: Roof | None) -> None:
        self._show(roof)

    def draw(self, roof: Roof | None) -> None:
        self.curve.set_data(verify_curve_data(roof))
        self.experts.set_data(expert_union_data(roof))
        ns = positions_available(roof)
        cur = self.cat_n.currentData()
        self.cat_n.blockSignals(True)
        self.cat_n.clear()
        for n in ns:
            self.cat_n.addItem(str(n), n)
        whole = whole_roofline(roof)  # the curve so far while it measures: no headline, floor or machine yet
        if ns:
            verify = ((whole.get("k") if whole else None) or 2) + 1  # the run's own verify (3 positions for k = 2, 16 for DFlash's 15)
            want = cur if cur in ns else (verify if verify in ns else ns[-1])
            self.cat_n.setCurrentIndex(ns.index(want))
        self.cat_n.blockSignals(False)
        self._draw_blocks()
        self._fill_trees(roof)
        self._show_trees(roof)
        self._draw_chip_facts(roof)
        self.headline.setText((whole.get("headline") if whole else None) or ("measuring…" if roof else self.idle_text(IDLE_HEADLINE, RUNNING)))
        head = next((p for p in (whole.get("curve") or []) if p.get("positions") == (whole.get("k") or 0) + 1), None) if whole else None
        floor = (head["floor_ms"] / whole["t_decode_ms"] if whole and head and head.get("floor_ms") and whole.get("t_decode_ms")
                 else None)
        self.t_ideal.set(fmt(whole.get("ideal_verify_multiple") if whole else None, ".2f", " plain steps"),
                         f"n = {head['positions']}, at the decode step's own efficiency; the roofline floor is "
                         f"{fmt(floor, '.2f')} steps" if head else "")
        sp = whole.get("speedup_at_floor") if whole else None
        self.t_floor.set(fmt(sp, ".2f", "×"), "the whole round at the floor, at the measured acceptance")
        if whole and whole.get("bandwidth_gbs") is not None:
            self.t_machine.set(*machine_text(whole))
        else:
            self.t_machine.set("—", "")

    def update_snapshot(self, snap) -> None:
        super().update_snapshot(snap)
        self._draw_chip_facts(self._result)  # another session's chip, with or without a roofline of its own

    def _draw_chip_facts(self, roof: Roof | None) -> None:
        data = (self._session() or {}) if self._session else {}
        cmp = chip_comparison(data.get("environment"), cast(Mapping[str, Any], roof))
        self.chip_facts.setText("\n".join([cmp["head"], *("• " + line for line in cmp["lines"])]))
        self.chip_facts.setToolTip(cmp["full"])

    def _draw_blocks(self, *_):
        n = self.cat_n.currentData()
        self.cats.set_data(block_floor_data(self._result, n) if n else None)

    def _fill_trees(self, roof: Roof | None) -> None:
        """The tree charts' pickers from the roofline's surface (kept where the new one has the same choice)."""
        surface = surface_of(roof)
        for box, values, first in ((self.tree_context, surface_contexts(roof), None),
                                   (self.tree_width, tree_widths(roof), surface["width"] if surface else None)):
            cur = box.currentData()
            box.blockSignals(True)
            box.clear()
            for v in values:
                box.addItem(f"{v:,}", v)
            if values:
                want = cur if cur in values else (first if first in values else values[0])
                box.setCurrentIndex(values.index(want))
            box.blockSignals(False)
        self._draw_trees()

    def _show_trees(self, roof: Roof | None) -> None:
        """A roofline with a surface opens the tree tabs (once: the user's choice of tab is kept after)."""
        has = surface_of(roof) is not None
        if has and not self._had_surface:
            self.left_tabs.setCurrentIndex(1)
        self._had_surface = has

    def _draw_trees(self, *_):
        ctx, w = self.tree_context.currentData(), self.tree_width.currentData()
        self.tree_curve.set_data(tree_cost_data(self._result, ctx))
        self.tree_blocks.set_data(tree_blocks_data(self._result, ctx, w))
