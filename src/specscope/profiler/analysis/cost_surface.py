"""The verify cost surface: chains over n positions and trees over nodes, by shape, at several contexts, per block,
against the roofline floor; and where the verify stops being "about one weight read" on this machine. Pure Python.

**The knee.** A verify is *about one weight read* while it costs at most ``KNEE_LIMIT`` = 1.5 decode steps: the
weights read once (the decode step itself) plus at most half a step of work per verify for the extra rows. The knee
of a family (chains, or trees of one shape) is the widest measured verify before the first one over the limit
(``knee``): the first crossing, so a noisy cheaper point further out does not move it. Why 1.5: below it a round
that accepts one extra token on average already pays for its verify, and on the public measurements it puts the knee
where the trees that win were run — an M3 Ultra's round ≈ 0.83 + 0.17·K crosses 1.5 past K = 3.9 (ddtree-mlx's
best budget there is 4), an M4 Pro's MLP is 1.47 at m = 4 and 2.69 at m = 8 (knee 4), an M5 Max verifies 4 tokens
at 1.29 (knee ≥ 4), while an M2 at width 2 is already 1.725 (knee 1: no width pays). A CPU is compute-bound, so its
verify grows about n-fold and its knee is 1.

Widths are forward rows: a chain of n positions has n; a tree of budget B (B drafted nodes) has B + 1 (the root
and its nodes), the same rows as a chain of B + 1 positions — so the curves share an axis, and the decode step
(width 1) starts both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from specscope.profiler.analysis.roofline import NAMES, floor_ms
from specscope.profiler.session.measured import whole_roofline
from specscope.profiler.session.surface import CostSurface, Knee, SurfaceAt, SurfaceBlock, SurfaceRow

KNEE_LIMIT = 1.5  # decode steps: "about one weight read" (module docstring)
SUSPECT_BELOW = 0.9  # a wider verify under 0.9 decode steps: the decode step's own time is suspect


def knee(family: str, widths: Sequence[int], multiples: Sequence[float], limit: float = KNEE_LIMIT) -> Knee:
    """The widest width before the first whose cost (in decode steps) is over ``limit``; widths ascending, the first
    of them 1 (the decode step, 1.0 by definition)."""
    pts = sorted(zip(widths, multiples))
    if not pts or pts[0][0] != 1:
        raise ValueError("a knee needs the decode step (width 1) first")
    within = pts[0]
    for w, m in pts[1:]:
        if m > limit:
            return {"family": family, "limit": limit, "within": within[0], "within_multiple": within[1],
                    "over": w, "over_multiple": m}
        within = (w, m)
    return {"family": family, "limit": limit, "within": within[0], "within_multiple": within[1],
            "over": None, "over_multiple": None}


def _ratio(a, b):
    return a / b if a is not None and b else None


def _row(p: Mapping[str, Any], t_dec: float, floor1: float | None, bw: float, peak: float) -> SurfaceRow:
    by: dict[str, SurfaceBlock] = {}
    total = 0.0
    for cat, c in (p.get("cost") or {}).items():
        fl, bound = floor_ms(c["weight_bytes"] + c["other_bytes"], c["flops"], bw, peak)
        total += fl
        ms = (p.get("blocks") or {}).get(cat)
        b: SurfaceBlock = {"ms": ms, "ms_barrier_free": (p.get("skip_estimates") or {}).get(cat), "floor_ms": fl,
                           "bound": bound, "efficiency": _ratio(fl, ms), "distinct_experts": c.get("distinct_experts")}
        if "routed_slots" in c:
            b["routed_slots"] = c["routed_slots"]
        if "experts" in c:
            b["experts"] = c["experts"]
        by[cat] = b
    return {"kind": p["kind"], "shape": p["shape"], "width": p["width"], "budget": p.get("budget"), "depth": p["depth"],
            "widths": list(p.get("widths") or []), "whole_ms": p["whole_ms"], "whole_ms_min": p.get("whole_ms_min"),
            "whole_ms_max": p.get("whole_ms_max"), "multiple_of_decode": p["whole_ms"] / t_dec, "floor_ms": total,
            "floor_multiple": _ratio(total, floor1) if floor1 is not None else None,
            "inter_block_ms": p.get("inter_block_ms"), "by_block": by}


def family_rows(at: SurfaceAt, family: str) -> list[SurfaceRow]:
    """The rows of one family by width, the decode step (the chain's n = 1) first: a tree of budget 0 is the decode."""
    rows = sorted((r for r in at["rows"] if r["shape"] == family), key=lambda r: r["width"])
    dec = [r for r in at["rows"] if r["kind"] == "chain" and r["width"] == 1]
    return rows if family == "chain" else dec[:1] + rows


def rows_at_width(at: SurfaceAt, width: int, shapes: Sequence[str] = ()) -> list[SurfaceRow]:
    """The chain and every tree shape at one width: the chain first, then the shapes in ``shapes``' order."""
    order = ["chain", *shapes]
    return sorted((r for r in at["rows"] if r["width"] == width),
                  key=lambda r: (order.index(r["shape"]) if r["shape"] in order else len(order), r["shape"]))


def _at(ctx: Mapping[str, Any], bw: float, peak: float, shapes: Sequence[str], limit: float) -> SurfaceAt:
    pts = list(ctx["points"])
    one = next(p for p in pts if p["kind"] == "chain" and p["width"] == 1)
    t_dec = one["whole_ms"]
    floor1 = _row(one, t_dec, None, bw, peak)["floor_ms"]
    rows = [_row(p, t_dec, floor1, bw, peak) for p in pts]
    at: SurfaceAt = {"context": ctx["context"], "t_decode_ms": t_dec, "rows": rows, "knees": [],
                     "tree_refusal": ctx.get("tree_refusal")}
    for fam in ["chain", *shapes]:
        fr = family_rows(at, fam)
        if len(fr) > 1 or fam == "chain":
            at["knees"].append(knee(fam, [r["width"] for r in fr], [r["multiple_of_decode"] for r in fr], limit))
    return at


def build_surface(raw: Mapping[str, Any], machine: Mapping[str, Any], width: int | None = None,
                  limit: float = KNEE_LIMIT) -> CostSurface:
    """The surface (``roofline["surface"]``) from ``tree_curve.measure_surface``'s record with each point's
    ``cost`` (``TuneEngine.surface_inputs``) and the machine's probes. ``width``: the forward width the per-block
    comparison is drawn at (default: budget 8's, else the widest tree's)."""
    bw, peak = float(machine["bandwidth_gbs"]), float(machine["peak_tflops"])
    shapes = list(raw.get("shapes") or [])
    contexts = [_at(c, bw, peak, shapes, limit) for c in raw["contexts"]]
    budgets = list(raw.get("budgets") or [])
    if width is None:
        width = 9 if 8 in budgets else (max(budgets) + 1 if budgets else 1)
    out: CostSurface = {"limit": limit, "budgets": budgets, "shapes": shapes, "positions": raw["positions"],
                        "reps": raw["reps"], "block_reps": raw["block_reps"], "width": width, "contexts": contexts,
                        "headline": "", "notes": []}
    out["headline"] = surface_headline(out)
    out["notes"] = surface_notes(out)
    return out


def _knee_text(k: Knee, tree: bool) -> str:
    steps = lambda m: f"{m:.2f} steps"  # noqa: E731
    if tree:
        if k["over"] is None:
            return f"every {k['family']} tree measured (budget {k['within'] - 1}: {steps(k['within_multiple'])})"
        if k["within"] == 1:
            return f"no {k['family']} tree (budget {k['over'] - 1} costs {steps(k['over_multiple'] or 0)})"
        return (f"{k['family']} trees up to budget {k['within'] - 1} (budget {k['over'] - 1} costs "
                f"{steps(k['over_multiple'] or 0)})")
    if k["over"] is None:
        return f"every chain measured (n = {k['within']}: {steps(k['within_multiple'])})"
    if k["within"] == 1:
        return f"no chain past the decode step (n = {k['over']} costs {steps(k['over_multiple'] or 0)})"
    return f"chains up to n = {k['within']} (n = {k['over']} costs {steps(k['over_multiple'] or 0)})"


def surface_headline(s: CostSurface) -> str:
    """Where the knee is at each context: the chain's and the first tree shape's (best first where measured)."""
    parts = []
    for at in s["contexts"]:
        ks = {k["family"]: k for k in at["knees"]}
        tree = next((ks[f] for f in s["shapes"] if f in ks), None)
        text = _knee_text(ks["chain"], False) + (f" and {_knee_text(tree, True)}" if tree else "")
        parts.append(f"at {at['context']:,} tokens of context, {text}")
    return (f"Knee (the widest verify still about one weight read, ≤ {s['limit']:g} decode steps): "
            + "; ".join(parts) + ".")


def block_ms(row: SurfaceRow, block: str) -> float | None:
    """One block's barrier-timed ms in a row (None: not timed there, or no such block)."""
    b = row["by_block"].get(block)
    return b["ms"] if b is not None else None


def experts(row: SurfaceRow) -> float | None:
    """The distinct experts per MoE layer the row's forward read (None: no MoE block)."""
    b = row["by_block"].get("moe")
    return b["distinct_experts"] if b is not None else None


def _ms(x) -> str:
    return f"{x:.1f} ms" if x is not None else "—"


def surface_notes(s: CostSurface) -> list[str]:
    """What the per-block figures at the comparison width say: the Gated DeltaNet layers' recurrence per depth against
    the chain's, and the MoE's distinct experts of a tree against a chain's."""
    notes = []
    w = s["width"]
    for at in s["contexts"]:
        rows = rows_at_width(at, w, s["shapes"])
        chain = next((r for r in rows if r["kind"] == "chain"), None)
        trees = [r for r in rows if r["kind"] == "tree"]
        if at.get("tree_refusal"):
            notes.append(f"at {at['context']:,} tokens: no trees: {at['tree_refusal']}")
        if chain is None or not trees:
            continue
        la = block_ms(chain, "linear_attention")
        if la:
            each = ", ".join(f"{r['shape']} (depth {r['depth']}) {_ms(t)} = {t / la:.2f}×"
                             for r in trees if (t := block_ms(r, "linear_attention")) is not None)
            notes.append(f"at {at['context']:,} tokens, width {w}: {NAMES['linear_attention']} (one recurrence step per "
                         f"depth in a tree) costs {_ms(la)} in the chain; {each}")
        moe = chain["by_block"].get("moe")
        if moe is not None and moe["distinct_experts"] is not None:
            each = ", ".join(f"{r['shape']} {x:.1f}" for r in trees if (x := experts(r)) is not None)
            slots, n_exp = moe.get("routed_slots"), moe.get("experts")
            notes.append(f"at {at['context']:,} tokens, width {w}: the MoE reads {moe['distinct_experts']:.1f} distinct "
                         f"experts per layer for the chain; {each}"
                         + (f" (of {n_exp}; {slots} routed slots)" if n_exp and slots else ""))
    for at in s["contexts"]:  # a wider verify cheaper than the decode step: the decode's time is not to be trusted
        low = min((r for r in at["rows"] if r["width"] > 1), key=lambda r: r["multiple_of_decode"], default=None)
        if low is not None and low["multiple_of_decode"] < SUSPECT_BELOW:
            notes.append(f"at {at['context']:,} tokens a {low['width']}-row verify measured {low['multiple_of_decode']:.2f} "
                         f"decode steps: a wider forward cheaper than one step means the decode step's time "
                         f"({at['t_decode_ms']:.1f} ms) was inflated (the machine's load); this context's knees are not "
                         "to be trusted — measure again")
    notes.append("a tree's floor counts the same weights and FLOPs as a chain of the same width, and its recurrent "
                 "layers reading and writing one state per node")
    return notes


def format_surface(s: CostSurface) -> str:
    """The surface as text (``specscope roofline --tree``): cost in decode steps by width per context, the knees, the
    blocks at the comparison width."""
    lines = ["", f"verify cost surface (decode steps; width = rows of the forward: a tree of budget B has B + 1; "
                 f"{s['reps']} repeats, block rulers {s['block_reps']}×)"]
    for at in s["contexts"]:
        fams = ["chain", *[f for f in s["shapes"] if any(r["shape"] == f for r in at["rows"])]]
        lines += ["", f"context {at['context']:,} tokens: T_decode {at['t_decode_ms']:.1f} ms",
                  " width " + "".join(f"{f:>14}" for f in fams) + "   floor ×"]
        for w in sorted({r["width"] for r in at["rows"]}):
            cells = []
            for f in fams:
                r = next((x for x in at["rows"] if x["width"] == w and x["shape"] == f), None)
                cells.append(f"{r['multiple_of_decode']:.2f}" + (f" d{r['depth']}" if r["kind"] == "tree" else "")
                             if r else "—")
            chain = next((x for x in at["rows"] if x["width"] == w and x["kind"] == "chain"), None)
            fl = f"{chain['floor_multiple']:.2f}" if chain and chain.get("floor_multiple") is not None else "—"
            lines.append(f" {w:>5} " + "".join(f"{c:>14}" for c in cells) + f"   {fl:>7}")
        for k in at["knees"]:
            lines.append(f" knee  {k['family']:<11} {_knee_text(k, k['family'] != 'chain')}")
        rows = rows_at_width(at, s["width"], s["shapes"])
        if len(rows) > 1 and any(r["by_block"] for r in rows):
            lines.append(f" per block at width {s['width']} (ms, barrier-timed; MoE: distinct experts per layer)")
            lines.append("   block            " + "".join(f"{r['shape']:>12}" for r in rows))
            for cat in rows[0]["by_block"]:
                ms = [block_ms(r, cat) for r in rows]
                lines.append(f"   {cat:<16} " + "".join(f"{c:12.1f}" if c is not None else f"{'—':>12}" for c in ms))
            ex = [experts(r) for r in rows]
            if any(x is not None for x in ex):
                lines.append("   MoE experts      " + "".join(f"{x:12.1f}" if x is not None else f"{'—':>12}" for x in ex))
    lines += [""] + [f"note: {n}" for n in s["notes"]]  # the headline is the roofline's (its last sentence)
    return "\n".join(lines)


def surface_of(roof: Any) -> CostSurface | None:
    """The cost surface a session's roofline holds (its whole run's), or None (no surface measured)."""
    whole = whole_roofline(roof)
    return whole.get("surface") if whole else None
