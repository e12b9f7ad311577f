"""The config.json records (``engine_adapter.model.config_json``) name every field the configs specscope writes hold,
so the record stays the truth about them; reading one is a record or None, never an exception."""

from __future__ import annotations

from specscope.engine_adapter.model import demo_model, dflash_demo, real_shape
from specscope.engine_adapter.model.config_json import ModelConfig, TextConfig, read_config, text_of

_TEXT = set(TextConfig.__optional_keys__)
_MODEL = set(ModelConfig.__optional_keys__)


def _undeclared(config: dict, keys: set[str]) -> set[str]:
    return set(config) - keys


def test_every_field_the_generated_configs_write_is_in_the_records():
    for kind in demo_model.DEMO_KINDS:
        text = demo_model.demo_text_config(kind, demo_model.VOCAB_TARGET)
        assert not _undeclared(dict(text), _TEXT), kind
        assert not _undeclared(dict(demo_model._config(kind, demo_model.VOCAB_TARGET)), _MODEL), kind
    shape = real_shape._config(real_shape.SHAPES[0], 4)
    assert not _undeclared(dict(shape), _MODEL)
    assert not _undeclared(dict(shape["text_config"]), _TEXT)
    drafter = dflash_demo.dflash_config(demo_model.demo_text_config("hybrid", demo_model.VOCAB_TARGET), 8)
    assert not _undeclared(dict(drafter), _MODEL)


def test_a_text_config_is_the_top_level_under_its_text_config():
    config: ModelConfig = {"model_type": "qwen3_5_moe", "tie_word_embeddings": False,
                           "text_config": {"model_type": "qwen3_5_moe_text", "hidden_size": 64}}
    assert text_of(config)["model_type"] == "qwen3_5_moe_text" and text_of(config)["tie_word_embeddings"] is False
    assert text_of({"model_type": "qwen3", "hidden_size": 32})["hidden_size"] == 32


def test_reading_a_config_is_a_record_or_none(tmp_path):
    assert read_config(tmp_path) is None  # no config.json
    (tmp_path / "config.json").write_text("[1, 2]")
    assert read_config(tmp_path) is None  # not a JSON object
    (tmp_path / "config.json").write_text("{not json")
    assert read_config(tmp_path) is None
    (tmp_path / "config.json").write_text('{"model_type": "qwen3", "some_family_option": 3}')
    got = read_config(tmp_path)
    assert got is not None and got["model_type"] == "qwen3"
    assert dict(got)["some_family_option"] == 3  # what specscope does not use passes through
