"""Chart data for the Verify cost page's tree charts, from a roofline's cost surface (``roofline["surface"]``:
``specscope roofline --tree``). No Qt here; None where the roofline holds no surface (every roofline measured before
trees, or without ``--tree``), so the charts say so instead of drawing nothing.
"""

from __future__ import annotations

import math

from specscope.profiler.analysis.cost_surface import block_ms, surface_of  # noqa: F401 (surface_of: the pages take it from here)
from specscope.profiler.analysis.cost_surface import experts as experts_of
from specscope.profiler.session.surface import CostSurface, SurfaceAt

from .cost_data import SHORT_LABELS, Roof
from .records import TreeBlock, TreeBlocksData, TreeCostData, TreeCostSeries


def _ok(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0


def surface_contexts(roof: Roof | None) -> list[int]:
    s = surface_of(roof)
    return [at["context"] for at in s["contexts"]] if s else []


def _at(roof: Roof | None, context: int | None) -> tuple[CostSurface, SurfaceAt] | None:
    s = surface_of(roof)
    if not s or not s["contexts"]:
        return None
    at = next((a for a in s["contexts"] if a["context"] == context), s["contexts"][0])
    return s, at


def tree_cost_data(roof: Roof | None, context: int | None = None) -> TreeCostData | None:
    """Cost in decode steps by width, the chain's and each tree shape's (a tree's from the decode step, budget 0)."""
    got = _at(roof, context)
    if got is None:
        return None
    s, at = got
    series: list[TreeCostSeries] = []
    decode = [r for r in at["rows"] if r["kind"] == "chain" and r["width"] == 1]
    for fam in ["chain", *s["shapes"]]:
        rows = sorted((r for r in at["rows"] if r["shape"] == fam and _ok(r.get("multiple_of_decode"))),
                      key=lambda r: r["width"])
        if not rows:
            continue
        if fam != "chain":
            rows = decode[:1] + rows
        series.append({"family": fam, "width": [r["width"] for r in rows],
                       "steps": [float(r["multiple_of_decode"]) for r in rows], "depth": [r["depth"] for r in rows]})
    chain = next((k for k in at["knees"] if k["family"] == "chain"), None)
    texts = []
    for k in at["knees"]:
        tree = k["family"] != "chain"
        unit = (lambda w: f"budget {w - 1}") if tree else (lambda w: f"n = {w}")
        texts.append(f"{k['family']} ≤ {unit(k['within'])}" if k["over"] is not None else f"{k['family']}: none over")
    return {"context": at["context"], "t_decode_ms": at["t_decode_ms"], "limit": s["limit"], "series": series,
            "knee_width": chain["within"] if chain else None, "knee_text": "; ".join(texts)}


def tree_blocks_data(roof: Roof | None, context: int | None = None, width: int | None = None) -> TreeBlocksData | None:
    """Per block at ``width`` (default the surface's comparison width): the chain's and each shape's ms."""
    got = _at(roof, context)
    if got is None:
        return None
    s, at = got
    w = width or s["width"]
    order = ["chain", *s["shapes"]]
    rows = sorted((r for r in at["rows"] if r["width"] == w and any(v.get("ms") is not None for v in r["by_block"].values())),
                  key=lambda r: order.index(r["shape"]) if r["shape"] in order else len(order))
    if not rows:
        return None
    names = [c for c in rows[0]["by_block"] if any(_ok(block_ms(r, c)) for r in rows)]
    blocks: list[TreeBlock] = []
    for c in names:
        ms: list[float | None] = []
        for r in rows:
            v = block_ms(r, c)
            ms.append(float(v) if v is not None and _ok(v) else None)
        blocks.append({"key": c, "label": SHORT_LABELS.get(c, c), "ms": ms})
    experts: list[float | None] = []
    for r in rows:
        x = experts_of(r)
        experts.append(float(x) if x is not None and _ok(x) else None)
    return {"context": at["context"], "width": w, "families": [r["shape"] for r in rows],
            "depths": [r["depth"] for r in rows], "blocks": blocks, "experts": experts}


def tree_widths(roof: Roof | None) -> list[int]:
    """The widths at which the surface has the chain and trees timed per block (the page's width picker)."""
    got = _at(roof, None)
    if got is None:
        return []
    _, at = got
    return sorted({r["width"] for r in at["rows"] if r["kind"] == "tree"
                   and any(v.get("ms") is not None for v in r["by_block"].values())})
