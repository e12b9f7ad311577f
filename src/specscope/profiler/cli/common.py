"""What every ``specscope`` command shares: the error line, the refusal of bad output paths, model references.

``main`` (the ``specscope`` command), ``roofline``, ``tune`` and ``trace`` import it; it imports none of them.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from specscope.errors import SpecscopeError


def fail(msg: str, code: int = 2) -> int:
    """Say ``msg`` as specscope's error line on stderr; return the exit code."""
    print(f"specscope: error: {msg}", file=sys.stderr)
    return code


def check_output_path(path: str, force: bool) -> Path:
    """Refuse to clobber or to write where we cannot, before any work is done."""
    p = Path(path).expanduser()
    if p.exists() and p.is_dir():
        raise SpecscopeError(f"{p} is a directory; give a file name")
    if p.exists() and not force:
        raise SpecscopeError(f"{p} already exists; pass --force to overwrite it")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.exists():
        raise SpecscopeError(f"cannot write {p}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise SpecscopeError(f"cannot write {p}: folder {parent} is not writable")
    return p


def add_download_arg(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--download", action="store_true",
                    help="fetch a repo id missing from the local Hugging Face cache (safetensors, config and tokenizer "
                         "files only; nothing touches the network without this)")


def add_dtype_arg(ap: argparse.ArgumentParser) -> None:
    from specscope.engine_adapter.params import COMPUTE_DTYPES

    ap.add_argument("--dtype", choices=COMPUTE_DTYPES, default=None,
                    help="cast the model's floating parameters (norms, embeddings, quantization scales; 4-bit weights stay "
                         "4-bit) to this dtype before running: on a CPU, MLX's bfloat16 kernels run about 10x slower than "
                         "float32 (default: the checkpoint's own; the session records it)")


MODEL_ARGS = {"model": "model", "draft_model": "draft model", "mtp_weights": "MTP weights", "path": "model",
              "target": "target model"}


def resolve_model_args(a) -> None:
    """Turn every model reference on the command line into a local folder, fetching only with --download."""
    from specscope.model_ref import resolve_model

    for attr, what in MODEL_ARGS.items():
        spec = getattr(a, attr, None)
        if not spec:
            continue
        if attr == "mtp_weights" and Path(spec).expanduser().is_dir():
            continue  # a folder of tensors need not be a whole model folder
        setattr(a, attr, resolve_model(spec, download=getattr(a, "download", False), what=what).path)
