"""Commands about a model checkpoint: ``demo-model`` (write one), ``inspect`` (describe one) and ``check`` (can
specscope profile it correctly?)."""

from __future__ import annotations

import json

from specscope.errors import SpecscopeError

from specscope.profiler.cli.common import resolve_model_args


def cmd_demo_model(a) -> int:
    from specscope.engine_adapter.model.demo_model import build_demo_model

    if getattr(a, "dflash", False):
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
    from specscope.engine_adapter.model.dflash_demo import build_dflash_demo, demo_target_config

    if a.layers is not None and not a.shape:
        raise SpecscopeError("--layers needs --shape (e.g. --dflash --shape qwen3.5-35b-a3b --layers 4)")
    text, name, full = demo_target_config("random" if a.random else "trained", a.shape, a.layers)
    path = build_dflash_demo(a.path, text, name, full, seed=a.seed, block_size=a.block_size)
    ids = json.loads((path / "config.json").read_text())["dflash_config"]["target_layer_ids"]
    print(f"wrote a random DFlash drafter (block {a.block_size}, reads target layers {ids}) for {name} to {path}")
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


def cmd_check(a) -> int:
    if getattr(a, "model_flag", None):
        if a.path and a.path != a.model_flag:
            raise SpecscopeError(f"two models given: {a.path} and --model {a.model_flag}; give one")
        a.path = a.model_flag
    if not a.path and not a.demo:
        raise SpecscopeError("give a model (a folder or a cached repo id like org/name) or --demo")
    resolve_model_args(a)
    from specscope.engine_adapter.measure.doctor import REFUSED, format_report, full_report
    from specscope.engine_adapter.model.demo_model import default_demo_path
    from specscope.engine_adapter.model.loader import load_model

    from specscope.profiler.cli.progress import progress_bar, progress_wanted

    if getattr(a, "engine", None):
        return _check_engine(a)
    if getattr(a, "drafter", None) in ("draft", "auto"):
        raise SpecscopeError(f"--drafter {a.drafter} is for check --engine NAME (the drafter the engine drafts with)")
    ks = tuple(range(1, a.max_k + 1))
    dflash = None
    if getattr(a, "drafter", None) == "dflash":
        if not a.draft_model and not a.demo:
            raise SpecscopeError("--drafter dflash needs --draft-model FOLDER (a DFlash drafter)")
        from specscope.engine_adapter.model.dflash_format import read_dflash

        if not a.draft_model:  # the demo's own random DFlash drafter, as `run --demo --drafter dflash`
            from specscope.engine_adapter.model.demo_model import default_demo_path
            from specscope.engine_adapter.model.dflash_demo import default_dflash_path
            from specscope.engine_adapter.model.loader import load_model

            a.draft_model = str(default_dflash_path(load_model(a.path or default_demo_path("hybrid"))))
        dflash = a.draft_model
        B1 = read_dflash(dflash).max_draft_tokens  # a folder that is not a DFlash drafter is refused here
        ks = tuple(sorted(set(ks) | {B1}))
    elif getattr(a, "draft_model", None):
        raise SpecscopeError("--draft-model needs --drafter dflash here")
    with progress_bar("check", total=sum(k + 1 for k in ks), unit="checks", enabled=progress_wanted(a)) as bar:
        bar.status("loading the model")
        lm = load_model(a.path or default_demo_path("hybrid"), allow_oversize=a.allow_oversize, dtype=a.dtype)

        def step(done, total, what):
            if done is None:
                bar.status(what)
            else:
                bar.update_to(done, what)
        rep = full_report(lm, ks=ks, mtp=not a.no_mtp, progress=step, dflash=dflash)
    print(json.dumps(rep, indent=1) if a.json else format_report(rep))
    return 1 if rep["class"] == REFUSED else 0


def _check_engine(a) -> int:
    """``check --engine NAME``: is another engine right at temperature? Its sampled tokens at a drafted position
    against plain decoding's, with the test's power (``engines.audit``); greedy parity is every run's own check."""
    from specscope.engine_adapter.engine import Engine
    from specscope.engine_adapter.engines.audit import sampling_audit
    from specscope.engine_adapter.params import EngineParams

    from specscope.profiler.cli.progress import progress_bar, progress_wanted

    temp = a.temp if a.temp is not None else 0.25
    if temp <= 0:
        raise SpecscopeError("check --engine tests the acceptance rule at temperature: give --temp above 0")
    with progress_bar("check", total=None, unit="draws", enabled=progress_wanted(a)) as bar:
        bar.status(f"opening engine {a.engine}")
        eng = Engine.open(EngineParams(model=a.path, demo=a.demo and not a.path, draft_model=a.draft_model,
                                       drafter=getattr(a, "drafter", None) or "auto", engine=a.engine, temp=temp,
                                       top_p=a.top_p, num_draft_tokens=a.num_draft_tokens, allow_oversize=a.allow_oversize))
        bar.status(f"{a.draws} sampled draws from plain decoding, the engine and a known-wrong rule")
        rep = sampling_audit(eng, eng.encode(a.prompt), draws=a.draws, temp=temp, top_p=a.top_p)
    rep["engine"] = eng.foreign.describe() if eng.foreign is not None else {"name": "specscope"}
    print(json.dumps(rep, indent=1) if a.json else f"engine {a.engine} at temperature {temp:g}, top-p {a.top_p:g}, "
          f"k = {rep['k']}, {rep['draws']} draws: {rep['text']}")
    return 1 if rep["verdict"] == "differs" else 0
