"""Tune as a measurement of its own: what ``specscope tune`` measures, run in the worker like every measurement.

``TuneConfig`` says what to measure (the engine's share, ``EngineParams``, plus tune's settings), built by the CLI from
its flags (model references already resolved to folders). ``tune_data(cfg)`` checks it, opens the engine and tunes
(``analysis.tune.run_tune``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from specscope.engine_adapter.params import EngineParams
from specscope.errors import SpecscopeError


@dataclass
class TuneConfig(EngineParams):
    """A tune: every drafter's predicted speedup at each k, the best confirmed; defaults as ``specscope tune`` has
    them (``drafters`` None: every drafter the model has; ``k_max`` None: 4, or a DFlash drafter's block - 1)."""

    k_max: int | None = None
    max_tokens: int = 64
    drafters: list[str] | None = None
    reps: int | None = None          # confirmation repeats (None: 6-30, until each paired interval is ±2.5%)
    beside_reps: int = 4
    confirm: str = "best"            # "best" (each drafter's best k and its neighbours) or "all"
    suite: str | None = None
    cases: int = 1
    prompt: str | None = None

    def validate(self) -> None:
        if not self.model and not self.demo:
            raise SpecscopeError("give a model (--model, a folder or a cached repo id) or --demo")
        if self.k_max is not None and not 1 <= self.k_max <= 16:
            raise SpecscopeError("--k-max must be between 1 and 16")
        if self.max_tokens < 4:
            raise SpecscopeError("--max-tokens must be at least 4")
        if self.reps is not None and self.reps < 1:
            raise SpecscopeError("--reps must be at least 1")
        if self.beside_reps < 1:
            raise SpecscopeError("--beside-reps must be at least 1")
        if self.cases < 1:
            raise SpecscopeError("--cases must be at least 1")
        if self.temp < 0 or not 0 < self.top_p <= 1:
            raise SpecscopeError("--temp must be >= 0 and --top-p in (0, 1]")
        if not 0.0 <= self.oracle_p <= 1.0:
            raise SpecscopeError("--oracle-p must be between 0 and 1")
        if self.oracle_draft_ms < 0:
            raise SpecscopeError("--oracle-draft-ms must be >= 0")
        if self.confirm not in ("best", "all"):
            raise SpecscopeError("--confirm must be best or all")
        if self.drafters is not None and not self.drafters:
            raise SpecscopeError("--drafters lists no drafter")
        if self.drafters and "dflash" in self.drafters and "draft" in self.drafters:
            raise SpecscopeError("--drafters dflash and draft: one run holds either a DFlash drafter or a draft model "
                                 "(--draft-model); tune them in two runs")
        if self.suite and not self.prompt:
            from specscope.profiler.run.suite import load_suite

            load_suite(self.suite)  # fail fast, before loading a model


def tune_data(cfg: TuneConfig, say=lambda m: None, partial=None) -> dict:  # dict: analysis.tune.run_tune's result, passed through
    """Everything ``specscope tune`` measures, as the JSON-able dict it prints with ``--json``."""
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
