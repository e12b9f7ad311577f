"""Commands about a model checkpoint: ``demo-model`` (write one) and ``inspect`` (describe one); ``check`` (can
specscope profile it correctly?) is ``cli.check``, measured in the worker."""

from __future__ import annotations

import json

from specscope.errors import SpecscopeError

from specscope.profiler.cli.common import resolve_model_args


def cmd_demo_model(a) -> int:
    from specscope.engine_adapter.model.demo_model import build_demo_model

    if getattr(a, "dflash", False) or getattr(a, "dflash2", False):
        return _cmd_dflash(a)
    if a.shape or a.layers is not None:
        return _cmd_real_shape(a)
    kind = "dense" if a.dense else ("draft" if a.draft else "hybrid")
    if a.random or kind == "dense":  # no trained dense model: --dense is always random
        path = build_demo_model(a.path, kind=kind, seed=a.seed)
    else:
        from specscope.engine_adapter.model.demo_model import copy_trained_demo

        path = copy_trained_demo(a.path, kind)
    print(f"wrote {kind} demo model to {path}")
    return 0


def _cmd_dflash(a) -> int:
    from specscope.engine_adapter.model.dflash2_demo import build_dflash2_demo
    from specscope.engine_adapter.model.dflash_demo import build_dflash_demo, demo_target_config

    flag = "--dflash2" if getattr(a, "dflash2", False) else "--dflash"
    if a.layers is not None and not a.shape:
        raise SpecscopeError(f"--layers needs --shape (e.g. {flag} --shape qwen3.5-35b-a3b --layers 4)")
    if a.block_size < 2:
        raise SpecscopeError(f"--block-size must be at least 2 (one anchor and a draft), not {a.block_size}")
    text, name, full = demo_target_config("random" if a.random else "trained", a.shape, a.layers)
    build = build_dflash2_demo if flag == "--dflash2" else build_dflash_demo
    path = build(a.path, text, name, full, seed=a.seed, block_size=a.block_size)
    ids = json.loads((path / "config.json").read_text())["dflash_config"]["target_layer_ids"]
    what = "DFlash2 drafter (candidate selector)" if flag == "--dflash2" else "DFlash drafter"
    print(f"wrote a random {what} (block {a.block_size}, reads target layers {ids}) for {name} to {path}")
    return 0


def _cmd_real_shape(a) -> int:
    if not a.shape:
        raise SpecscopeError("--layers needs --shape (e.g. --shape qwen3.5-35b-a3b --layers 4)")
    if a.dense or a.draft:
        raise SpecscopeError("--shape writes the released model's own layout; it does not combine with --dense or --draft")
    from specscope.engine_adapter.model.real_shape import FULL_LAYERS, SHAPES, build_real_shape_model, text_config

    from specscope.profiler.cli.progress import progress_bar, progress_wanted

    layers = a.layers if a.layers is not None else 4
    if a.shape not in SHAPES:
        raise SpecscopeError(f"unknown --shape {a.shape!r}; known: {', '.join(SHAPES)}")
    text_config(a.shape, layers)  # refuses a bad --layers before anything is written
    with progress_bar("writing", total=layers + 3, unit="part", enabled=progress_wanted(a)) as bar:
        def step(done, total, what):
            bar.update_to(done, what)
        path = build_real_shape_model(a.path, shape=a.shape, layers=layers, seed=a.seed, progress=step)
    print(f"wrote {a.shape} at its released dimensions, {layers} of {FULL_LAYERS[a.shape]} layers, "
          f"random 4-bit weights, to {path}")
    return 0


def cmd_inspect(a) -> int:
    if not a.path and not a.demo:
        raise SpecscopeError("give a model (a folder or a cached repo id like org/name) or --demo")
    resolve_model_args(a)  # before the engine is imported: it switches the hub libraries offline
    from specscope.engine_adapter.model.dflash_format import is_dflash_folder

    if a.path and is_dflash_folder(a.path):
        return _inspect_dflash(a)
    from specscope.engine_adapter.model.demo_model import default_demo_path
    from specscope.engine_adapter.model.inspect_model import describe_path, format_description
    d = describe_path(a.path or default_demo_path("hybrid"), allow_oversize=a.allow_oversize)
    print(json.dumps(d, indent=1) if a.json else format_description(d))
    return 0


def _inspect_dflash(a) -> int:
    """A DFlash drafter folder: its block, the target layers it reads, the target shape it fits, and whether it fits
    the demo targets (and ``--target``, when given)."""
    from specscope.engine_adapter.model.dflash_format import format_spec, misfits, read_dflash
    from specscope.engine_adapter.model.dflash_demo import demo_target_config

    spec = read_dflash(a.path)
    fits = []
    for kind in ("trained", "random"):
        try:
            text, name, _ = demo_target_config(kind)
        except SpecscopeError:
            continue
        fits.append((name, misfits(spec, text)))
    target = getattr(a, "target", None)
    if target:
        from specscope.engine_adapter.model.checkpoint import open_checkpoint

        ck = open_checkpoint(target)
        fits.insert(0, (ck.path.name, misfits(spec, ck.text_config)))
    if a.json:
        print(json.dumps({**spec.describe(), "fits": {n: (not why) for n, why in fits},
                          "misfits": {n: why for n, why in fits if why}}, indent=1))
    else:
        print(format_spec(spec, fits))
    return 0
