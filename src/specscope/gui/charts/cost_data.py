"""Chart data for the Verify cost and Tune pages, from the plain dicts ``specscope roofline --json`` and
``specscope tune --json`` print (and a session stores under "roofline" and "tune"). No Qt here.

A time or multiple the measurement could not vouch for (missing, not finite, negative) becomes None
and is drawn as a gap, never as a number.
"""

from __future__ import annotations

import math
from typing import Any

from specscope.profiler.analysis.summary import BLOCK_LABELS


SHORT_LABELS = {"linear_attention": "Linear attn", "full_attention": "Full attn", "moe": "MoE", "dense_mlp": "MLP",
                "output_head": "Head", "other": "Other", "unclassified": "Unclassified", "communication": "Comm."}


def _num(x):
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0 else None


def _decode_ms(curve: list[dict]) -> float | None:
    one = next((p for p in curve if p.get("positions") == 1), None)
    return _num(one.get("whole_ms")) if one else None


def _floor_ms(point: dict) -> float | None:
    if _num(point.get("floor_ms")) is not None:
        return _num(point["floor_ms"])
    floors = [_num(c.get("floor_ms")) for c in (point.get("by_block") or {}).values()]
    return sum(floors) if floors and all(f is not None for f in floors) else None


def verify_curve_data(roof: dict | None) -> dict | None:
    """Measured cost (with spread), n × decode and the floor, all in plain decode steps."""
    curve = sorted((roof or {}).get("curve") or [], key=lambda p: p.get("positions", 0))
    dec = _decode_ms(curve)
    if not curve or not dec:
        return None
    n, meas, lo, hi, floor, ideal = [], [], [], [], [], []
    for p in curve:
        m = _num(p.get("whole_ms"))
        if m is None:
            continue
        n.append(int(p["positions"]))
        meas.append(m / dec)
        spread = p.get("whole_ms_ci95") or [p.get("whole_ms_min"), p.get("whole_ms_max")]
        lo.append(_num(spread[0]) / dec if _num(spread[0]) is not None else None)
        hi.append(_num(spread[1]) / dec if _num(spread[1]) is not None else None)
        ideal.append(_num(p.get("ideal_multiple")))
        f = _floor_ms(p)
        floor.append(f / dec if f is not None else None)
    note = f"1 step = T_decode = {dec:.2f} ms"
    return {"n": n, "measured": meas, "measured_lo": lo if any(v is not None for v in lo) else None,
            "measured_hi": hi if any(v is not None for v in hi) else None, "floor": floor,
            "ideal": ideal if any(v is not None for v in ideal) else None, "note": note}


def positions_available(roof: dict | None) -> list[int]:
    return sorted(int(p["positions"]) for p in (roof or {}).get("curve") or [] if p.get("positions"))


def block_floor_data(roof: dict | None, positions: int) -> dict | None:
    point = next((p for p in (roof or {}).get("curve") or [] if p.get("positions") == positions), None)
    if not point or not point.get("by_block"):
        return None
    cats = []
    for c, v in point["by_block"].items():
        ms, fl = _num(v.get("ms")), _num(v.get("floor_ms"))
        if ms is None and fl is None:
            continue
        eff = _num(v.get("efficiency"))
        cats.append({"key": c, "label": SHORT_LABELS.get(c, BLOCK_LABELS.get(c, c)), "ms": ms, "floor_ms": fl,
                     "efficiency": eff})
    return {"positions": positions, "blocks": cats} if cats else None


def expert_union_data(roof: dict | None) -> dict | None:
    """Distinct experts per MoE layer against n × top-k; ``{}`` when the model has no MoE, None before data."""
    roof = roof or {}
    curve = sorted(roof.get("curve") or [], key=lambda p: p.get("positions", 0))
    if not curve or roof.get("partial"):  # still measuring: not yet known whether the model routes experts
        return None
    moe = dict(roof.get("moe") or {})
    n, distinct, bound = [], [], []
    for p in curve:
        m = (p.get("by_block") or {}).get("moe") or {}
        if m.get("distinct_experts") is None:
            continue
        n.append(int(p["positions"]))
        distinct.append(float(m["distinct_experts"]))
        slots = m.get("routed_slots") or (p["positions"] * moe["top_k"] if moe.get("top_k") else None)
        bound.append(min(slots, m["experts"]) if slots and m.get("experts") else slots)
        moe.setdefault("n_experts", m.get("experts"))
    if not n:
        return {}
    return {"n": n, "distinct": distinct, "bound": bound if all(b is not None for b in bound) else None,
            "n_experts": moe.get("n_experts")}


def tune_data(tune: dict | None) -> dict | None:
    rows = (tune or {}).get("rows") or []
    if not rows:
        return None
    drafters: dict[str, dict] = {}
    for r in sorted(rows, key=lambda r: (r.get("drafter", ""), r.get("k", 0))):
        if r.get("k") is None or r.get("predicted_speedup") is None:
            continue
        d = drafters.setdefault(r["drafter"], {"name": r["drafter"], "k": [], "predicted": [], "lo": [], "hi": [], "measured": [],
                                               "measured_ci": []})
        ci = r.get("predicted_ci95") or [None, None]
        d["k"].append(int(r["k"]))
        d["predicted"].append(float(r["predicted_speedup"]))
        d["lo"].append(ci[0])
        d["hi"].append(ci[1])
        d["measured"].append(r.get("measured_speedup"))
        d["measured_ci"].append(r.get("measured_ci95"))
    rec = (tune or {}).get("recommendation") or {}
    out: dict[str, Any] = {"drafters": list(drafters.values()), "recommended": None}
    if rec.get("k") is not None:
        sp = rec.get("measured_speedup", rec.get("predicted_speedup"))
        # the best measured setting; "best, not shown to win" when its interval holds 1×
        label = f"k = {rec['k']} ({rec.get('drafter', '')})" + ("" if rec.get("wins", True) else ": best, not a shown win")
        out["recommended"] = {"k": rec["k"], "speedup": sp, "label": label}
    return out
