"""The cost surface on the Verify cost page and in the report: a measured session with trees draws the tree curve
and the per-block comparison; a roofline without a surface (every one before trees) still loads and says so."""

from __future__ import annotations

from pathlib import Path

from specscope.gui.charts.tree_cost_data import surface_contexts, tree_blocks_data, tree_cost_data, tree_widths
from specscope.profiler.session.session import Session

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "session_surface.json"
OLD = Path(__file__).resolve().parents[1] / "fixtures" / "session_real_shape.json"


def _roof():
    return Session.load(FIXTURE).data["roofline"]


def test_tree_chart_data_from_a_measured_surface():
    roof = _roof()
    assert surface_contexts(roof) == [36, 1060]                # the prompt, and 1k tokens of context before it
    d = tree_cost_data(roof, 1060)
    assert d["context"] == 1060 and d["limit"] == 1.5
    fams = {s["family"]: s for s in d["series"]}
    assert list(fams) == ["chain", "best-first", "wide", "deep"]
    assert fams["chain"]["width"] == list(range(1, 18)) and fams["chain"]["steps"][0] == 1.0
    assert fams["best-first"]["width"] == [1, 3, 5, 9, 17]      # the decode step, then budgets 2, 4, 8, 16
    assert fams["deep"]["depth"] == [0, 2, 4, 8, 16] and fams["wide"]["depth"] == [0, 1, 1, 1, 1]
    assert d["knee_width"] == 2
    b = tree_blocks_data(roof, 36)
    assert b["width"] == 9 and b["families"] == ["chain", "best-first", "wide", "deep"] and b["depths"] == [8, 4, 1, 8]
    assert "linear_attention" in [x["key"] for x in b["blocks"]] and all(x is not None for x in b["experts"])
    assert tree_widths(roof) == [3, 5, 9, 17]


def test_no_surface_no_tree_data():
    roof = Session.load(OLD).data["roofline"]
    assert "surface" not in roof
    assert tree_cost_data(roof) is None and tree_blocks_data(roof) is None and surface_contexts(roof) == []


def test_the_page_draws_the_tree_curve(window, qtbot, tmp_path):
    window.model.session.data["roofline"] = _roof()
    window.show_page("verify_cost")
    window.model.flush()
    vc = window.verify_cost
    assert [vc.tree_context.itemData(i) for i in range(vc.tree_context.count())] == [36, 1060]
    assert vc.tree_width.currentData() == 9
    assert vc.left_tabs.currentWidget() is vc.tree_curve
    names = [label.text for _, label in vc.tree_curve.legend.items]
    assert {"chain", "tree, best-first", "tree, wide", "tree, deep"} <= set(names)
    assert any("chain knee" in n for n in names) and not vc.tree_curve._empty.isVisible()
    deep = next(sample.item for sample, label in vc.tree_curve.legend.items if label.text == "tree, deep")
    assert deep.getData()[0].tolist() == [1, 3, 5, 9, 17]
    vc.tree_context.setCurrentIndex(1)
    assert "1,060 tokens" in vc.tree_curve.plot_item.titleLabel.text
    assert "1,060 tokens" in vc.tree_blocks.plot_item.titleLabel.text
    assert "Knee" in vc.headline.text()
    png = tmp_path / "trees.png"
    assert vc.tree_curve.grab().save(str(png)) and png.stat().st_size > 5_000


def test_an_old_roofline_leaves_the_tree_charts_saying_why(window, qtbot):
    window.model.session.data["roofline"] = Session.load(OLD).data["roofline"]
    window.show_page("verify_cost")
    window.model.flush()
    vc = window.verify_cost
    assert vc.curve.measured.getData()[0] is not None                       # the chain curve as before
    assert vc.tree_curve._empty.isVisible() and "roofline --tree" in vc.tree_curve._empty.textItem.toPlainText()
    assert vc.tree_context.count() == 0 and vc.left_tabs.currentWidget() is vc.curve


def test_the_page_asks_for_trees_when_ticked(window):
    vc = window.verify_cost
    cfg = window.setup.config() if hasattr(window.setup, "config") else None
    from specscope.profiler.run.config import RunConfig

    base = cfg or RunConfig(demo=True)
    assert vc.measurement(base).tree_budgets is None
    vc.with_trees.setChecked(True)
    assert vc.measurement(base).tree_budgets == [2, 4, 8, 16]


def test_the_report_draws_the_surface():
    from specscope.gui.reports.html import build, collect_charts

    s = Session.load(FIXTURE)
    charts = collect_charts(s, names=())
    assert charts.get("trees_36") and charts.get("tree_blocks_1060")
    html = build(s, charts)
    assert "Chains and trees: the cost surface" in html and "At 1,060 tokens of context" in html
    assert "best-first (× decode)" in html and "MoE distinct experts / layer" in html
    old = Session.load(OLD)
    assert "cost surface" not in build(old, collect_charts(old, names=()))


def test_a_stored_surface_is_the_record():
    """Every key the measured surface holds is declared (``session.surface``), every required key is there."""
    from specscope.profiler.session import surface as rec

    def fits(record, d, where):
        assert not set(d) - set(record.__annotations__), (where, set(d) - set(record.__annotations__))
        assert not set(record.__required_keys__) - set(d), (where, set(record.__required_keys__) - set(d))

    s = _roof()["surface"]
    fits(rec.CostSurface, s, "surface")
    for at in s["contexts"]:
        fits(rec.SurfaceAt, at, "context")
        for k in at["knees"]:
            fits(rec.Knee, k, "knee")
        for r in at["rows"]:
            fits(rec.SurfaceRow, r, "row")
            for b in r["by_block"].values():
                fits(rec.SurfaceBlock, b, "block")
