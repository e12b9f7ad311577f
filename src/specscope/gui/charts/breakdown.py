"""Where verify time goes: stacked per-block bars for decode (1 position) and verify (k+1),
each beside the whole-graph time (the two rulers), with verify/decode ratios printed."""

from __future__ import annotations


import pyqtgraph as pg

from specscope.profiler.analysis.intervals import time_text
from specscope.profiler.session.records import BreakdownAggregate

from .common import BaseChart
from .records import RankData, RankSide


class BreakdownChart(BaseChart):
    title = "Where the time goes: decode vs verify"
    x_label = ("", "")
    y_label = ("time per forward pass", "ms")
    legend_cols = 2
    empty_text = "no breakdown measured yet"

    def build(self):
        self._drawn_height = 0
        self.plot_item.getAxis("bottom").setHeight(36)

    def resizeEvent(self, e) -> None:  # noqa: N802 (Qt naming)
        """Ratio labels are kept apart in pixels: redraw when the plot's height has changed by much."""
        super().resizeEvent(e)
        data = self.__dict__.get("_drawn")  # None while the widget is being built
        vb = getattr(self.__dict__.get("plot_item"), "vb", None)
        if isinstance(data, dict) and vb is not None and abs(vb.height() - self.__dict__.get("_drawn_height", 0)) > 20:
            self._drawn = None
            self.set_data(data)

    def _headroom(self, d: dict) -> float:
        """The y range over the tallest bar: room above the bars for the legend (its rows) and the labels."""
        rows = -(-(len(d["block_order"]) + 1) // self.legend_cols)
        plot_h = max(self.plot_item.vb.height(), 150.0)
        legend_px = 10 + 21 * rows + 30  # the legend, and the bars' top labels above them
        return max(1.5, 1.0 / max(1.0 - legend_px / plot_h, 0.35))

    def _draw(self, d: dict | None) -> None:
        if not self._redraw(d):
            self.plot_item.getAxis("bottom").setTicks([[]])
            return
        cats, colors = d["block_order"], self.theme["cats"]
        groups = [("decode", 0.0), ("verify", 2.8)]
        ticks = []
        # data units per pixel once the y range is set below (0 .. 1.5 × the tallest bar): keeps ratio labels apart
        tallest = max(max(d[side]["block_sum_ms"] or 0.0, d[side]["whole_ms"] or 0.0) for side, _ in groups)
        headroom = self._headroom(d)
        self._drawn_height = self.plot_item.vb.height()
        per_px = (tallest * headroom or 1.0) / max(self.plot_item.vb.height(), 150.0)
        label_y = -1e9
        top = 0.0
        for gi, (side, x0) in enumerate(groups):
            sd = d[side]
            y0 = 0.0
            for i, (c, v) in enumerate(zip(cats, sd["blocks"])):
                v = max(v or 0.0, 0.0)
                bar = pg.BarGraphItem(x=[x0], y0=[y0], height=[v], width=0.8, brush=colors[i % len(colors)],
                                      pen=pg.mkPen(self.theme["bg"], width=1))
                self._add(bar, d["labels"][i] if gi == 0 else None)
                if side == "verify" and d["ratios"][i] is not None:
                    label_y = max(y0 + v / 2, label_y + 15 * per_px)  # thin segments: labels stack, never overlap
                    self._text(f"×{d['ratios'][i]:.2f}", x0 - 0.42, label_y, anchor=(1, 0.5), pt=9, bold=True)
                y0 += v
            whole = sd["whole_ms"] or 0.0
            wb = pg.BarGraphItem(x=[x0 + 1.0], y0=[0], height=[whole], width=0.8, brush=self.theme["whole"],
                                 pen=pg.mkPen(self.theme["bg"], width=1))
            self._add(wb, "whole graph (no barriers)" if gi == 0 else None)
            gap = sd["inter_block_ms"]
            self._text(f"{sd['block_sum_ms']:.1f} ms", x0, y0, anchor=(0.5, 1))
            self._text(f"{whole:.1f} ms", x0 + 1.0, whole, anchor=(0.5, 1))
            if gap is not None:  # never a negative time: an overhead whose spread reaches zero is below noise
                gap_text = time_text(gap, (sd.get("spread") or {}).get("inter_block_ms"), ".1f", " ms")
                self._text(f"inter-block overhead {gap_text}", x0 + 0.5, max(y0, whole), anchor=(0.5, 2.1),
                           color=self.theme["muted"])
            if side == "verify" and d.get("ratio_whole"):
                self._text(f"×{d['ratio_whole']:.2f}", x0 + 1.0, whole / 2, anchor=(0.5, 0.5), color="#ffffff", bold=True)
            pos = sd["positions"]
            name = f"{side} ({pos} pos.)"
            ticks += [(x0, f"{name}\nsum of blocks"), (x0 + 1.0, f"{name}\nwhole graph")]
            top = max(top, y0, whole)
        self.plot_item.getAxis("bottom").setTicks([ticks])
        self.plot_item.setXRange(-0.6, 4.4, padding=0)
        self.plot_item.setYRange(0, top * headroom if top else 1, padding=0)


def rank_data(bd: BreakdownAggregate | None) -> RankData | None:
    """Per rank, for decode and verify: compute (whole graph − communication) and communication (the barrier-free
    estimate where there is one; the barrier-timed figure beside it, split into waiting for the slowest rank and
    transfer), medians over cases; None unless the breakdown is from a distributed run with per-rank figures."""
    dist = bd.get("distributed") if bd else None
    if not bd or not dist:
        return None
    sides: list[RankSide] = []
    ranks, ruler = 0, "barrier"
    for phase in (bd["decode"], bd["verify"]):
        pr = phase.get("per_rank")
        if not pr:
            return None
        split = pr.get("communication_split") or {}
        cs = phase.get("communication_share")
        sides.append({
            "positions": phase["positions"],
            "whole_ms": list(pr["whole_ms"]),
            "compute_ms": list(pr["compute_ms"]),
            "communication_ms": list(pr["communication_ms"]),
            "communication_barrier_ms": list(pr.get("communication_barrier_ms") or pr["communication_ms"]),
            "wait_ms": list(split.get("wait_ms") or [None] * pr["ranks"]),
            "transfer_ms": list(split.get("transfer_ms") or [None] * pr["ranks"]),
            "share": {"barrier": cs["barrier"], "barrier_free": cs["barrier_free"]} if cs else {},
        })
        ranks, ruler = pr["ranks"], pr.get("communication_ruler", "barrier")
    dec, ver = sides
    return {"ranks": ranks, "hosts": list(dist.get("hosts") or []), "backend": dist.get("backend"),
            "ratio": {"compute_ms": _ratios(dec["compute_ms"], ver["compute_ms"]),
                      "communication_ms": _ratios(dec["communication_ms"], ver["communication_ms"]),
                      "whole_ms": _ratios(dec["whole_ms"], ver["whole_ms"])},
            "decode": dec, "verify": ver, "ruler": ruler}


def _ratios(decode: list[float | None], verify: list[float | None]) -> list[float | None]:
    """Verify ÷ decode rank by rank (None where the decode's figure is missing or not above zero)."""
    return [b / a if a and b is not None and a > 0 else None for a, b in zip(decode, verify)]


class RankChart(BaseChart):
    """Compute vs communication of one decode step and one verify forward, one stacked bar per rank."""

    title = "Per rank: compute vs communication"
    x_label = ("", "")
    y_label = ("time per forward pass", "ms")
    legend_cols = 1
    empty_text = "not a distributed run"

    def build(self):
        self.plot_item.getAxis("bottom").setHeight(36)

    def _draw(self, d: dict | None) -> None:
        if not self._redraw(d):
            self.plot_item.getAxis("bottom").setTicks([[]])
            return
        n = d["ranks"]
        colors = {"compute": self.theme["bar"], "communication": self.theme["breakeven"]}
        ticks, top, x = [], 0.0, 0.0
        for gi, side in enumerate(("decode", "verify")):
            sd = d[side]
            for r in range(n):
                comp, comm = max(sd["compute_ms"][r] or 0.0, 0.0), max(sd["communication_ms"][r] or 0.0, 0.0)
                for name, y0, h in (("compute", 0.0, comp), ("communication", comp, comm)):
                    bar = pg.BarGraphItem(x=[x], y0=[y0], height=[h], width=0.8, brush=colors[name],
                                          pen=pg.mkPen(self.theme["bg"], width=1))
                    self._add(bar, None if gi or r else "compute (forward without collectives)" if name == "compute"
                              else "communication (whole − compute)" if d.get("ruler") == "barrier_free"
                              else "communication (barrier-timed)")
                whole = comp + comm
                share = comm / whole if whole else None
                self._text(f"{whole:.0f} ms", x, whole, anchor=(0.5, 1))
                if share is not None and comm > 0:
                    self._text(f"{share * 100:.0f}%", x, comp + comm / 2, color="#ffffff", bold=True)
                ticks.append((x, f"{side}\nrank {r}"))
                top = max(top, whole)
                x += 1.0
            x += 0.6
        self.plot_item.getAxis("bottom").setTicks([ticks])
        self.plot_item.setXRange(-0.6, x - 0.6 - 0.4, padding=0)
        self.plot_item.setYRange(0, top * 1.8 if top else 1, padding=0)  # headroom: the legend sits above the bars
