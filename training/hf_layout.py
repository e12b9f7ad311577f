"""Rewrite an exported Qwen3.5 demo target in the original checkpoint's layout, or back.

The demo keeps its MTP head (``mtp.*``) beside the trunk, as an original Qwen3.5 checkpoint does, but ``export`` wrote
the trunk as mlx-lm's ``sanitize`` leaves it: conv1d weights ``[C, K, 1]`` and RMSNorm weights as used (1 + w). mlx-lm
reads such a folder differently across versions: 0.31.3 takes any checkpoint with ``mtp.*`` weights for an original
one and adds 1 to its norms again, 0.32 only one whose conv1d is ``[C, 1, K]``; the demo's logits differed by up to 26
between them, so the method's reference code (which pins mlx-lm 0.31.3 on macOS) saw another target. In the original
layout (conv1d ``[C, 1, K]``, norms stored as w, zero-centred) both versions sanitize it alike (logits within 1e-5:
the remaining difference is 0.32's q/k-norm eps).

    python training/hf_layout.py FOLDER              # in place, to the original layout (idempotent)
    python training/hf_layout.py FOLDER --to mlx     # back (e.g. before train_demo.py --init-export FOLDER)
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import mlx.core as mx

NORMS = (".input_layernorm.weight", ".post_attention_layernorm.weight", "model.norm.weight", ".q_norm.weight",
         ".k_norm.weight")  # the keys mlx-lm's qwen3_5 sanitize shifts (the trunk's; mtp.* is dropped by it)


def is_original(weights: dict) -> bool:
    return any("conv1d.weight" in k and "mtp." not in k and v.shape[-1] != 1 for k, v in weights.items())


def convert(folder: Path, to: str) -> int:
    """Rewrite every safetensors file of ``folder`` whose trunk is in the other layout; returns the tensors changed."""
    files = sorted(folder.glob("*.safetensors"))
    everything = {}
    for f in files:
        everything.update(mx.load(str(f)))
    if is_original(everything) == (to == "original"):
        return 0  # already there
    changed = 0
    for f in files:
        w, meta = mx.load(str(f), return_metadata=True)
        touched = False
        for k, v in list(w.items()):
            if "mtp." in k:
                continue
            if "conv1d.weight" in k:
                w[k] = v.moveaxis(1, 2) if to == "original" else v.moveaxis(2, 1)
                touched, changed = True, changed + 1
            elif any(k.endswith(s) for s in NORMS) and v.ndim == 1:
                shift = -1.0 if to == "original" else 1.0
                w[k] = (v.astype(mx.float32) + shift).astype(v.dtype)
                touched, changed = True, changed + 1
        if touched:
            tmp = f.with_name(f.name + ".tmp.safetensors")
            mx.save_safetensors(str(tmp), w, metadata=meta)
            os.replace(tmp, f)
    return changed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--to", choices=("original", "mlx"), default="original")
    a = ap.parse_args()
    print(f"{convert(a.folder, a.to)} tensors rewritten ({a.to} layout) in {a.folder}")


if __name__ == "__main__":
    main()
