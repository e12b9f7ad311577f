"""Chart data for the Verify cost and Tune pages, from the plain dicts ``specscope roofline --json`` and
``specscope tune --json`` print (and a session stores under "roofline" and "tune"). No Qt here.

A time or multiple the measurement could not vouch for (missing, not finite, negative) becomes None
and is drawn as a gap, never as a number.
"""

from __future__ import annotations

import math
from typing import Sequence

from specscope.profiler.analysis.tune_trees import is_tree
from specscope.profiler.analysis.summary import BLOCK_LABELS
from specscope.profiler.session.measured import (CurveTimes, RooflinePartial, RooflineRow, RooflineRun, TuneResult,
                                                 recommendation, whole_roofline)

from .records import BlockFloor, BlockFloorData, ExpertUnionData, TuneChartData, TuneSeries, VerifyCurveData

Roof = RooflineRun | RooflinePartial  # the whole roofline, or the curve so far while it measures


SHORT_LABELS = {"linear_attention": "Linear attn", "full_attention": "Full attn", "moe": "MoE", "dense_mlp": "MLP",
                "output_head": "Head", "other": "Other", "unclassified": "Unclassified", "communication": "Comm."}


def _num(x):
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0 else None


def _decode_ms(curve: Sequence[CurveTimes]) -> float | None:
    one = next((p for p in curve if p.get("positions") == 1), None)
    return _num(one.get("whole_ms")) if one else None


def _floor_ms(point: RooflineRow) -> float | None:
    if _num(point.get("floor_ms")) is not None:
        return _num(point["floor_ms"])
    floors = [_num(c.get("floor_ms")) for c in (point.get("by_block") or {}).values()]
    return sum(f for f in floors if f is not None) if floors and all(f is not None for f in floors) else None


def _curve(roof: Roof | None) -> list[CurveTimes]:
    """The curve by n: the whole roofline's rows, or the times so far while it measures."""
    points: Sequence[CurveTimes] = (roof.get("curve") or []) if roof else []
    return sorted(points, key=lambda p: p.get("positions", 0))


def verify_curve_data(roof: Roof | None) -> VerifyCurveData | None:
    """Measured cost (with spread), n × decode and the floor, all in plain decode steps."""
    curve = _curve(roof)
    dec = _decode_ms(curve)
    if not curve or not dec:
        return None
    whole = whole_roofline(roof)  # the floor and the ideal: only once the roofline is whole
    rows = {r["positions"]: r for r in (whole.get("curve") or [])} if whole else {}
    n: list[int] = []
    meas: list[float] = []
    lo: list[float | None] = []
    hi: list[float | None] = []
    floor: list[float | None] = []
    ideal: list[float | None] = []
    for p in curve:
        m = _num(p.get("whole_ms"))
        if m is None:
            continue
        n.append(int(p["positions"]))
        meas.append(m / dec)
        a, b = _num(p.get("whole_ms_min")), _num(p.get("whole_ms_max"))
        lo.append(a / dec if a is not None else None)
        hi.append(b / dec if b is not None else None)
        row = rows.get(p["positions"])
        ideal.append(_num(row.get("ideal_multiple")) if row else None)
        f = _floor_ms(row) if row else None
        floor.append(f / dec if f is not None else None)
    note = f"1 step = T_decode = {dec:.2f} ms"
    return {"n": n, "measured": meas, "measured_lo": lo if any(v is not None for v in lo) else None,
            "measured_hi": hi if any(v is not None for v in hi) else None, "floor": floor,
            "ideal": ideal if any(v is not None for v in ideal) else None, "note": note}


def positions_available(roof: Roof | None) -> list[int]:
    return sorted(int(p["positions"]) for p in _curve(roof) if p.get("positions"))


def block_floor_data(roof: Roof | None, positions: int) -> BlockFloorData | None:
    whole = whole_roofline(roof)
    point = next((p for p in (whole.get("curve") or []) if p.get("positions") == positions), None) if whole else None
    if not point or not point.get("by_block"):
        return None
    cats: list[BlockFloor] = []
    for c, v in point["by_block"].items():
        ms, fl = _num(v.get("ms")), _num(v.get("floor_ms"))
        if ms is None and fl is None:
            continue
        eff = _num(v.get("efficiency"))
        cats.append({"key": c, "label": SHORT_LABELS.get(c, BLOCK_LABELS.get(c, c)), "ms": ms, "floor_ms": fl,
                     "efficiency": eff})
    return {"positions": positions, "blocks": cats} if cats else None


def expert_union_data(roof: Roof | None) -> ExpertUnionData | None:
    """Distinct experts per MoE layer against n × top-k; ``{}`` when the model has no MoE, None before data (or while
    still measuring: not yet known whether the model routes experts)."""
    whole = whole_roofline(roof)
    curve = sorted((whole.get("curve") or []), key=lambda p: p.get("positions", 0)) if whole else []
    if not curve:
        return None
    experts: list[int | None] = []  # each point's expert count (the first is the model's)
    n: list[int] = []
    distinct: list[float] = []
    bound: list[int | None] = []
    for p in curve:
        m = (p.get("by_block") or {}).get("moe")
        if not m or (d := m.get("distinct_experts")) is None:
            continue
        n.append(int(p["positions"]))
        distinct.append(float(d))
        slots = m.get("routed_slots") or None
        bound.append(min(slots, m["experts"]) if slots and m.get("experts") else slots)
        experts.append(m.get("experts"))
    if not n:
        return {}
    return {"n": n, "distinct": distinct, "bound": bound if all(b is not None for b in bound) else None,
            "n_experts": experts[0]}


def tune_data(tune: TuneResult | None) -> TuneChartData | None:
    rows = (tune.get("rows") or []) if tune else []
    if not tune or not rows:
        return None
    drafters: dict[str, TuneSeries] = {}
    for r in sorted(rows, key=lambda r: (r.get("drafter", ""), r.get("k", 0))):
        if r.get("k") is None or r.get("predicted_speedup") is None:
            continue
        d = drafters.setdefault(r["drafter"], {"name": r["drafter"], "k": [], "predicted": [], "lo": [], "hi": [],
                                               "measured": [], "measured_ci": []})
        ci: Sequence[float | None] = r.get("predicted_ci95") or [None, None]
        d["k"].append(int(r["k"]))
        d["predicted"].append(float(r["predicted_speedup"]))
        d["lo"].append(ci[0])
        d["hi"].append(ci[1])
        d["measured"].append(r.get("measured_speedup"))
        d["measured_ci"].append(r.get("measured_ci95"))
    out: TuneChartData = {"drafters": list(drafters.values()), "recommended": None}
    rec = recommendation(tune)
    if rec is not None and rec.get("k") is not None:
        sp = rec.get("measured_speedup", rec.get("predicted_speedup"))
        # the best measured setting; "best, not shown to win" when its interval holds 1×
        which = "B" if is_tree(str(rec.get("drafter", ""))) else "k"  # a tree setting's budget
        label = f"{which} = {rec['k']} ({rec.get('drafter', '')})" + ("" if rec.get("wins", True) else ": best, not a shown win")
        out["recommended"] = {"k": rec["k"], "speedup": sp, "label": label}
    return out
