"""The tiny family models (families.py) load through specscope's loader and decode without collapsing.

A model stuck on one repeated token would hide rollback errors in every test built on these
models, so each family's greedy continuation must stay varied.
"""

from __future__ import annotations

import pytest
from mlx_lm.models.cache import make_prompt_cache

import families
from families import FAMILIES, UNBUILDABLE, family_dir
from specscope.engine_adapter.model.checkpoint import open_checkpoint
from specscope.engine_adapter.decode.decoding import plain_generate
from specscope.engine_adapter.model.loader import load_model
from specscope.engine_adapter.decode.records import tokens_of

PROMPT = "Explain why a verification pass over several tokens can cost as much as decoding."
N_TOKENS = 24
MIN_DISTINCT = 6


def _text_config(config: dict) -> dict:
    return {**config, **config.get("text_config", {})}


def test_family_table_is_consistent():
    assert not set(FAMILIES) & set(UNBUILDABLE)
    for name, config in FAMILIES.items():
        text = _text_config(config)
        assert text["max_position_embeddings"] >= 512, name
        assert "quantization" not in config, name
    tied = {n for n, c in FAMILIES.items() if _text_config(c).get("tie_word_embeddings")}
    assert {"qwen3_tied", "llama_tied"} <= tied


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_loads_and_decodes_varied_tokens(family, families_root, monkeypatch):
    path = family_dir(family, families_root)
    monkeypatch.setattr(families, "build_family", lambda *a, **k: pytest.fail("the family model was built again"))
    assert family_dir(family, families_root) == path  # built once, then reused

    ck = open_checkpoint(path)
    assert ck.model_type == FAMILIES[family]["model_type"]
    assert set(ck.tensor_dtypes.values()) == {"F32"}, "weights must stay float32, unquantized"

    lm = load_model(path)
    assert len(make_prompt_cache(lm.model)) >= 1

    prompt = lm.encode(PROMPT)
    assert len(prompt) > 8  # longer than the sliding windows (8), so rotating caches wrap
    out = tokens_of(list(plain_generate(lm.model, prompt, N_TOKENS)))
    assert len(out) == N_TOKENS
    assert len(set(out)) >= MIN_DISTINCT, f"{family}: greedy output collapsed onto {sorted(set(out))}"
