"""The tree verify (``cache.tree_verify``) on the Gated DeltaNet + attention + MoE hybrid: every node's logits equal
a plain forward along its path (relative error 0 here), the caches after keeping a path equal a fresh cache's, a node
run from the wrong parent's state is caught by the same comparison, and cache kinds a tree cannot keep exact are
refused with the reason."""

import mlx.core as mx
import pytest
from mlx_lm.models.cache import KVCache, RotatingKVCache, make_prompt_cache

from specscope.engine_adapter.cache.tree_verify import TreeForward, install_tree, refusal, verify_tree
from specscope.engine_adapter.decode.decoding import prefill
from specscope.engine_adapter.cache.tree import Tree
from specscope.engine_adapter.measure.doctor import EXACT_TOLERANCE
from specscope.engine_adapter.measure.tree_check import tree_exactness


def test_tree_verify_is_exact_and_its_negative_control_is_caught(hybrid, prompt):
    t = tree_exactness(hybrid.model, prompt, hybrid.vocab_size, EXACT_TOLERANCE)
    assert t["nodes"] == 8 and t["depth"] == 4
    assert t["max_relative_error"] == 0.0, t["node_errors"]   # bit for bit on this backend
    assert t["kept_relative_error"] == 0.0
    assert t["exact"]
    assert t["control_caught"] and t["control_relative_error"] > 10 * EXACT_TOLERANCE, t["control_relative_error"]


def test_a_chain_tree_is_a_chain_verify(hybrid, prompt):
    """A tree that is a chain gives the chain verify's logits (mlx-lm's own forward over the same tokens)."""
    model = hybrid.model
    drafts = [prompt[3], prompt[5], prompt[1]]
    a, b = make_prompt_cache(model), make_prompt_cache(model)
    install_tree(model, a)
    last = int(mx.argmax(prefill(model, a, prompt)).item())
    mx.eval(prefill(model, b, prompt))
    got, _ = verify_tree(model, a, Tree.chain(last, drafts))
    want = model(mx.array([[last, *drafts]], dtype=mx.uint32), cache=b)[0]
    assert mx.max(mx.abs(got - want)).item() <= 1e-5 * max(1.0, mx.max(mx.abs(want)).item())


@pytest.mark.slow  # the check's power over the compaction (~4 s); decoding's own control runs by default
# (tests/engine_adapter/decode/test_tree_decoding.py::test_breaking_the_kv_compaction_breaks_the_output)
def test_keeping_a_path_without_moving_its_keys_is_caught(hybrid, prompt, monkeypatch):
    """The kept-path comparison has power over the KV compaction: trimming instead of moving is caught."""

    def trim_only(self, path):
        for c in self.cache:
            if isinstance(c, KVCache) and c.keys is not None:
                c.offset = self.prefix + len(path)
        return []

    monkeypatch.setattr(TreeForward, "_keep_kv", trim_only)
    t = tree_exactness(hybrid.model, prompt, hybrid.vocab_size, EXACT_TOLERANCE)
    assert t["max_relative_error"] == 0.0 and t["kept_relative_error"] > EXACT_TOLERANCE and not t["exact"]


def test_cache_kinds_a_tree_cannot_keep_exact_are_refused(hybrid, dense):
    assert refusal(hybrid.model, make_prompt_cache(hybrid.model)) is None
    assert refusal(dense.model, make_prompt_cache(dense.model)) is None
    n = len(dense.model.layers)
    why = refusal(dense.model, [RotatingKVCache(max_size=64)] * n)
    assert why is not None and "layer 0" in why and "RotatingKVCache" in why
    assert "line up" in (refusal(dense.model, [KVCache()] * (n - 1)) or "")


def test_the_breakdown_instruments_a_tree_verify(hybrid, prompt):
    """The per-block rulers over a tree verify (``measure.tree_breakdown``): every block is timed, none is left
    uncalled."""
    from specscope.engine_adapter.measure.tree_breakdown import measure_tree_verify
    from specscope.engine_adapter.measure.tree_check import check_tree

    tree = check_tree(prompt, prompt[-1], hybrid.vocab_size)
    b = measure_tree_verify(hybrid.model, prompt, tree, reps=1, skip=False)
    assert b["positions"] == len(tree) and b["uncalled_blocks"] == []
    assert {"linear_attention", "full_attention", "moe", "output_head"} <= {k for k, v in b["blocks"].items() if v > 0}
