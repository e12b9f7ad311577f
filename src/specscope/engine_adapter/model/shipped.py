"""Where the shipped trained demo lives (``specscope/assets/demo_trained``): a leaf without MLX, so the app's setup
and the run's settings can name the demo's drafters without importing the modules that build models."""

from __future__ import annotations

from pathlib import Path

# folder names: the model names shown; "dflash" is the DFlash drafter trained for the hybrid (training/train_dflash.py)
TRAINED_KINDS = {"hybrid": "tiny-trained-demo", "draft": "tiny-trained-demo-draft", "dflash": "tiny-trained-demo-dflash",
                 "dflash2": "tiny-trained-demo-dflash2"}


def trained_demo_path(kind: str = "hybrid") -> Path | None:
    """The shipped trained demo (``specscope/assets/demo_trained``), or None where this install lacks it.

    Trained offline by ``training/train_demo.py`` (see training/README.md); nothing is built at run time.
    There is no trained dense model: ``dense`` is always the random one.
    """
    from specscope.assets import path as asset_path

    sub = TRAINED_KINDS.get(kind)
    if sub is None:
        return None
    p = asset_path("demo_trained") / sub
    return p if (p / "config.json").exists() else None
