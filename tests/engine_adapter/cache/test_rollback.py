"""Verify is mlx-lm's own forward: capture for rollback keeps references and changes no computation."""

from __future__ import annotations

import sys

import mlx.core as mx
from mlx_lm.models.cache import make_prompt_cache

from specscope.engine_adapter.decode.decoding import prefill
from specscope.engine_adapter.cache.capture import capturing, install_capture, linear_attention_modules
from specscope.engine_adapter.cache.rollback import VerifyRollback


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
    from mlx.utils import tree_flatten

    compared = 0
    for ca, cb in zip(cache_a, cache_b):
        xs, ys = tree_flatten(ca.state), tree_flatten(cb.state)  # a Gated DeltaNet cache nests its arrays in a list
        assert [n for n, _ in xs] == [n for n, _ in ys]
        for (_, x), (_, y) in zip(xs, ys):
            if isinstance(x, mx.array):
                assert mx.array_equal(x, y).item()
                compared += 1
    # every layer's cache compared (a KV cache holds keys and values, a Gated DeltaNet cache conv and recurrent state)
    assert compared >= 2 * len(hybrid.model.layers)


def _captured_verify(hybrid, prompt, k):
    model = hybrid.model
    install_capture(model)
    cache, inputs = _verify_inputs(hybrid, prompt, k)
    VerifyRollback(model, cache)
    with capturing() as cap:
        mx.eval(model(inputs[None], cache=cache))
    return cap, [mod for _, mod in linear_attention_modules(model)]


def test_batched_rollback_equals_mlx_lm_per_layer_bit_for_bit(hybrid, prompt):
    """All layers' recurrences stacked on the batch axis give each layer exactly mlx-lm's own per-layer state."""
    from specscope.engine_adapter.cache.recurrence import _state_after, states_after

    k = 3
    cap, mods = _captured_verify(hybrid, prompt, k)
    consts: dict = {}
    for n in range(1, k + 2):
        per_layer = [_state_after(rec, n, mod) for rec, mod in zip(cap.recurrences, mods)]
        for _ in range(2):  # the second call reuses the cached stacked parameters
            batched = states_after(cap.recurrences, n, mods, consts)
            mx.eval(per_layer, batched)
            assert len(batched) == len(per_layer)
            for x, y in zip(per_layer, batched):
                assert x.shape == y.shape and x.dtype == y.dtype
                assert mx.array_equal(x, y).item()


def test_the_kernel_branch_of_the_stacked_rollback_runs_here_and_matches_the_cpu_branch(hybrid, prompt, monkeypatch):
    """The branch a Mac takes (all layers stacked into one call of mlx-lm's ``gated_delta_update``, which there is
    one Metal kernel) forced on the CPU, where mlx-lm's call runs its ops path: the stacking, the per-row parameters
    and the split back into layers give bit for bit what the CPU branch gives. This exercises the stacking, not the
    Metal kernel itself (that runs only on a Mac)."""
    from specscope.engine_adapter.cache import recurrence
    from specscope.engine_adapter.cache.recurrence import states_after

    k = 3
    cap, mods = _captured_verify(hybrid, prompt, k)
    assert len(cap.recurrences) >= 2  # a stack needs two layers of one shape
    calls = {"ops": 0, "mlx_lm": 0}
    real_ops = recurrence._ops_state_only

    def counting_ops(*a, **kw):
        calls["ops"] += 1
        return real_ops(*a, **kw)

    monkeypatch.setattr(recurrence, "_ops_state_only", counting_ops)
    cpu = [states_after(cap.recurrences, n, mods) for n in range(1, k + 2)]
    assert calls["ops"] == k + 1
    per_layer = [[recurrence._state_after(rec, n, mod) for rec, mod in zip(cap.recurrences, mods)] for n in range(1, k + 2)]
    monkeypatch.setattr(recurrence, "_takes_ops_path", lambda *a, **kw: False)
    originals = {id(sys.modules[type(m).__module__].gated_delta_update.specscope_original) for m in mods}
    assert len(originals) == 1
    for fn in {id(f): f for f in (sys.modules[type(m).__module__].gated_delta_update for m in mods)}.values():
        orig = fn.specscope_original  # count calls of mlx-lm's own function through the captured original

        def counting(*a, _orig=orig, **kw):
            calls["mlx_lm"] += 1
            return _orig(*a, **kw)

        monkeypatch.setattr(fn, "specscope_original", counting)
    kernel = [states_after(cap.recurrences, n, mods) for n in range(1, k + 2)]
    assert calls["ops"] == k + 1 and calls["mlx_lm"] == k + 1  # one stacked call per n, none per layer
    for per_n_cpu, per_n_kernel, per_n_layer in zip(cpu, kernel, per_layer):
        mx.eval(per_n_cpu, per_n_kernel, per_n_layer)
        assert len(per_n_cpu) == len(per_n_kernel) == len(per_n_layer) == len(mods)
        for x, y, z in zip(per_n_cpu, per_n_kernel, per_n_layer):
            assert x.shape == y.shape == z.shape and x.dtype == y.dtype == z.dtype
            assert mx.array_equal(x, y).item() and mx.array_equal(y, z).item()  # and each layer's own mlx-lm call


def test_state_only_ops_path_matches_mlx_lm_options(hybrid, prompt):
    """The state-only ops recurrence is mlx-lm's ops path, keywords included (pinned against mlx-lm's own call)."""
    from mlx_lm.models import gated_delta

    from specscope.engine_adapter.cache.recurrence import _ops_state_only

    cap, _ = _captured_verify(hybrid, prompt, 2)
    (q, k, v, a, b, A_log, dt_bias, state, _), _kw = cap.recurrences[0]
    for kw in ({}, {"allow_neg_eigval": True}, {"lower_bound": -5.0}):
        _, want = gated_delta.gated_delta_update(q, k, v, a, b, A_log, dt_bias, state, None, use_kernel=False, **kw)
        got = _ops_state_only(k, v, a, b, A_log, dt_bias, state, **kw)
        assert mx.array_equal(want, got).item()


def test_unusual_recurrences_fall_back_to_the_per_layer_call(hybrid, prompt):
    from specscope.engine_adapter.cache.recurrence import _state_after, states_after

    cap, mods = _captured_verify(hybrid, prompt, 2)
    recs = list(cap.recurrences)
    (q, k, v, a, b, A_log, dt_bias, state, _), kw = recs[0]
    recs[0] = ((q, k, v, a, b, A_log, dt_bias, state, mx.ones(q.shape[:2], dtype=mx.bool_)), kw)  # a mask
    got = states_after(recs, 2, mods)
    want = [_state_after(r, 2, m) for r, m in zip(recs, mods)]
    mx.eval(got, want)
    assert all(mx.array_equal(x, y).item() for x, y in zip(got, want))
