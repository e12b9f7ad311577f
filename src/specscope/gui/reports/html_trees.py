"""The report's cost surface (a roofline measured with trees: ``roofline["surface"]``): per context, the cost by
width of chains and trees (the Verify cost page's tree charts, drawn offscreen), the knees, and per block at the
comparison width. Nothing where the roofline holds no surface (every roofline before trees)."""

from __future__ import annotations

from specscope.profiler.analysis.cost_surface import block_ms, experts, rows_at_width, surface_of
from specscope.profiler.analysis.formatting import fmt as f
from specscope.profiler.analysis.roofline import NAMES
from specscope.profiler.renderers.html_common import esc
from specscope.profiler.renderers.html_common import table as _table


from . import charts as _charts
from .charts import section_figure


def tree_images(session, width: int = 900, height: int = 380) -> _charts.Charts:
    """Each context's two tree charts, as the Verify cost page draws them, keyed ``trees_<context>`` and
    ``tree_blocks_<context>``."""
    out = _charts.Charts()
    roof = session.data.get("roofline")
    s = surface_of(roof)
    if not s:
        return out
    _charts.ensure_app()
    from specscope.gui.charts.common import LIGHT
    from specscope.gui.charts.tree_cost import TreeBlocksChart, TreeCostChart
    from specscope.gui.charts.tree_cost_data import tree_blocks_data, tree_cost_data

    try:
        for at in s["contexts"]:
            c = at["context"]
            curve = TreeCostChart(LIGHT)
            curve.set_data(tree_cost_data(roof, c))
            out[f"trees_{c}"] = _charts.widget_png(curve, width, height)
            blocks = TreeBlocksChart(LIGHT)
            blocks.set_data(tree_blocks_data(roof, c))
            out[f"tree_blocks_{c}"] = _charts.widget_png(blocks, width, int(height * 0.85))
    except Exception as exc:  # a missing chart must never cost the whole report
        out.leave_out("trees", exc)
    return out


def trees_section(session, charts: dict, target: str) -> str:
    s = surface_of(session.data.get("roofline"))
    if not s:
        return ""
    parts = ["<h3>Chains and trees: the cost surface</h3>",  # its knee sentence ends the roofline's headline above
             f"<p>Width = rows of one verify forward: a chain of n positions has n, a tree of budget B has B + 1 (the "
             f"root and its nodes). Shapes: <i>best-first</i> grown by path probability from a typical block drafter's "
             f"probabilities by rank; <i>wide</i> every node a child of the root (one recurrence step); <i>deep</i> the "
             f"chain's own tokens verified as a tree (one recurrence step per node). Cost in plain decode steps at the "
             f"same context; {s['reps']} repeats (median), block rulers {s['block_reps']}×. The knee: the widest verify "
             f"before the first over {s['limit']:g} decode steps.</p>"]
    for at in s["contexts"]:
        c = at["context"]
        parts.append(f"<h4>At {c:,} tokens of context (T_decode {f(at['t_decode_ms'])} ms)</h4>")
        parts.append(section_figure(f"trees_{c}", charts, target,
                                    "Cost by width in plain decode steps: chains (n) and each tree shape (budget + 1), "
                                    f"the {s['limit']:g}-step line, and the chain's knee."))
        fams = ["chain", *[x for x in s["shapes"] if any(r["shape"] == x for r in at["rows"])]]
        rows = []
        for w in sorted({r["width"] for r in at["rows"]}):
            cells = [str(w)]
            for fam in fams:
                r = next((x for x in at["rows"] if x["width"] == w and x["shape"] == fam), None)
                cells.append(f"{f(r['multiple_of_decode'])} (depth {r['depth']})" if r and r["kind"] == "tree"
                             else f(r["multiple_of_decode"]) if r else "—")
            ch = next((x for x in at["rows"] if x["width"] == w and x["kind"] == "chain"), None)
            cells.append(f(ch.get("floor_multiple")) if ch else "—")
            rows.append(cells)
        parts.append(_table(["width", *[f"{x} (× decode)" for x in fams], "floor × decode floor"], rows))
        at_w = rows_at_width(at, s["width"], s["shapes"])
        if len(at_w) > 1 and any(r["by_block"] for r in at_w):
            parts.append(section_figure(f"tree_blocks_{c}", charts, target,
                                        f"Per block at width {s['width']}: barrier-timed ms, chain beside each tree "
                                        "shape; the legend gives the distinct experts per MoE layer each forward read."))
            body = [[esc(NAMES.get(b, b)), *[f(block_ms(r, b)) for r in at_w]] for b in at_w[0]["by_block"]]
            body.append(["MoE distinct experts / layer", *[f(experts(r), ".2f") for r in at_w]])
            parts.append(_table(["block (ms)", *[f"{r['shape']} (depth {r['depth']})" if r["kind"] == "tree"
                                                 else f"chain (n = {r['width']})" for r in at_w]], body))
    parts += [f"<p class=\"muted\">{esc(n)}</p>" for n in s["notes"]]
    return "".join(parts)
