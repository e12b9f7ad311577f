"""A safetensors file's JSON header (names, dtypes, shapes), read without loading a tensor: a leaf that imports no
MLX, so readers of small files (``checkpoint``, ``dflash_format``) can be used where MLX must not be imported."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from specscope.errors import SpecscopeError


def read_safetensors_header(path: Path) -> dict:  # dict: the file's JSON header, tensor name -> its entry
    """The JSON header of a safetensors file (names, dtypes, shapes), checked against the file size."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) < 8:
            raise SpecscopeError(f"{path.name} is truncated (no safetensors header)")
        (n,) = struct.unpack("<Q", raw)
        if n <= 0 or n > min(size - 8, 100 * 2**20):
            raise SpecscopeError(f"{path.name} is not a valid safetensors file (bad header length)")
        try:
            header = json.loads(f.read(n))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise SpecscopeError(f"{path.name} is not a valid safetensors file ({exc})") from None
    end = 8 + n + max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
    if end > size:
        raise SpecscopeError(f"{path.name} is truncated: {size} bytes on disk, header says {end}")
    return header
