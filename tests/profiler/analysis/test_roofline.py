"""The roofline's arithmetic on hand-made numbers, and ``specscope roofline`` end to end on the demo model."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from specscope.profiler.analysis.round_model import RoundModel
from specscope.profiler.analysis.roofline import build_roofline, floor_ms, format_roofline
from specscope.profiler.cli.main import main

MACHINE = {"bandwidth_gbs": 10.0, "peak_tflops": 1.0, "chip": "unknown", "nominal_bandwidth_gbs": None,
           "nominal_tflops": None, "device": "cpu"}
CURVE = {"context": 40, "points": [
    {"positions": 1, "whole_ms": 20.0, "blocks": {"moe": 10.0, "full_attention": 6.0}, "inter_block_ms": 4.0},
    {"positions": 3, "whole_ms": 50.0, "blocks": {"moe": 30.0, "full_attention": 12.0}, "inter_block_ms": 8.0},
]}
COSTS = {
    1: {"moe": {"weight_bytes": 50e6, "other_bytes": 0, "flops": 1e9, "distinct_experts": 4.0},
        "full_attention": {"weight_bytes": 10e6, "other_bytes": 10e6, "flops": 0.0, "distinct_experts": None}},
    3: {"moe": {"weight_bytes": 100e6, "other_bytes": 0, "flops": 3e9, "distinct_experts": 9.0},
        "full_attention": {"weight_bytes": 10e6, "other_bytes": 12e6, "flops": 0.0, "distinct_experts": None}},
}
ITEM_7 = {"bandwidth_gbs", "peak_tflops", "chip", "nominal_bandwidth_gbs", "curve", "ideal_verify_multiple", "speedup_at_floor"}
ROW = {"positions", "whole_ms", "multiple_of_decode", "by_block"}
CAT = {"ms", "weight_bytes", "other_bytes", "flops", "floor_ms", "efficiency", "distinct_experts"}


def test_floor_is_the_larger_of_bytes_and_flops():
    assert floor_ms(1e9, 1e9, 100.0, 1.0) == (pytest.approx(10.0), "bandwidth")  # 1 GB at 100 GB/s; 1 GFLOP at 1 TFLOP/s
    assert floor_ms(1e6, 1e12, 100.0, 1.0) == (pytest.approx(1000.0), "compute")


def test_roofline_by_hand():
    r = build_roofline(CURVE, COSTS, MACHINE, k=2, division={"drafter": "mtp", "tokens_per_round": 2.0, "t_draft_ms": 2.0})
    assert ITEM_7 <= set(r)
    one, three = r["curve"]
    moe1, fa1 = one["by_block"]["moe"], one["by_block"]["full_attention"]
    assert moe1["floor_ms"] == pytest.approx(5.0) and moe1["bound"] == "bandwidth"  # 50 MB at 10 GB/s > 1 GFLOP at 1 TFLOP/s
    assert moe1["efficiency"] == pytest.approx(0.5)
    assert fa1["floor_ms"] == pytest.approx(2.0) and fa1["efficiency"] == pytest.approx(2 / 6)
    assert one["floor_ms"] == pytest.approx(7.0) and one["efficiency"] == pytest.approx(7 / 20)
    assert three["multiple_of_decode"] == pytest.approx(2.5) and three["n_times_decode_ms"] == 60.0
    # ideal: each block grown as its floor grows, at the decode's efficiency, never above what is measured
    assert three["by_block"]["moe"]["ideal_ms"] == pytest.approx(20.0)  # 10 ms x (10 / 5)
    assert three["by_block"]["full_attention"]["ideal_ms"] == pytest.approx(6.6)  # 6 ms x (2.2 / 2)
    assert three["ideal_ms"] == pytest.approx(20 + 10 + 0.6)
    assert r["ideal_verify_multiple"] == pytest.approx(30.6 / 20) and r["verify_multiple"] == pytest.approx(2.5)
    assert three["floor_multiple"] == pytest.approx(12.2 / 7)
    gap = 50 - 30.6
    assert r["gap_ms"] == pytest.approx(gap)
    assert r["gap_shares"] == pytest.approx({"moe": 10 / gap, "full_attention": 5.4 / gap, "inter_block": 4 / gap})
    assert r["headline"] == ("An ideal 3-position verify would cost 1.5 plain steps here; it costs 2.5; "
                             "MoE holds 52% of the gap.")
    assert r["speedup_now"] == pytest.approx(RoundModel(2.0, 20, 50, 2).speedup)  # rollback, bookkeeping untimed
    assert r["speedup_at_floor"] == pytest.approx(2 * 20 / (30.6 + 2))
    assert three["by_block"]["moe"]["distinct_experts"] == 9.0
    text = format_roofline(r)
    assert r["headline"] in text and "round model at k = 2" in text and "T_rollback, T_bookkeeping not timed" in text
    json.dumps(r)


def test_a_division_without_a_draft_time_prints_no_speedup():
    """Acceptance known but no draft timed: no speedup is given (0 ms would print an upper bound as a measurement);
    a negative draft time reads "below noise", never a negative time."""
    r = build_roofline(CURVE, COSTS, MACHINE, k=2, division={"drafter": "mtp", "tokens_per_round": 2.0})
    assert r["speedup_now"] is None and r["speedup_at_floor"] is None and r["division"] is not None
    text = format_roofline(r)
    assert "no draft time was measured, so no speedup is given" in text
    neg = format_roofline(build_roofline(CURVE, COSTS, MACHINE, k=2,
                                         division={"drafter": "mtp", "tokens_per_round": 2.0, "t_draft_ms": -0.4}))
    assert "T_draft below noise" in neg and "-0.4" not in neg


def test_a_verify_already_at_its_ideal_has_no_gap():
    """On a compute-bound machine the floor grows n-fold; a verify cheaper than that is its own ideal."""
    costs = {n: {"moe": {"weight_bytes": 1e3, "other_bytes": 0, "flops": n * 1e10, "distinct_experts": None},
                 "full_attention": {"weight_bytes": 1e3, "other_bytes": 0, "flops": n * 1e9, "distinct_experts": None}}
             for n in (1, 3)}
    r = build_roofline(CURVE, costs, MACHINE, k=2)
    three = r["curve"][1]
    assert three["floor_multiple"] == pytest.approx(3.0)
    assert three["ideal_ms"] == pytest.approx(three["whole_ms"] - 4.0)  # only the inter-block growth is left
    assert r["speedup_at_floor"] is None and r["division"] is None
    assert any("FLOPs, not bytes" in n for n in r["notes"])


def test_without_block_times_the_whole_floor_scales_the_decode():
    curve = {"context": 5, "points": [{"positions": 1, "whole_ms": 20.0}, {"positions": 2, "whole_ms": 39.0}]}
    costs = {1: COSTS[1], 2: COSTS[3]}
    r = build_roofline(curve, costs, MACHINE, k=1)
    assert r["curve"][1]["ideal_ms"] == pytest.approx(20.0 * 12.2 / 7)
    assert r["curve"][1]["by_block"]["moe"]["ms"] is None and r["curve"][1]["by_block"]["moe"]["efficiency"] is None
    assert r["headline"].startswith("An ideal 2-position verify would cost 1.7 plain steps here; it costs 1.9")


def test_a_block_timed_cheaper_at_n_than_at_one_never_makes_the_ideal_negative():
    """One-rep block rulers are noisy: moe at 3 positions timed far below its decode time must not pull the
    ideal verify below the decode (it did: -4.3 ms, and the division at the floor raised)."""
    curve = {"context": 40, "points": [
        {"positions": 1, "whole_ms": 7.0, "blocks": {"moe": 30.0, "full_attention": 6.0}, "inter_block_ms": 1.0},
        {"positions": 3, "whole_ms": 9.0, "blocks": {"moe": 5.0, "full_attention": 6.5}, "inter_block_ms": 1.0},
    ]}
    r = build_roofline(curve, COSTS, MACHINE, k=2, division={"drafter": "mtp", "tokens_per_round": 2.0, "t_draft_ms": 1.0})
    three = r["curve"][1]
    assert 7.0 <= three["ideal_ms"] <= 9.0
    assert r["speedup_at_floor"] is not None and r["speedup_at_floor"] >= r["speedup_now"]


def test_the_core_modules_import_no_mlx():
    code = ("import sys, specscope.profiler.analysis.roofline, specscope.profiler.analysis.tune, specscope.profiler.cli.roofline, specscope.profiler.cli.tune; "
            "plain = ('specscope.engine_adapter', 'specscope.engine_adapter.params'); "  # settings only, MLX-free
            "bad = [m for m in sys.modules if m.split('.')[0] in ('mlx', 'mlx_lm') or ('engine_adapter' in m and m not in plain)]; "
            "assert not bad, bad")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


# -- the command on the demo model (small: no timing is asserted) ---------------------------------------------------------

def test_roofline_command_json_shape(capsys):
    assert main(["roofline", "--demo", "--positions", "3", "--reps", "1", "--block-reps", "1", "--bandwidth-mib", "8",
                 "--matmul-n", "64", "--max-tokens", "8", "-k", "1", "--prompt", "Hello there", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert ITEM_7 <= set(r) and (r["chip"] == "unknown" or r["chip"].startswith("Apple"))
    assert [row["positions"] for row in r["curve"]] == [1, 2, 3]
    for row in r["curve"]:
        assert ROW <= set(row)
        assert {"linear_attention", "full_attention", "moe", "output_head", "other"} <= set(row["by_block"])
        for c in row["by_block"].values():
            assert CAT <= set(c) and c["floor_ms"] > 0 and c["weight_bytes"] > 0
        assert isinstance(row["by_block"]["moe"]["distinct_experts"], float)
    from specscope.engine_adapter.model.demo_model import default_demo_path

    top_k = json.loads((default_demo_path() / "config.json").read_text())["text_config"]["num_experts_per_tok"]
    assert r["curve"][0]["by_block"]["moe"]["distinct_experts"] == float(top_k)  # one token: its top-k
    assert r["curve"][0]["multiple_of_decode"] == 1.0
    assert r["division"]["k"] == 1 and r["division"]["drafter"] == "mtp" and r["speedup_at_floor"] > 0
    assert r["headline"].startswith("An ideal 2-position verify")


@pytest.mark.parametrize("args, message", [
    (["roofline", "--demo", "--positions", "0"], "--positions"),
    (["roofline", "--demo", "--positions", "3", "-k", "3"], "-k"),
    (["roofline", "--demo", "--reps", "0"], "--reps"),
    (["roofline"], "--demo"),
    (["roofline", "--model", "/nonexistent/model"], "/nonexistent/model"),
    (["roofline", "--demo", "--oracle-p", "2"], "--oracle-p"),
    (["roofline", "--demo", "--context", "300k"], "window is 262,144"),
    (["roofline", "--demo", "--context", "lots"], "not a context size"),
])
def test_bad_input_is_a_clear_message(args, message, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("specscope: error:") and message in err and "Traceback" not in err


def test_the_roofline_text_never_prints_a_negative_barrier_free_time():
    curve = json.loads(json.dumps(CURVE))
    for p in curve["points"]:
        p["skip_estimates"] = {"moe": -1.5, "full_attention": 2.0}
    text = format_roofline(build_roofline(curve, COSTS, MACHINE, k=2))
    rows = text[text.index("per block"):].splitlines()[2:]
    moe = next(r for r in rows if r.lstrip().startswith("moe"))
    assert "below noise" in moe and "-1.5" not in moe
    assert "2.0" in next(r for r in rows if r.lstrip().startswith("full_attention"))


def test_roofline_at_a_context_measures_there_and_says_where_attention_stops_being_negligible(capsys):
    """The curve is taken after the context (prefilled once, timed apart), the byte counts are at that context, and
    full attention's share of a decode step's bytes grows with it as the model's KV bytes per token say."""
    args = ["roofline", "--demo", "--positions", "2", "-k", "1", "--reps", "1", "--category-reps", "0", "--bandwidth-mib", "8",
            "--matmul-n", "64", "--no-division", "--prompt", "Hello there", "--json"]
    assert main(args) == 0
    base = json.loads(capsys.readouterr().out)
    assert main(args + ["--context", "96", "--context-kind", "code"]) == 0
    at = json.loads(capsys.readouterr().out)
    assert at["context"] == base["context"] + 96 and at["context_prefill"]["tokens"] == 96 and at["context_prefill"]["ms"] > 0
    a0, a1 = base["attention_at_context"], at["attention_at_context"]
    assert a1["bytes_per_context_token"] == a0["bytes_per_context_token"] > 0
    assert a1["kv_share_of_step"] > a0["kv_share_of_step"]
    fa0 = base["curve"][0]["by_block"]["full_attention"]["other_bytes"]
    fa1 = at["curve"][0]["by_block"]["full_attention"]["other_bytes"]
    assert fa1 - fa0 == pytest.approx(96 * a1["bytes_per_context_token"], rel=0.01)
    assert a1["context_at_10pct"] < a1["context_at_50pct"]


def test_roofline_keeps_the_bin_it_took_the_nominal_figure_from():
    machine = {**MACHINE, "chip": "Apple M4 Max", "nominal_bandwidth_gbs": 409.6, "gpu_cores": 32,
               "nominal_bin": "32-core GPU"}
    r = build_roofline(CURVE, COSTS, machine, k=2)
    assert (r["nominal_bandwidth_gbs"], r["gpu_cores"], r["nominal_bin"]) == (409.6, 32, "32-core GPU")
