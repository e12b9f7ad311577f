"""The verify cost curve: the engine's real verify path, restored before every forward; routers recorded."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest
from mlx_lm.models.cache import make_prompt_cache

from families import family_dir
from specscope.engine_adapter.decode.decoding import prefill
from specscope.engine_adapter.model.loader import load_model
from specscope.engine_adapter.measure.verify_curve import VerifyPoint, continuation, measure_curve, recording_routes, routes_at


@pytest.fixture(scope="module")
def curve(hybrid, prompt):
    return measure_curve(hybrid.model, prompt, positions=3, reps=2, block_reps=1, skip=False)


def test_curve_shape(curve, prompt):
    assert curve["context"] == len(prompt) and len(curve["tokens"]) == 3
    assert [p["positions"] for p in curve["points"]] == [1, 2, 3]
    assert curve["hybrid_capture"] is True and curve["top_k"] == 4
    for p in curve["points"]:
        assert len(p["whole_ms_samples"]) == 2 and p["whole_ms_min"] <= p["whole_ms"] <= p["whole_ms_max"]
        assert {"linear_attention", "full_attention", "moe", "output_head", "other"} <= set(p["blocks"])
        assert p["block_sum_ms"] == pytest.approx(sum(p["blocks"].values()))
        assert p["inter_block_ms"] == pytest.approx(p["whole_ms"] - p["block_sum_ms"])
    assert curve["t_decode_ms"] == curve["points"][0]["whole_ms"]


def test_routes_union_grows_from_top_k(curve):
    """One token picks exactly top_k experts per layer; n tokens a union between top_k and min(E, n·top_k)."""
    for p in curve["points"]:
        routes = p["routes"]
        assert len(routes) == 8  # every MoE layer of the demo
        for calls in routes.values():
            assert len(calls) == 1
            d = calls[0]
            assert (d == 4) if p["positions"] == 1 else (4 <= d <= min(16, 4 * p["positions"]))


def test_verify_forward_is_the_model_on_the_full_sequence(hybrid, prompt):
    """The forward at the end of the context gives what a fresh prefill of context + tokens gives; restore is exact."""
    model = hybrid.model
    toks = continuation(model, prompt, 4)
    point = VerifyPoint(model, prompt)
    a = point.forward(toks)[0]
    b = point.forward(toks)[0]  # restored before the second forward: identical
    assert mx.array_equal(a, b)
    cache = make_prompt_cache(model)
    ref = prefill(model, cache, prompt + toks[:-1])  # logits after the last token but one
    mx.eval(ref)
    np.testing.assert_allclose(np.array(a[-2]), np.array(ref), rtol=1e-4, atol=1e-4)


def test_recording_changes_nothing(families_root):
    lm = load_model(family_dir("qwen3_moe", families_root))
    toks = list(range(5, 10))
    point = VerifyPoint(lm.model, list(range(1, 12)))
    plain = point.forward(toks)
    with recording_routes(lm.model) as distinct:
        rec = point.forward(toks)
        got = distinct()
    assert mx.array_equal(plain, rec)
    assert len(got) == 3 and all(2 <= d[0] <= 8 for d in got.values())
    assert routes_at(point, toks[:1]) == {p: [2] for p in got}  # top-2, one token
    assert type(lm.model.layers[0].mlp.switch_mlp).__name__ == "SwitchGLU"  # class restored


def test_dense_model_has_no_routes(families_root):
    lm = load_model(family_dir("qwen3_tied", families_root))
    c = measure_curve(lm.model, list(range(1, 9)), positions=2, reps=1, block_reps=0)
    assert all("routes" not in p and "blocks" not in p for p in c["points"])
    assert c["top_k"] is None


def test_bad_arguments(hybrid, prompt):
    with pytest.raises(ValueError):
        measure_curve(hybrid.model, prompt, positions=0)
    with pytest.raises(ValueError):
        measure_curve(hybrid.model, prompt, positions=18)
    with pytest.raises(ValueError):
        VerifyPoint(hybrid.model, [])
