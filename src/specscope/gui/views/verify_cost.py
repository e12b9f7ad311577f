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
        self.add_button_row("Measure verify cost", "Time whole-graph forwards over 1..N positions, probe the machine, "
                            "and compute the roofline", self.positions)
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
        right = QtWidgets.QVBoxLayout()
        pick = QtWidgets.QHBoxLayout()
        pick.addWidget(plain_label("Blocks at n =", wrap=False, selectable=False))
        self.cat_n = QtWidgets.QComboBox()
        self.cat_n.currentIndexChanged.connect(self._draw_blocks)
        pick.addWidget(self.cat_n)
        pick.addStretch(1)
        right.addLayout(pick)
        right.addWidget(self.cats, 1)
        grid.addWidget(self.curve, 0, 0, 2, 1)
        grid.addLayout(right, 0, 1)
        grid.addWidget(self.experts, 1, 1)
        grid.setColumnStretch(0, 3)
        grid.setColumnStretch(1, 2)
        lay.addLayout(grid, 1)

    def follow_k(self, k: int) -> None:
        """Measure up to the setup's verify (k + 1 positions; a DFlash block of 16), at least the default 9."""
        self.positions.setValue(min(self.positions.maximum(), max(DEFAULT_POSITIONS, k + 1)))

    def apply_theme(self, theme: ChartTheme) -> None:
        for c in (self.curve, self.cats, self.experts):
            c.apply_theme(theme)

    def measurement(self, cfg: RunConfig) -> RooflineConfig:
        """The setup's model, the curve up to the page's n, the headline verify at the setup's k (at most n - 1)."""
        n = self.positions.value()
        return RooflineConfig(model=cfg.model, demo=cfg.demo, allow_oversize=cfg.allow_oversize,
                              positions=n, num_draft_tokens=min(cfg.num_draft_tokens, n - 1))

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
