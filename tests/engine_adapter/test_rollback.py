"""Verify is mlx-lm's own forward: capture for rollback keeps references and changes no computation."""

from __future__ import annotations

import sys

import mlx.core as mx
from mlx_lm.models.cache import make_prompt_cache

from specscope.engine_adapter.decoding import prefill
from specscope.engine_adapter.rollback import VerifyRollback, capturing, install_capture, linear_attention_modules


def _verify_inputs(lm, prompt, k):
    cache = make_prompt_cache(lm.model)
    last = int(mx.argmax(prefill(lm.model, cache, prompt)).item())
    return cache, mx.array([last] + [(last + 7 * (i + 1)) % lm.vocab_size for i in range(k)], dtype=mx.uint32)


def test_recurrence_runs_once_per_layer_over_all_positions(hybrid, prompt, monkeypatch):
    model = hybrid.model
    install_capture(model)
    layers = linear_attention_modules(model)
    module = sys.modules[type(layers[0][1]).__module__]
    wrapper = module.gated_delta_update
    calls = []

    def counting(q, *args, **kw):
        calls.append(q.shape[1])
        return wrapper(q, *args, **kw)

    counting.specscope_original = wrapper.specscope_original
    monkeypatch.setattr(module, "gated_delta_update", counting)
    k = 3
    cache, inputs = _verify_inputs(hybrid, prompt, k)
    rb = VerifyRollback(model, cache)
    calls.clear()
    rb.before_verify()
    with capturing() as cap:
        mx.eval(model(inputs[None], cache=cache))
    assert calls == [k + 1] * len(layers)  # one call per layer, all positions at once: no per-position loop
    rb.record(cap, k + 1, inputs)
    mx.eval(rb.rollback(1))
    assert calls == [k + 1] * len(layers)  # rollback reruns the recurrence alone, never the layer


def test_capture_changes_nothing_in_the_verify_forward(hybrid, prompt):
    model = hybrid.model
    install_capture(model)
    k = 3
    cache_a, inputs = _verify_inputs(hybrid, prompt, k)
    cache_b, _ = _verify_inputs(hybrid, prompt, k)
    VerifyRollback(model, cache_b)
    plain = model(inputs[None], cache=cache_a)
    with capturing():
        captured = model(inputs[None], cache=cache_b)
    mx.eval(plain, captured)
    assert mx.array_equal(plain, captured).item()
    for ca, cb in zip(cache_a, cache_b):
        for x, y in zip(ca.state, cb.state):
            if isinstance(x, mx.array):
                assert mx.array_equal(x, y).item()
