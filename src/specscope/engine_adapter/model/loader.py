"""Load a local checkpoint through mlx-lm's own loader: no hub, no remote code."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from specscope.errors import SpecscopeError

from specscope.engine_adapter.model.checkpoint import Checkpoint, open_checkpoint

if TYPE_CHECKING:  # annotations only: mlx is imported where a model is loaded
    import mlx.nn as nn
    from mlx_lm.tokenizer_utils import TokenizerWrapper

# Nothing in specscope fetches from a hub unless the user asks; make sure a
# library default cannot either.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


@dataclass
class LoadedModel:
    checkpoint: Checkpoint
    model: nn.Module
    tokenizer: TokenizerWrapper
    config: dict
    compute_dtype: str | None = None  # set: the floating parameters were cast to it on load (``cast_floating``)

    @property
    def path(self) -> Path:
        return self.checkpoint.path

    @property
    def vocab_size(self) -> int:
        return int(self.checkpoint.text_config.get("vocab_size") or 0)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text))

    def decode(self, tokens: list[int]) -> str:
        return self.tokenizer.decode(tokens)


def system_memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


# A model whose weights take more than this share of memory is refused (and flagged by inspect and the app).
MEMORY_LIMIT_FRACTION = 0.9


def check_memory(ck: Checkpoint, allow_oversize: bool = False) -> None:
    total = system_memory_bytes()
    if total and not allow_oversize and ck.file_bytes > MEMORY_LIMIT_FRACTION * total:
        raise SpecscopeError(
            f"{ck.path.name} needs about {ck.file_bytes / 2**30:.1f} GiB for weights alone but this machine has "
            f"{total / 2**30:.1f} GiB; pass --allow-oversize to try anyway"
        )


def cast_floating(module, dtype: str | None) -> None:
    """Cast a module's floating parameters (norms, embeddings, quantization scales and biases) to ``dtype``; packed
    quantized weights stay as they are. None: nothing changes."""
    if dtype is None:
        return
    import mlx.core as mx

    from specscope.engine_adapter.params import COMPUTE_DTYPES

    if dtype not in COMPUTE_DTYPES:
        raise SpecscopeError(f"unknown dtype {dtype!r}: one of {', '.join(COMPUTE_DTYPES)}")
    module.set_dtype(getattr(mx, dtype))  # mlx.nn casts floating arrays only
    mx.eval(module.parameters())


def load_model(path: str | os.PathLike, allow_oversize: bool = False, dtype: str | None = None) -> LoadedModel:
    ck = open_checkpoint(path)
    check_memory(ck, allow_oversize)
    from mlx_lm.utils import load_model as mlx_load_model
    from mlx_lm.utils import load_tokenizer

    try:
        model, config = mlx_load_model(ck.path, lazy=False, trust_remote_code=False, get_model_classes=model_classes_without_mtp)
    except SpecscopeError:
        raise
    except Exception as exc:  # mlx-lm raises ValueError/KeyError/RuntimeError on bad weights
        raise SpecscopeError(f"could not load weights from {ck.path}: {type(exc).__name__}: {exc}") from None
    try:
        tokenizer = load_tokenizer(ck.path, eos_token_ids=config.get("eos_token_id"))
    except Exception as exc:
        raise SpecscopeError(f"could not load the tokenizer in {ck.path}: {type(exc).__name__}: {exc}") from None
    cast_floating(model, dtype)
    return LoadedModel(checkpoint=ck, model=model, tokenizer=tokenizer, config=config, compute_dtype=dtype)


def model_classes_without_mtp(config: dict):
    """mlx-lm's classes, with a sanitize that also drops MTP layers stored as ``model.layers.{N}`` (N >= the
    trunk's layer count). mlx-lm drops only ``model.layers.61`` (DeepSeek-V3's own count); other depths
    would fail its strict load. The MTP drafter reads those tensors from the files itself."""
    from specscope.engine_adapter.mlx_lm_compat import get_classes

    model_class, args_class = get_classes(config)
    n = (config.get("text_config") or {}).get("num_hidden_layers") or config.get("num_hidden_layers")
    original = getattr(model_class, "sanitize", None)
    if not n or original is None:
        return model_class, args_class
    pattern = re.compile(r"^(?:model\.)?(?:language_model\.)?(?:model\.)?layers\.(\d+)\.")

    def sanitize(self, weights):
        from specscope.engine_adapter.mlx_types import flat

        weights = original(self, weights)
        own = {k for k, _ in flat(self.parameters())}

        def mtp_only(k: str) -> bool:  # never drop a tensor the model itself declares
            if k in own:
                return False
            m = pattern.match(k)
            return bool(m and int(m.group(1)) >= n) or k.startswith("mtp.") or ".mtp." in k

        return {k: v for k, v in weights.items() if not mtp_only(k)}

    return type(model_class.__name__, (model_class,), {"sanitize": sanitize}), args_class


def check_same_vocabulary(target: LoadedModel, draft: LoadedModel) -> None:
    """A draft model must speak the target's tokens: refuse a mismatch before decoding anything."""
    tv, dv = target.tokenizer.vocab_size, draft.tokenizer.vocab_size
    if tv != dv or target.tokenizer.get_vocab() != draft.tokenizer.get_vocab():
        raise SpecscopeError(
            f"draft model {draft.path.name} has a different vocabulary from {target.path.name} "
            f"({dv} vs {tv} tokens); a draft model must share the target's tokenizer"
        )
