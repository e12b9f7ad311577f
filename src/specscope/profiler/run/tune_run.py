"""Tune, measured: ``tune_data(cfg)`` checks a ``measure_config.TuneConfig``, opens the engine and tunes
(``analysis.tune.run_tune``), in the worker (``measurement``)."""

from __future__ import annotations

from dataclasses import replace

from specscope.engine_adapter.params import EngineParams
from specscope.errors import SpecscopeError

from specscope.profiler.analysis.records import TuneResult
from specscope.profiler.run.measure_config import TuneConfig


def tune_data(cfg: TuneConfig, say=lambda m: None, partial=None) -> TuneResult:
    """Everything ``specscope tune`` measures, as the JSON-able record it prints with ``--json`` (``analysis.tune.run_tune``'s
    result, passed through)."""
    from specscope.engine_adapter.tune_runs import TuneEngine
    from specscope.profiler.analysis.tune import run_tune

    cfg.validate()
    drafters = cfg.drafters
    eng = TuneEngine.open(replace(EngineParams(**{f: getattr(cfg, f) for f in EngineParams.__dataclass_fields__}),
                                  drafter="dflash" if drafters and "dflash" in drafters else "auto"), status=say)
    k_max = cfg.k_max
    block = eng.engine.dflash  # the DFlash drafter's checked folder, when this run has one
    if block is not None and (drafters is None or "dflash" in drafters):
        if k_max is None:
            k_max = block.max_draft_tokens
        elif k_max > block.max_draft_tokens:
            raise SpecscopeError(f"--k-max {k_max} is more than {block.path.name}'s block holds: block size "
                                 f"{block.block_size} drafts at most {block.max_draft_tokens} a round")
    if cfg.prompt:
        prompts = [eng.encode(cfg.prompt)]
    else:
        from specscope.profiler.run.suite import load_suite, take_cases

        prompts = [eng.encode(c["prompt"]) for c in take_cases(load_suite(cfg.suite)["cases"], cfg.cases)]
    return run_tune(eng, prompts, k_max=k_max or 4, max_tokens=cfg.max_tokens, drafters=drafters, reps=cfg.reps,
                    confirm=cfg.confirm, progress=say, on_update=partial, beside_reps=cfg.beside_reps)
