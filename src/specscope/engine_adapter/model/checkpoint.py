"""Find and check a local mlx-lm checkpoint before anything heavy is loaded.

Everything here reads small files only (config.json, safetensors headers), so
errors come out in milliseconds with a message that says what to fix.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from specscope.errors import SpecscopeError

from specscope.engine_adapter.model.config_json import ModelConfig, TextConfig, text_of
from specscope.engine_adapter.model.safetensors_header import read_safetensors_header

TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "tiktoken.model", "vocab.json")


@dataclass
class Checkpoint:
    """A model directory that passed the cheap checks."""

    path: Path
    config: ModelConfig
    weight_files: list[Path]
    tensor_shapes: dict[str, list[int]] = field(default_factory=dict)
    tensor_dtypes: dict[str, str] = field(default_factory=dict)
    file_bytes: int = 0

    @property
    def model_type(self) -> str:
        return self.config.get("model_type", "")

    @property
    def text_config(self) -> TextConfig:
        return text_of(self.config)

    def mtp_keys(self) -> list[str]:
        """Names of the tensors of the checkpoint's own MTP head, in either naming (see ``is_mtp_key``)."""
        n = self.text_config.get("num_hidden_layers")
        first = n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None
        return [k for k in self.tensor_shapes if is_mtp_key(k, first)]


# Where a trunk's decoder layers live in a checkpoint's (original or mlx-lm) naming.
_TRUNK_LAYER_PREFIXES = ("model.layers.", "language_model.model.layers.", "model.language_model.layers.")


def mtp_layer_index(name: str, first_mtp_layer: int | None) -> int | None:
    """The layer index of a DeepSeek-V3 / GLM-4.5 style MTP tensor (``model.layers.{i}.*``, i >= the trunk's
    layer count), else None."""
    if first_mtp_layer is None:
        return None
    for prefix in _TRUNK_LAYER_PREFIXES:
        if name.startswith(prefix):
            idx, _, rest = name[len(prefix) :].partition(".")
            if idx.isdigit() and rest and int(idx) >= first_mtp_layer:
                return int(idx)
    return None


def is_mtp_key(name: str, first_mtp_layer: int | None = None) -> bool:
    """A tensor of the checkpoint's MTP head. Two namings exist:

    - Qwen3.5 / Qwen3-Next: ``mtp.*`` (``mtp.fc``, ``mtp.layers.0.*``, ``mtp.norm``...);
    - DeepSeek-V3 / GLM-4.5: the layers past the trunk, ``model.layers.{i}.*`` with
      ``i >= num_hidden_layers`` (``enorm``, ``hnorm``, ``eh_proj``, ``shared_head.*`` and a
      full decoder layer); recognised only when ``first_mtp_layer`` (the trunk's layer count) is given.
    """
    if name.startswith("mtp.") or ".mtp." in name:
        return True
    return mtp_layer_index(name, first_mtp_layer) is not None


def mtp_naming(names, model_type: str = "") -> str | None:
    """Which MTP naming a set of MTP tensor names uses: "qwen3_5", "qwen3_next", "deepseek_v3" (also GLM-4.5), or None."""
    names = list(names)
    if any(k.startswith("mtp.") or ".mtp." in k for k in names):
        return "qwen3_next" if model_type.startswith("qwen3_next") else "qwen3_5"
    return "deepseek_v3" if names else None


def resolve_model_dir(path: str | os.PathLike) -> Path:
    """A directory holding config.json: a folder, a Hugging Face cache entry, or a cached repo id (never the network)."""
    from specscope.model_ref import resolve_model

    return Path(resolve_model(path).path)


def open_checkpoint(path: str | os.PathLike) -> Checkpoint:
    d = resolve_model_dir(path)
    try:
        config = json.loads((d / "config.json").read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SpecscopeError(f"{d / 'config.json'} is not valid JSON: {exc}") from None
    if not isinstance(config, dict) or "model_type" not in config:
        raise SpecscopeError(f"{d / 'config.json'} has no model_type: not an mlx-lm / Hugging Face config")
    if config.get("model_file"):
        raise SpecscopeError(f"{d.name} needs custom model code ({config['model_file']}); specscope never runs remote code")
    check_architecture(config)
    files = sorted(d.glob("*.safetensors"))
    if not files:
        if list(d.glob("*.bin")) or list(d.glob("*.pt")) or list(d.glob("*.pth")):
            raise SpecscopeError(f"{d} has only pickle weights (.bin/.pt); specscope loads safetensors only")
        raise SpecscopeError(f"no .safetensors weight files in {d}")
    if not any((d / t).exists() for t in TOKENIZER_FILES):
        raise SpecscopeError(f"no tokenizer in {d} (expected one of {', '.join(TOKENIZER_FILES)})")
    ck = Checkpoint(path=d, config=cast(ModelConfig, config), weight_files=files)
    for f in files:
        header = read_safetensors_header(f)
        ck.file_bytes += f.stat().st_size
        for name, meta in header.items():
            if name == "__metadata__":
                continue
            ck.tensor_shapes[name] = list(meta["shape"])
            ck.tensor_dtypes[name] = meta["dtype"]
    return ck


def check_architecture(config: dict) -> None:
    """Refuse a model_type mlx-lm has no module for, with a clear message."""
    from specscope.engine_adapter.mlx_lm_compat import get_classes

    model_type = config.get("model_type")
    if not isinstance(model_type, str) or not model_type.replace("_", "").replace("-", "").isalnum():
        raise SpecscopeError(f"config.json has an invalid model_type {model_type!r}")
    try:
        get_classes(config)
    except (ValueError, ImportError):
        raise SpecscopeError(
            f"unknown architecture model_type={model_type!r}: the installed mlx-lm has no model for it"
        ) from None
