"""Compare by block (analysis.by_block): the block where two engines' verify differs most is named with its figures
when it differs beyond noise, and no block is named when none does. Tables shaped as a session's (one value per
forward, per block), drawn with a fixed seed; the measured version of the same on real forwards is
tests/engine_adapter/engines/test_opened.py (slow)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from specscope.profiler.analysis.by_block import block_difference, opened_lines, verify_table

MEDIANS = {"full_attention": 12.0, "dense_mlp": 30.0, "output_head": 4.0, "other": 1.0}


def _table(seed: int, scale: dict[str, float] | None = None, n: int = 40, source: str = "opened"):
    rng = np.random.default_rng(seed)
    rows = []
    for positions in (1, 3):
        blocks = {c: list(m * positions ** 0.5 * (scale or {}).get(c, 1.0) * rng.lognormal(0, 0.15, n))
                  for c, m in MEDIANS.items()}
        rows.append({"positions": positions, "forwards": n, "blocks": blocks})
    return {"engine": "x", "source": source, "rows": rows, "labels": {}}


def test_the_block_made_slower_is_named_with_its_figures():
    d = block_difference(_table(1), _table(2, {"full_attention": 1.6}), ("specscope", "other"))
    top = d["named"]
    assert top is not None and top["block"] == "full_attention" and top["positions"] == 3
    assert 1.4 < top["ratio"] < 1.8 and top["ratio_ci95"][0] > 1
    assert d["line"].startswith("verify differs most in Full attention at 3 positions: ")
    assert f"{top['a_ms']:.2f} ms (specscope) vs {top['b_ms']:.2f} ms (other) per verify" in d["line"]
    assert "specscope's is cheaper there" in d["line"]
    # the other way round: the other engine is the cheaper one
    d2 = block_difference(_table(1), _table(2, {"dense_mlp": 0.5}), ("specscope", "other"))
    assert d2["named"]["block"] == "dense_mlp" and "other's is cheaper there" in d2["line"]


def test_no_block_is_named_when_none_differs_beyond_noise():
    d = block_difference(_table(1), _table(2), ("A", "B"))
    assert d["named"] is None and not any(r["beyond_noise"] for r in d["rows"])
    assert d["line"].startswith("verify by block: no block differs beyond noise (largest: ")
    # a real but small difference (8%, under the 15% floor) is not named either
    assert block_difference(_table(1, n=400), _table(2, {"dense_mlp": 1.08}, n=400))["named"] is None


def test_a_session_table_comes_from_the_opened_pass_else_the_breakdown_and_says_which():
    op = {"engine": "mlx-lm", "instrumented": True, "cost": 0.2, "same_tokens": True, "passes": 2, "labels": {},
          "steps": [], "verify": [{"positions": 3, "forwards": 2,
                                   "samples": {"blocks": {"dense_mlp": [3.0, 5.0], "output_head": [1.0, 1.0]}}}]}
    bd = {"verify": {"positions": 3, "reps": 2, "samples": {"blocks": {"dense_mlp": [2.0, 2.0]}}}, "labels": {}}
    foreign = SimpleNamespace(config={"engine": {"name": "mlx-lm"}}, cases=[{"breakdown": {**bd, "engine": op}}])
    own = SimpleNamespace(config={}, cases=[{"breakdown": bd}])
    t = verify_table(foreign)
    assert t["source"] == "opened" and t["rows"][0]["blocks"]["dense_mlp"] == [3.0, 5.0]
    assert verify_table(own)["source"] == "breakdown" and verify_table(own)["engine"] == "specscope"
    lines = "\n".join(opened_lines(foreign))
    assert "mlx-lm's own forwards, opened" in lines and "verify (3 pos, 2 fwd)" in lines
    assert "Dense MLP" in lines and "4.00" in lines and "+20.0% decode time" in lines
    refused = SimpleNamespace(config={}, cases=[{"breakdown": {"engine": {"engine": "dflash-mlx", "instrumented": False,
                                                                         "reason": "its own copy"}}}])
    assert opened_lines(refused) == ["  dflash-mlx opened   not instrumented: its own copy"]
    assert opened_lines(own) == []
