"""The verify cost surface's figures (``analysis.cost_surface``): the knee on built curves where it is known, with
controls, and a surface built from a measured record's shape."""

from __future__ import annotations

import pytest

from specscope.profiler.analysis.cost_surface import (KNEE_LIMIT, build_surface, family_rows, format_surface, knee,
                                                      rows_at_width)

WIDTHS = list(range(1, 18))


def test_knee_of_a_memory_bound_curve_is_where_compute_takes_over():
    """max(1, 0.2·n): one weight read until 0.2·n passes 1.5 — n = 7 (1.4) is the last within, 8 (1.6) the first over."""
    k = knee("chain", WIDTHS, [max(1.0, 0.2 * n) for n in WIDTHS])
    assert (k["within"], k["over"]) == (7, 8)
    assert k["within_multiple"] == pytest.approx(1.4) and k["over_multiple"] == pytest.approx(1.6)
    assert k["limit"] == KNEE_LIMIT == 1.5


def test_control_a_compute_bound_curve_has_no_knee_past_the_decode():
    """A CPU's verify grows about n-fold: already n = 2 is over the limit."""
    k = knee("chain", WIDTHS, [0.05 + 0.95 * n for n in WIDTHS])
    assert (k["within"], k["over"]) == (1, 2)


def test_the_public_m3_ultra_line_puts_the_knee_at_4():
    """lablup/mlxcel#1217: a round ≈ 0.83 + 0.17·K on an M3 Ultra (1 at K = 1): within 1.5 up to K = 3."""
    k = knee("chain", WIDTHS, [1.0] + [0.83 + 0.17 * n for n in WIDTHS[1:]])
    assert (k["within"], k["over"]) == (3, 4)


def test_a_cheaper_point_past_the_crossing_does_not_move_the_knee():
    k = knee("chain", [1, 2, 3, 4, 5, 6], [1.0, 1.2, 1.4, 1.7, 1.45, 1.3])
    assert (k["within"], k["over"]) == (3, 4)


def test_a_curve_that_never_crosses_says_so():
    k = knee("best-first", [1, 3, 5, 9, 17], [1.0, 1.1, 1.2, 1.3, 1.45])
    assert k["within"] == 17 and k["over"] is None and k["over_multiple"] is None


def test_a_knee_needs_the_decode_step():
    with pytest.raises(ValueError, match="decode step"):
        knee("chain", [2, 3], [1.5, 2.0])


# -- a surface from a measured record's shape ------------------------------------------------------------------------

def _cost(width, states=1):
    return {"linear_attention": {"weight_bytes": 1e6, "other_bytes": 1e4 * states, "flops": 1e6 * width,
                                 "distinct_experts": None},
            "moe": {"weight_bytes": 4e6, "other_bytes": 0.0, "flops": 4e6 * width, "distinct_experts": 2.0 + width,
                    "routed_slots": 2 * width, "experts": 16}}


def _point(kind, shape, width, ms, depth=None, blocks=None, moe=None):
    p = {"kind": kind, "shape": shape, "width": width, "budget": width - 1 if kind == "tree" else None,
         "depth": depth if depth is not None else width - 1, "widths": [1] * (width - 1), "whole_ms": ms,
         "whole_ms_min": ms * 0.9, "whole_ms_max": ms * 1.1, "whole_ms_samples": [ms],
         "cost": _cost(width, width if kind == "tree" else 1)}
    if blocks:
        p["blocks"] = blocks
    if moe is not None:
        p["cost"]["moe"]["distinct_experts"] = moe
    return p


def raw_surface():
    """A GPU-like curve at 30 tokens (one weight read up to n = 7) and a longer context where trees cross sooner."""
    near = [_point("chain", "chain", n, 10.0 * max(1.0, 0.2 * n), blocks={"linear_attention": 2.0, "moe": 5.0}
                   if n in (1, 5) else None) for n in range(1, 10)]
    near += [_point("tree", "best-first", 3, 11.0, 2), _point("tree", "best-first", 5, 12.0, 3,
                                                              {"linear_attention": 3.0, "moe": 5.0}, moe=9.5),
             _point("tree", "best-first", 9, 16.0, 4), _point("tree", "deep", 5, 14.0, 4, {"linear_attention": 4.0,
                                                                                           "moe": 5.0})]
    far = [_point("chain", "chain", n, 20.0 * (0.4 + 0.6 * n)) for n in range(1, 10)]
    far += [_point("tree", "best-first", w, 20.0 * (0.4 + 0.6 * w), 2) for w in (3, 5, 9)]
    return {"contexts": [{"context": 30, "tokens": [], "t_decode_ms": 10.0, "points": near, "tree_refusal": None},
                         {"context": 1054, "tokens": [], "t_decode_ms": 20.0, "points": far, "tree_refusal": None}],
            "budgets": [2, 4, 8], "shapes": ["best-first", "deep"], "positions": 9, "reps": 3, "block_reps": 1,
            "labels": {}, "top_k": 2}


MACHINE = {"bandwidth_gbs": 100.0, "peak_tflops": 1.0}


def test_surface_rows_knees_and_headline():
    s = build_surface(raw_surface(), MACHINE, width=5)
    near, far = s["contexts"]
    assert len(near["rows"]) == 13 and near["t_decode_ms"] == 10.0
    assert [r["width"] for r in family_rows(near, "best-first")] == [1, 3, 5, 9]   # the decode step first
    ks = {k["family"]: k for k in near["knees"]}
    assert (ks["chain"]["within"], ks["chain"]["over"]) == (7, 8)
    assert (ks["best-first"]["within"], ks["best-first"]["over"]) == (5, 9)       # 1.2 at budget 4, 1.6 at 8
    assert (ks["deep"]["within"], ks["deep"]["over"]) == (5, None)
    fk = {k["family"]: k for k in far["knees"]}
    assert (fk["chain"]["within"], fk["chain"]["over"]) == (1, 2)
    assert "chains up to n = 7" in s["headline"] and "best-first trees up to budget 4" in s["headline"]
    assert "at 1,054 tokens of context, no chain past the decode step" in s["headline"]
    # the floor: a tree's recurrent layers move one state per node; the decode's floor is 1
    r5 = next(r for r in near["rows"] if r["shape"] == "deep")
    c5 = next(r for r in near["rows"] if r["shape"] == "chain" and r["width"] == 5)
    assert r5["by_block"]["linear_attention"]["floor_ms"] > c5["by_block"]["linear_attention"]["floor_ms"]
    assert near["rows"][0]["floor_multiple"] == pytest.approx(1.0)
    # per block at width 5: the tree's Gated DeltaNet against the chain's, the MoE's experts
    assert [r["shape"] for r in rows_at_width(near, 5, s["shapes"])] == ["chain", "best-first", "deep"]
    la = next(n for n in s["notes"] if "linear attention" in n)
    assert "2.0 ms in the chain" in la and "best-first (depth 3) 3.0 ms = 1.50×" in la and "deep (depth 4) 4.0 ms = 2.00×" in la
    moe = next(n for n in s["notes"] if "distinct experts" in n)
    assert "7.0 distinct experts per layer for the chain; best-first 9.5" in moe and "(of 16; 10 routed slots)" in moe
    text = format_surface(s)
    assert "context 1,054 tokens" in text and "knee  best-first" in text and "per block at width 5" in text


def test_a_surface_without_trees_has_the_chain_knee_only():
    raw = raw_surface()
    for c in raw["contexts"]:
        c["points"] = [p for p in c["points"] if p["kind"] == "chain"]
        c["tree_refusal"] = "sliding-window cache in layer 3"
    s = build_surface(raw, MACHINE)
    assert [k["family"] for k in s["contexts"][0]["knees"]] == ["chain"]
    assert any("no trees: sliding-window" in n for n in s["notes"]) and " and " not in s["headline"].split(":")[1]


def test_a_decode_step_slower_than_wider_verifies_is_flagged():
    """Control: the built surface has no such note; with the decode step's time inflated (load), it has."""
    assert not any("inflated" in n for n in build_surface(raw_surface(), MACHINE)["notes"])
    raw = raw_surface()
    raw["contexts"][0]["points"][0]["whole_ms"] = 40.0
    notes = build_surface(raw, MACHINE)["notes"]
    assert any(n.startswith("at 30 tokens a 2-row verify measured 0.25 decode steps") and "inflated" in n for n in notes)
