"""A small byte-level BPE tokenizer built offline for the synthetic demo models.

Trained on a fixed corpus shipped with the package, so the same files come out
every time and nothing is downloaded. Byte-level, so any UTF-8 text (Chinese,
code, emoji) round-trips.
"""

from __future__ import annotations

import json
from pathlib import Path

from specscope.assets import read_text

EOS = "<|endoftext|>"
SPECIALS = [EOS, "<|im_start|>", "<|im_end|>"]


def _corpus() -> list[str]:
    # Not the prompt suite itself: prompts would become single tokens.
    return [line for line in read_text("demo_corpus.txt").splitlines() if line.strip()]


def build_tokenizer(out_dir: Path, vocab_size: int) -> int:
    """Write tokenizer.json + tokenizer_config.json; return the vocabulary size."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    out_dir.mkdir(parents=True, exist_ok=True)
    tok.save(str(out_dir / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "eos_token": EOS,
        "pad_token": EOS,
        "bos_token": None,
        "unk_token": None,
        "model_max_length": 262144,
        "clean_up_tokenization_spaces": False,
        "added_tokens_decoder": {
            str(tok.token_to_id(s)): {
                "content": s,
                "special": True,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "single_word": False,
            }
            for s in SPECIALS
        },
    }
    (out_dir / "tokenizer_config.json").write_text(json.dumps(config, indent=2, sort_keys=True))
    (out_dir / "special_tokens_map.json").write_text(json.dumps({"eos_token": EOS, "pad_token": EOS}, indent=2))
    return tok.get_vocab_size()
