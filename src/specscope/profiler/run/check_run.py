"""``specscope check``, measured: ``check_data(cfg)`` loads the model and checks it (``engine_adapter.measure.doctor``:
rollback exactness, MTP, windows; a DFlash drafter's too), or with ``cfg.engine`` tests another engine's acceptance
rule at temperature (``engines.audit``), in the worker (``measurement``)."""

from __future__ import annotations

from specscope.events import CheckResult

from specscope.profiler.run.tool_configs import CheckConfig


def check_data(cfg: CheckConfig, say=lambda m, *a, **k: None, partial=None) -> CheckResult:
    cfg.validate()
    if cfg.engine:
        return _check_engine(cfg, say)
    from specscope.engine_adapter.measure.doctor import REFUSED, format_report, full_report
    from specscope.engine_adapter.model.demo_model import default_demo_path
    from specscope.engine_adapter.model.loader import load_model

    ks = tuple(range(1, cfg.max_k + 1))
    dflash = None
    if cfg.drafter == "dflash":
        from specscope.engine_adapter.model.dflash_format import read_dflash

        dflash = cfg.draft_model
        if not dflash:  # the demo's own random DFlash drafter, as `run --demo --drafter dflash`
            from specscope.engine_adapter.model.dflash_demo import default_dflash_path

            dflash = str(default_dflash_path(load_model(cfg.model or default_demo_path("hybrid"))))
        B1 = read_dflash(dflash).max_draft_tokens  # a folder that is not a DFlash drafter is refused here
        ks = tuple(sorted(set(ks) | {B1}))
    total = sum(k + 1 for k in ks)
    say("loading the model")
    lm = load_model(cfg.model or default_demo_path("hybrid"), allow_oversize=cfg.allow_oversize, dtype=cfg.dtype)

    def step(done, _total, what):
        say(what) if done is None else say(what, done, total)

    rep = full_report(lm, ks=ks, mtp=not cfg.no_mtp, progress=step, dflash=dflash)
    return {"what": "model", "report": dict(rep), "text": format_report(rep), "ok": rep["class"] != REFUSED}


def _check_engine(cfg: CheckConfig, say) -> CheckResult:
    """Is another engine right at temperature? Its sampled tokens at a drafted position against plain decoding's, with
    the test's power; greedy parity is every run's own check."""
    from specscope.engine_adapter.engine import Engine
    from specscope.engine_adapter.engines.audit import sampling_audit
    from specscope.engine_adapter.params import EngineParams

    temp = cfg.temp if cfg.temp is not None else 0.25
    say(f"opening engine {cfg.engine}")
    eng = Engine.open(EngineParams(model=cfg.model, demo=cfg.demo and not cfg.model, draft_model=cfg.draft_model,
                                   drafter=cfg.drafter or "auto", engine=cfg.engine or "specscope", temp=temp, top_p=cfg.top_p,
                                   num_draft_tokens=cfg.num_draft_tokens, allow_oversize=cfg.allow_oversize))
    say(f"{cfg.draws} sampled draws from plain decoding, the engine and a known-wrong rule")
    rep = dict(sampling_audit(eng, eng.encode(cfg.prompt), draws=cfg.draws, temp=temp, top_p=cfg.top_p))
    rep["engine"] = eng.foreign.describe() if eng.foreign is not None else {"name": "specscope"}
    text = (f"engine {cfg.engine} at temperature {temp:g}, top-p {cfg.top_p:g}, k = {rep['k']}, {rep['draws']} draws: "
            f"{rep['text']}")
    return {"what": "engine", "report": rep, "text": text, "ok": rep["verdict"] != "differs"}
