"""Reopen the models a saved session measured, the way a user expects, on whatever machine opens it.

A session names its models by the paths they had on the machine that recorded it. Those paths mean nothing on
another machine (a colleague's file, a bug report, the bundled fixtures), so a built-in demo is found by what it
*is*, never by its recorded path:

- the tiny trained demo: the one this install ships, when it is the same training (seed, steps, time);
- the random demo: from the cache by its format version, rebuilt there if missing exactly as ``--demo`` builds it
  (and the caller is told so); a format this version no longer builds is refused, since its numbers could not be
  reproduced;
- a ``demo-model --shape`` slice: by its shape, layers and seed, at the recorded path or a folder the user gives.

A user's own model is taken from the option the user gave, else its recorded path, else the local Hugging Face
cache under its recorded repo id and revision; when none holds it, the message names what is missing and the
option that points at it (a ``SpecscopeError``: exit 2, no traceback).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from specscope.demo_labels import demo_kind
from specscope.engine_adapter.model.config_json import DemoRecord, read_config
from specscope.engine_adapter.params import EngineParams
from specscope.errors import SpecscopeError

# The identity of a trained demo: the same values mean the same weights.
TRAINED_IDENTITY = ("seed", "steps", "train_seconds", "size")


def session_drafter(cfg: dict) -> str | None:
    d = cfg.get("drafter")
    return d.get("name") if isinstance(d, dict) else d


def _config_demo(folder: str | Path) -> DemoRecord | None:
    """The demo's own record in its config.json (None: no config, or not a model specscope generated)."""
    config = read_config(folder)
    return config.get("specscope_demo") if config else None


def _same_shape(a: DemoRecord | None, b: dict) -> bool:
    return bool(a) and all((a or {}).get(k) == b.get(k) for k in ("kind", "shape", "layers", "seed", "format_version"))


def _demo_paths(demo: dict, model: str | None, say: Callable[[str], None]) -> tuple[str, str]:
    """(target folder, the kind of its own draft model) for a demo session; refuses what cannot be reproduced."""
    from specscope.engine_adapter.model import demo_model as dm
    from specscope.engine_adapter.model.real_shape import REAL_SHAPE_FORMAT_VERSION

    kind = demo_kind(demo)
    if kind == "trained":
        shipped = dm.trained_demo_path("hybrid")
        ours = _config_demo(shipped) if shipped else None
        if not ours or any(ours.get(k) != demo.get(k) for k in TRAINED_IDENTITY):
            raise SpecscopeError("the session was recorded with a tiny trained demo this version of specscope does not "
                                 "ship (another training); its numbers could not be reproduced here. Record a new "
                                 "session with `specscope run --demo`")
        return str(shipped), "trained"
    if kind == "shape":
        if model:
            if not _same_shape(_config_demo(model), demo):
                raise SpecscopeError(f"{model} is not the {demo.get('shape')} slice this session measured "
                                     f"({demo.get('layers')} layers, seed {demo.get('seed')}, format "
                                     f"{demo.get('format_version')}); build it with `specscope demo-model DIR --shape "
                                     f"{demo.get('shape')} --layers {demo.get('layers')}`")
            return model, ""
        if demo.get("format_version") != REAL_SHAPE_FORMAT_VERSION:
            raise SpecscopeError(f"the session was recorded with real-shape demo format {demo.get('format_version')}; this "
                                 f"version builds format {REAL_SHAPE_FORMAT_VERSION}, so its numbers could not be "
                                 "reproduced. Record a new session")
        raise SpecscopeError(f"the session's model, a random {demo.get('shape')} slice with {demo.get('layers')} layers, "
                             "is not on this machine: build it with `specscope demo-model DIR --shape "
                             f"{demo.get('shape')} --layers {demo.get('layers')}` and give it with --model DIR")
    # the random (synthetic) demo
    if demo.get("kind") != "hybrid" or demo.get("seed", dm.DEMO_SEED) != dm.DEMO_SEED:
        raise SpecscopeError(f"the session's demo model ({demo}) is not one specscope builds; record a new session")
    if demo.get("format_version") != dm.DEMO_FORMAT_VERSION:
        raise SpecscopeError(f"the session was recorded with the random demo's format {demo.get('format_version')}; this "
                             f"version builds format {dm.DEMO_FORMAT_VERSION}, so its numbers could not be reproduced. "
                             "Record a new session with `SPECSCOPE_DEMO=random specscope run --demo`")
    target = dm.specscope_home() / f"demo-hybrid-v{dm.DEMO_FORMAT_VERSION}"
    if not (target / "config.json").exists():
        say(f"the random demo (format {dm.DEMO_FORMAT_VERSION}) is not in the cache: building it into {target}")
    return str(dm.demo_model_path("hybrid")), "random"


def _user_model(recorded: dict, given: str | None, what: str, option: str) -> str:
    """A user's own model: the option, the recorded path, or the Hugging Face cache by repo id and revision."""
    from specscope.model_ref import resolve_model

    if given:
        return resolve_model(given, what=what).path
    path = recorded.get("path")
    if path and (Path(path) / "config.json").exists():
        return str(path)
    if recorded.get("source") == "hf-cache" and recorded.get("name"):
        spec = recorded["name"] + (f"@{recorded['revision']}" if recorded.get("revision") else "")
        try:
            return resolve_model(spec, what=what).path
        except SpecscopeError:
            pass
        raise SpecscopeError(f"the session's {what}, {spec}, is neither at {path} nor in this machine's Hugging Face "
                             f"cache: give its folder with {option} DIR (or fetch it with --download)")
    raise SpecscopeError(f"the session's {what} is not on this machine: {path or 'no path recorded'} does not exist "
                         f"(recorded on another machine?); give its folder with {option} DIR")


def reopen_params(data: Any, model: str | None = None, draft_model: str | None = None,
                  mtp_weights: str | None = None, say: Callable[[str], None] = lambda m: None) -> EngineParams:
    """The engine parameters that load what the session ``data`` measured (its drafter, k and sampling too)."""
    cfg: dict = data.get("config") or {}
    rec: dict = data.get("model") or {}
    drafter = session_drafter(cfg)
    if not drafter:
        raise SpecscopeError("the session does not say which drafter it ran")
    draft_kind = ""
    if cfg.get("demo"):
        demo = rec.get("demo")
        if not isinstance(demo, dict):
            raise SpecscopeError("the session ran a built-in demo but does not record which one; record a new session")
        target, draft_kind = _demo_paths(demo, model, say)
    else:
        target = _user_model({"path": cfg.get("model_path") or rec.get("path") or cfg.get("model"),
                              "source": rec.get("source"), "name": rec.get("name"), "revision": rec.get("revision")},
                             model, "model", "--model")
    draft = None
    what = "DFlash drafter" if drafter == "dflash" else "draft model"  # a DFlash session's drafter is a folder too
    if drafter in ("draft", "dflash"):
        if draft_model:
            draft = _user_model({}, draft_model, what, "--draft-model")
        elif cfg.get("draft_model") or not draft_kind:
            draft = _user_model({"path": cfg.get("draft_model_path") or cfg.get("draft_model")}, None,
                                what, "--draft-model")
        else:  # the demo's own draft model or DFlash drafter, of the same kind as its target
            from specscope.engine_adapter.model import demo_model as dm

            trained = dm.trained_demo_path(drafter) if draft_kind == "trained" else None
            if drafter == "dflash" and not trained:
                raise SpecscopeError("the session ran the random demo's DFlash drafter, which is not kept; give its "
                                     "folder with --draft-model DIR")
            draft = str(trained or dm.demo_model_path("draft"))
    mtp = None
    if mtp_weights or cfg.get("mtp_weights"):
        mtp = _user_model({"path": cfg.get("mtp_weights")}, mtp_weights, "MTP weights", "--mtp-weights")
    return EngineParams(model=target, demo=False, drafter=drafter, draft_model=draft, mtp_weights=mtp,
                        mtp_hidden=cfg.get("mtp_hidden") or "post-norm",
                        num_draft_tokens=int(cfg.get("num_draft_tokens") or 2),
                        temp=float(cfg.get("temp") or 0.0), top_p=float(cfg.get("top_p") or 1.0),
                        seed=int(cfg.get("seed") or 0), allow_oversize=bool(cfg.get("allow_oversize")))
