"""What a measurement besides a run measures: ``RooflineConfig`` (the verify cost curve), ``TuneConfig`` (tune), and
the benchmarks' ``BenchConfig`` and ``MemoryPeakConfig`` (``bench_common``), the app's live lines' ``InspectConfig`` and
``PreflightConfig`` (``query_configs``), and how one crosses to the worker.

Built by the CLI from its flags (model references already resolved to folders), or by ``run --roofline`` from the
run's configuration: no argument namespace is built outside argument parsing. The measuring itself is
``roofline_run.roofline_data`` and ``tune_run.tune_data``, run in the worker by ``measurement.run_measurement``;
nothing here imports the engine, so the app and the runner can name a measurement without loading MLX.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields

from specscope.engine_adapter.params import EngineParams
from specscope.errors import SpecscopeError

from specscope.profiler.run.bench_common import BenchConfig, MemoryPeakConfig
from specscope.profiler.run.config import RunConfig
from specscope.profiler.run.query_configs import InspectConfig, PreflightConfig
from specscope.profiler.run.tool_configs import CaptureConfig, CheckConfig, TraceConfig

# the prompt of a single-prompt measurement (roofline; cli.engine's commands) when none is given
DEFAULT_PROMPT = ("Explain in two short paragraphs why a verification pass over several tokens can cost as much as "
                  "decoding them.")


@dataclass
class RooflineConfig(EngineParams):
    """A verify-curve measurement: the engine (``EngineParams``; ``drafter`` is the one the division at the floor
    uses, "auto" the best it has) and the curve's settings, defaults as ``specscope roofline`` has them."""

    positions: int = 9           # verify forwards over n = 1..positions
    max_tokens: int = 48         # the short speculative run for acceptance
    no_division: bool = False    # skip that run (no division at the floor)
    reps: int = 5                # whole-graph repeats per n
    block_reps: int = 2          # per-block ruler repeats per n
    bandwidth_mib: float = 512.0
    matmul_n: int | None = None  # the compute probe's matmul (None: 1024 on a CPU, 4096 on a GPU)
    prompt: str | None = None    # None: DEFAULT_PROMPT
    context: int = 0             # tokens of a long document before the prompt
    context_kind: str = "mixed"
    context_file: str | None = None
    tree_budgets: list[int] | None = None   # the cost surface's tree budgets (None: no surface, the chain curve only)
    tree_contexts: list[int] | None = None  # its contexts, tokens before the prompt (None: --context and 1k more)
    tree_width: int | None = None           # its per-block comparison's width (None: budget 8's, else the widest)

    def surface_contexts(self) -> list[int]:
        """The contexts the surface is measured at (tokens of the long document before the prompt)."""
        return sorted(set(self.tree_contexts)) if self.tree_contexts else [self.context, self.context + 1024]

    def engine_params(self) -> EngineParams:
        return EngineParams(**{f.name: getattr(self, f.name) for f in fields(EngineParams)})

    def validate(self) -> None:
        if not self.model and not self.demo:
            raise SpecscopeError("give a model (--model, a folder or a cached repo id) or --demo")
        if not 1 <= self.positions <= 17:
            raise SpecscopeError("--positions must be between 1 and 17")
        if not 1 <= self.num_draft_tokens + 1 <= self.positions:
            raise SpecscopeError(f"-k must be between 0 and --positions − 1 ({self.positions - 1}): "
                                 "the headline verify is k+1 positions")
        if self.reps < 1 or self.block_reps < 0:
            raise SpecscopeError("--reps must be >= 1 and --block-reps >= 0")
        if self.max_tokens < 4:
            raise SpecscopeError("--max-tokens must be at least 4")
        if self.bandwidth_mib <= 0 or (self.matmul_n is not None and self.matmul_n < 16):
            raise SpecscopeError("--bandwidth-mib must be positive and --matmul-n at least 16")
        if not 0.0 <= self.oracle_p <= 1.0:
            raise SpecscopeError("--oracle-p must be between 0 and 1")
        if self.oracle_draft_ms < 0:
            raise SpecscopeError("--oracle-draft-ms must be >= 0")
        if self.tree_budgets is not None:
            if not self.tree_budgets or any(not 1 <= b <= 16 for b in self.tree_budgets):
                raise SpecscopeError(f"--tree-budgets must list budgets between 1 and 16 (got {self.tree_budgets})")
            if any(c < 0 for c in self.tree_contexts or []):
                raise SpecscopeError(f"--tree-contexts must be >= 0 (got {self.tree_contexts})")

    @classmethod
    def beside_run(cls, run: RunConfig, drafter: str) -> "RooflineConfig":
        """``run --roofline``: the run's model, drafter and k, the curve to at least k+1 positions (9 by default),
        measured apart from the run."""
        shared = {f.name: getattr(run, f.name) for f in fields(EngineParams)}
        # specscope's own forwards are what the curve times, whichever engine's loop the run measured
        tree = run.tree_budget if 1 <= run.tree_budget <= 16 else None  # a tree run: the surface, its budget among them
        # the division's short run is a chain's (at the run's k), whatever the run verified
        return cls(**{**shared, "drafter": drafter, "engine": "specscope", "tree_budget": 0}, positions=max(9, run.num_draft_tokens + 1),
                   context=run.context, context_kind=run.context_kind, context_file=run.context_file,
                   tree_budgets=sorted({2, 4, 8, 16} | {tree}) if tree else None, tree_width=tree + 1 if tree else None)


@dataclass
class TuneConfig(EngineParams):
    """A tune: every drafter's predicted speedup at each k, the best confirmed; defaults as ``specscope tune`` has
    them (``drafters`` None: every drafter the model has; ``k_max`` None: 4, or a DFlash drafter's block - 1)."""

    k_max: int | None = None
    max_tokens: int = 64
    drafters: list[str] | None = None
    reps: int | None = None          # confirmation repeats (None: 6-30, until the recommendation is decided)
    beside_reps: int = 4
    confirm: str = "decide"          # "decide" (the best predicted setting and its nearest rival), "best" (each
    #                                  drafter's best k and its neighbours) or "all"
    suite: str | None = None
    cases: int = 1
    prompt: str | None = None
    tree_budgets: list[int] | None = None  # tree settings at these budgets too (``analysis.tune_trees``)

    def validate(self) -> None:
        if not self.model and not self.demo:
            raise SpecscopeError("give a model (--model, a folder or a cached repo id) or --demo")
        if self.tree_budgets and any(not 1 <= b <= 64 for b in self.tree_budgets):
            raise SpecscopeError("--tree-budgets: a budget is 1 to 64 nodes")
        if self.tree_budgets and self.temp > 0:
            raise SpecscopeError("--tree-budgets needs greedy decoding (--temp 0): a budget's tokens per round are "
                                 "walked exactly from the acceptance trace there")
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
        if self.confirm not in ("decide", "best", "all"):
            raise SpecscopeError("--confirm must be decide, best or all")
        if self.drafters is not None and not self.drafters:
            raise SpecscopeError("--drafters lists no drafter")
        if self.drafters and "dflash" in self.drafters and "draft" in self.drafters:
            raise SpecscopeError("--drafters dflash and draft: one run holds either a DFlash drafter or a draft model "
                                 "(--draft-model); tune them in two runs")
        if self.suite and not self.prompt:
            from specscope.profiler.run.suite import load_suite

            load_suite(self.suite)  # fail fast, before loading a model


Measurement = (RooflineConfig | TuneConfig | CheckConfig | CaptureConfig | TraceConfig | BenchConfig | MemoryPeakConfig
               | InspectConfig | PreflightConfig)
# the measurement's name (its run_started's ``measure``, its result event's kind) -> its configuration
KINDS: dict[str, type] = {"roofline": RooflineConfig, "tune": TuneConfig, "check": CheckConfig,
                          "capture": CaptureConfig, "trace": TraceConfig, "bench": BenchConfig,
                          "memory_peak": MemoryPeakConfig, "inspect": InspectConfig, "preflight": PreflightConfig}


def kind_of(cfg: Measurement) -> str:
    return next(kind for kind, cls in KINDS.items() if type(cfg) is cls)


def worker_argument(cfg: Measurement) -> str:
    """What the worker is started with for this measurement (a run's is its ``RunConfig`` alone)."""
    return json.dumps({"measure": kind_of(cfg), "config": asdict(cfg)})


def from_argument(spec: dict) -> Measurement:
    kind = spec.get("measure")
    if kind not in KINDS:
        raise SpecscopeError(f"unknown measurement {kind!r}")
    return KINDS[kind](**spec.get("config") or {})
