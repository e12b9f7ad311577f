"""``inspect`` and ``preflight``, measured in the worker (``measurement``): the app's model line and pre-flight line
start them as the Run button starts a run. Each returns its result whole: the model's description, the pre-flight
report (its ``preflight`` event is the one a run emits)."""

from __future__ import annotations

from typing import cast

from specscope.errors import SpecscopeError
from specscope.engine_adapter.model.records import ModelDescription
from specscope.events import Preflight

from specscope.profiler.run.query_configs import InspectConfig, PreflightConfig


def _resolve(spec: str | None, download: bool, what: str) -> str | None:
    """A folder for a reference as the CLI takes it (a folder or a cached repo id); None stays None."""
    if not spec:
        return None
    from specscope.model_ref import resolve_model

    return str(resolve_model(spec, download=download, what=what).path)


def inspect_data(cfg: InspectConfig, say=lambda m, *a, **k: None, partial=None) -> ModelDescription:
    cfg.validate()
    model = _resolve(cfg.model, cfg.download, "model")
    from specscope.engine_adapter.model.dflash_format import is_dflash_folder

    if model and is_dflash_folder(model):
        raise SpecscopeError(f"{cfg.model} is a DFlash drafter, not a model: pick it as the draft model of the DFlash "
                             "drafter (`specscope inspect` on the command line describes it)")
    from specscope.engine_adapter.model.demo_model import default_demo_path
    from specscope.engine_adapter.model.inspect_model import describe_path

    say("loading the model")
    return describe_path(model or default_demo_path("hybrid", cfg.demo_variant), allow_oversize=cfg.allow_oversize)


def preflight_data(cfg: PreflightConfig, say=lambda m, *a, **k: None, partial=None) -> Preflight:
    cfg.validate()
    from specscope.engine_adapter import preflight
    from specscope.engine_adapter.model.demo_model import default_demo_path
    from specscope.engine_adapter.preflight_parts import parts_from_checkpoints

    target = str(default_demo_path("hybrid", cfg.demo_variant)) if cfg.demo else _resolve(cfg.model, cfg.download, "model")
    draft = _resolve(cfg.draft_model, cfg.download, "draft model")
    mtp = cfg.mtp_weights
    if mtp and not _is_dir(mtp):  # a folder of tensors need not be a whole model folder (as the CLI takes it)
        mtp = _resolve(mtp, cfg.download, "MTP weights")
    say("reading the machine")
    readings = preflight.load_readings(cfg.readings) if cfg.readings else preflight.take_readings()
    report = preflight.evaluate(readings, *parts_from_checkpoints(target, cfg.drafter, draft, mtp))
    report["model"] = target
    return cast(Preflight, report)


def _is_dir(path: str) -> bool:
    from pathlib import Path

    return Path(path).expanduser().is_dir()
