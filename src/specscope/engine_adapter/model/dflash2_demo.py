"""Random DFlash2 drafters in the published format, for tests and for the demo targets.

The folder is ``dflash_demo``'s DFlash drafter (same sizes, target layers, mask token, block) with what DFlash2 adds
(``dflash2_format``): ``architectures: ["DFlash2DraftModel"]``, every layer ``sliding_attention`` with a window,
``is_causal: false``, the grouped dynamic convolutions and the candidate selector, as the reference's fixture has
them (kernel 2, groups of 16), with a smaller rank and top-K to fit the demo's 4096-token vocabulary.

The weights are random and seeded, scaled so that each part matters: the convolutions start near the identity (tap 0
of the static kernel 1, the rest small) so the block still reads its context, and the codebooks are scaled so the
selector's edge term (about ``selector_rank ** 0.5`` products) is of the order of a logit, so the walk often picks
other than the drafter's argmax and q differs from the drafter's softmax: a test that confuses them can see it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from specscope.engine_adapter.model.config_json import ModelConfig, TextConfig
from specscope.engine_adapter.model.dflash_format import DFLASH_DEMO_BLOCK
from specscope.errors import SpecscopeError

DFLASH2_DEMO = {"conv_kernel_size": 2, "conv_group_size": 16, "selector_rank": 32, "selector_top_k": 8}
DFLASH2_DEMO_WINDOW = 64  # short enough that a test's context runs past it
EDGE_SCALE = 1.2  # the selector's edge term's standard deviation, roughly, in logits


def dflash2_config(text: TextConfig, full_layers: int, block_size: int = DFLASH_DEMO_BLOCK,
                   window: int = DFLASH2_DEMO_WINDOW, softcap: float | None = 30.0, output_multiplier: float = 1.0,
                   top_k: int = DFLASH2_DEMO["selector_top_k"]) -> ModelConfig:
    """The DFlash2 drafter's config.json for a target with this text config (``full_layers``: its released depth)."""
    from specscope.engine_adapter.model.dflash_demo import dflash_config

    c = dflash_config(text, full_layers, block_size)
    if c["hidden_size"] % DFLASH2_DEMO["conv_group_size"]:
        raise SpecscopeError(f"a DFlash2 demo drafter needs a hidden size divisible by {DFLASH2_DEMO['conv_group_size']}")
    c["architectures"] = ["DFlash2DraftModel"]
    c["is_causal"] = False
    c["layer_types"] = ["sliding_attention"] * c["num_hidden_layers"]
    c["sliding_window"] = window
    dc = c["dflash_config"]
    dc["conv_kernel_size"], dc["conv_group_size"] = DFLASH2_DEMO["conv_kernel_size"], DFLASH2_DEMO["conv_group_size"]
    dc["selector_rank"], dc["selector_top_k"], dc["output_multiplier"] = DFLASH2_DEMO["selector_rank"], top_k, output_multiplier
    if softcap:
        dc["final_logit_softcapping"] = softcap
    return c


def _weight(name: str, shape: list[int], key, rank: int):
    import mlx.core as mx

    from specscope.engine_adapter.model.demo_model import BRANCH_GAIN

    if name.endswith("base_kernel"):  # [2, K, H]: tap 0 near 1, later taps small
        w = 0.1 * mx.random.normal(shape, key=key)
        return w + mx.concatenate([mx.ones((2, 1, shape[2])), mx.zeros((2, shape[1] - 1, shape[2]))], axis=1)
    if name.endswith("_codebook"):
        return mx.random.normal(shape, key=key) * (EDGE_SCALE ** 0.5) * rank ** -0.25
    if len(shape) == 1:
        return mx.ones(shape)
    w = mx.random.normal(shape, key=key) * shape[-1] ** -0.5
    if name.endswith("kernel_projection.weight"):
        return w * 0.1
    if name.endswith(("o_proj.weight", "down_proj.weight")):
        return w * BRANCH_GAIN
    return w


def build_dflash2_demo(path: str | os.PathLike, text: TextConfig, target_name: str, full_layers: int | None = None,
                       seed: int = 0, block_size: int = DFLASH_DEMO_BLOCK, **config) -> Path:
    """Write a random DFlash2 drafter for a target with this text config at ``path`` (atomically); ``config``:
    ``dflash2_config``'s options (window, softcap, output_multiplier, top_k)."""
    import mlx.core as mx

    from specscope.engine_adapter.model.demo_model import model_folder
    from specscope.engine_adapter.model.dflash2_format import as_dflash2
    from specscope.engine_adapter.model.dflash_demo import DFLASH_FORMAT_VERSION, spec_of_config
    from specscope.engine_adapter.model.dflash_format import read_dflash

    path = Path(path).expanduser()
    if path.exists() and any(path.iterdir()):
        raise SpecscopeError(f"{path} exists and is not empty; choose a new directory")
    full = full_layers or int(text["num_hidden_layers"])
    c = dflash2_config(text, full, block_size, **config)
    c["specscope_demo"] = {"kind": "dflash2", "target": target_name, "seed": seed, "format_version": DFLASH_FORMAT_VERSION}
    with model_folder(path, prefix=".dflash2-") as tmp:
        (tmp / "config.json").write_text(json.dumps(c, indent=2))
        shapes = as_dflash2(spec_of_config(c, tmp), "the demo DFlash2 drafter").expected_shapes()
        weights = {}
        for i, (name, shape) in enumerate(sorted(shapes.items())):
            w = _weight(name, shape, mx.random.key(seed * 1_000_003 + 11 + i), c["dflash_config"]["selector_rank"])
            weights[name] = w.astype(mx.bfloat16)
            mx.eval(weights[name])
        mx.save_safetensors(str(tmp / "model.safetensors"), weights, metadata={"format": "pt"})
        read_dflash(tmp)  # the folder reads back in the format it claims
    return path
