"""The Context page draws a sweep from the lines `specscope sweep --jsonl` prints, and from a session with a sweep."""

from __future__ import annotations

from specscope.gui.charts.common import LIGHT
from specscope.gui.views.context import ContextView, chart_data

ROW = {"context": 0, "plain_tok_s": 10.0, "spec_tok_s": 12.0, "t_decode_ms": 100.0, "t_verify_ms": 150.0, "t_draft_ms": 10.0,
       "verify_multiple": 1.5, "full_attention_share_decode": 0.1, "full_attention_share_verify": 0.08,
       "blocks_decode": {"linear_attention": 30.0, "full_attention": 10.0, "moe": 50.0, "output_head": 5.0, "other": 5.0},
       "p": 0.6, "p_ci95": [0.5, 0.7], "tokens_per_round": 2.0, "predicted_speedup": 1.2, "measured_speedup": 1.1,
       "measured_speedup_ci95": [1.0, 1.2], "break_even_multiple": 1.9, "prefill_ms": None}


def test_page_fills_in_from_the_command_lines(qtbot):
    v = ContextView(LIGHT)
    qtbot.addWidget(v)
    v._line({"status": "context 0: visit 1 of 4"})
    assert "visit 1" in v.status.text()
    v._line({"context_sweep": {"points": [ROW]}})
    assert v.table.rowCount() == 1
    v._line({"context_sweep": {"points": [ROW, {**ROW, "context": 4096, "verify_multiple": 2.5, "prefill_ms": 98_000.0}]}})
    assert v.table.rowCount() == 2 and v.table.item(1, 0).text() == "4k" and "98.0 s" in v.table.item(1, 12).text()
    assert "dominant: verify cost" in v.headline.text()


def test_chart_data_block_split_is_in_percent():
    d = chart_data([ROW])
    assert [s["name"] for s in d["split"]["series"]][:2] == ["linear attention", "full attention"]
    assert d["split"]["series"][1]["y"] == [10.0]
    assert d["speedup"]["series"][1]["lo"] == [1.0]
