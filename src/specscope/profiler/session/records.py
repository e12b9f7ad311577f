"""The shapes of a session, in one place: typed records (``TypedDict``) for the file's data and for the figures
computed from it.

A session stays plain JSON (dicts and lists), so the records are ``TypedDict``s: no conversion on load or save,
and mypy checks every key a typed function reads or writes against the record it is given (a misspelled key or a
key the record does not have is an error in the suite's mypy run). The key lists the code walks (the times a round
carries, what a divergence or a context's prefill keeps) are read off these records, not spelled a second time.

Data (written by the fold, ``Session.apply``): ``SessionData`` ⊃ ``Case`` ⊃ ``PlainSide`` / ``SpecSide`` ⊃
``Round``; a case's ``Breakdown`` (``PhaseBreakdown`` per phase), ``Components``, ``Divergence`` and ``Trace``; the
session's ``ProbeReading``s, ``ContextFacts``, a sweep's ``SweepPoint``s and the ``Preflight``.
Figures (computed by ``profiler.analysis``, written beside the data): ``CaseStats`` per case and ``Summary``.
"""

# no ``from __future__ import annotations``: TypedDict reads NotRequired[...] off evaluated annotations at run time
from typing import Any, Mapping, NotRequired, TypedDict, cast

# defined once, with the events that carry them; the session's readers find them here too
from specscope.events import (Breakdown, Components, CooldownEvent, Divergence, PassName, Preflight, ProbeReading, RoundCore,
                              RoundKind, SweepStartedEvent, Trace)
from specscope.events import PhaseBreakdown as PhaseBreakdown, PreflightCheck as PreflightCheck  # noqa: F401
from specscope.events import PreflightStatus as PreflightStatus  # noqa: F401
from specscope.events import CheckResult as CheckResult  # noqa: F401
from specscope.profiler.session.bench_record import BenchResult
from specscope.profiler.session.measured import (ContextSweep, Cooldown, EnergySummary, RooflinePartial, RooflineRun,
                                                 SensorReading, ThermalRecord, TuneResult)


def fields_of(record: Any, but: tuple[str, ...] = ()) -> tuple[str, ...]:
    """A ``TypedDict``'s keys, required and optional, inherited first, in their declared order, less ``but``: the
    field lists a fold copies are read off the record, so a field added to it reaches the fold."""
    return tuple(k for k in record.__annotations__ if k not in but)


_RoundPass = TypedDict("_RoundPass", {"pass": NotRequired[PassName]})  # "pass" is a keyword: the functional form


class Round(RoundCore, _RoundPass):
    """A speculative round as the session keeps it: the event's ``RoundCore`` (``specscope.events``), its kind, and
    the pass and repeat it belongs to."""
    kind: NotRequired[RoundKind]     # absent in sessions from before end-to-end rounds: all instrumented
    repeat: NotRequired[int]         # absent for repeat 0


ROUND_FIELDS = tuple(RoundCore.__annotations__)  # what every round has, in the event's order


class PlainSide(TypedDict):
    tokens: list[int]
    prefill_ms: float | None
    step_ms: list[float]
    repeats_tok_s: list[float | None]  # None: a repeat with no timed step (tok_s had nothing to divide)
    repeat_starts: NotRequired[list[list[int]]]  # [repeat, index of its first step]


class SpecSide(TypedDict):
    tokens: list[int]
    prefill_ms: float | None
    rounds: list[Round]
    repeats_tok_s: list[float | None]
    repeat_starts: NotRequired[list[list[int]]]
    repeats_instrumented_tok_s: NotRequired[list[float]]


DIVERGENCE_FIELDS = tuple(Divergence.__annotations__)


class Case(TypedDict):
    id: str
    content_class: str
    prompt: str
    prompt_tokens: list[int]
    plain: PlainSide
    spec: SpecSide
    breakdown: Breakdown | None
    discarded: NotRequired[bool]      # absent in schema-1 files
    plain_text: str
    spec_text: str
    complete: bool
    plain_pieces: NotRequired[list[str] | None]
    spec_pieces: NotRequired[list[str] | None]
    components: NotRequired[Components]
    divergence: NotRequired[Divergence]
    trace: NotRequired[Trace | None]


PROBE_FIELDS = tuple(ProbeReading.__annotations__)


class ContextFacts(TypedDict):
    """The long context a run sat on, and its own prefill."""
    context: int | None
    kind: str | None
    file: str | None
    tokens: int | None
    prefill_ms: float | None
    prefill_tok_s: float | None
    draft_prefill_ms: float | None
    kv_bytes: int | None
    draft_kv_bytes: int | None


CONTEXT_FACTS = tuple(ContextFacts.__annotations__)


class SweepPoint(TypedDict):
    context: int
    prefill: ContextFacts | None
    visits: int
    reuses: int
    complete: bool
    session: "SessionData"


class Sweep(TypedDict, total=False):
    contexts: list[int] | None       # as the sweep_started event gave them (None where it did not)
    order: list[int] | None
    passes: int | None
    kind: str | None
    file: str | None
    points: list[SweepPoint]


SWEEP_FIELDS = fields_of(SweepStartedEvent, but=("event",))  # what sweep_started carries (Sweep keeps each); points are folded
COOLDOWN_FIELDS = fields_of(CooldownEvent, but=("event",))  # what a cooldown wait's event leaves in the session


class CaptureResult(TypedDict):
    """What ``specscope capture`` captured (its ``capture.json``, ``engine_adapter.measure.records.CaptureDescription``)
    and the folder the traces are in (``events.CaptureEvent``)."""
    description: dict[str, Any]
    out_dir: str


class SessionData(TypedDict):
    schema: str
    schema_version: int
    status: str                       # empty | running | complete | incomplete | failed
    measure: NotRequired[str]         # what was measured (run_started's ``measure``): "run" when absent
    config: dict[str, Any]            # a run's configuration (``run.config.RunConfig.to_dict`` and the engine's facts)
    measurement: NotRequired[dict[str, Any]]  # a measurement besides a run: its configuration object (as a dict)
    environment: dict[str, Any]
    model: dict[str, Any]             # the model panel's facts (``engine_adapter.model.inspect_model``)
    cases: list[Case]
    errors: list[str]
    started_at: NotRequired[float | None]
    finished_at: NotRequired[float | None]
    probe: NotRequired[list[ProbeReading]]
    cooldowns: NotRequired[list[Cooldown]]
    sensors: NotRequired[list[SensorReading]]
    thermal: NotRequired[list[ThermalRecord]]
    context: NotRequired[ContextFacts]
    sweep: NotRequired[Sweep]
    roofline: NotRequired[RooflineRun | RooflinePartial]  # specscope roofline, run --roofline (``run.roofline_run``)
    tune: NotRequired[TuneResult]          # specscope tune (``analysis.tune.run_tune``)
    bench: NotRequired[BenchResult]           # the latest benchmark measured (a worker's one; older sessions' only)
    benchmarks: NotRequired[list[BenchResult]]  # every benchmark measured, in run order (``specscope bench WHAT -o``)
    memory_peak: NotRequired[dict[str, Any]]  # one side of the memory bench (``run.bench_records.PeakReading``)
    context_sweep: NotRequired[ContextSweep]  # the app's Context page: a sweep's figures kept with the session
    dropped_events: NotRequired[int]
    internal_errors: NotRequired[list[str]]
    preflight: NotRequired[Preflight]  # the machine before the run (absent in sessions from before the pre-flight)
    check: NotRequired[CheckResult]    # ``specscope check``'s result (a check's own session)
    capture: NotRequired[CaptureResult]  # ``specscope capture``'s (a capture's own session)


# -- figures ---------------------------------------------------------------------------------------------------------

# the figures' parts, computed by ``profiler.analysis`` (its records module names them too)

class Verdict(TypedDict):
    """The one rule's verdict on a prediction error (``verdict_rule.decide``), with what ``uncertainty.judge`` adds
    (the unit, how many, what would decide it) and the sequential look's level (``prediction.genuine_prediction``).
    A summary with no prediction holds only ``state`` (None) and ``text`` (why)."""
    interval: NotRequired[list[float] | None]
    half_width: NotRequired[float | None]
    data_needed: NotRequired[float | None]
    state: str | None                 # verdict_rule.STATES, None: no error to judge
    text: str
    unit: NotRequired[str]
    units: NotRequired[int]
    more_cases: NotRequired[int]
    max_tokens: NotRequired[int | None]
    level: NotRequired[float]


class MatchStats(TypedDict):
    """How far speculative output equals plain output (``stats.match_stats``)."""
    equal: bool
    match_rate: float
    first_divergence: int | None


class ProbeDrift(TypedDict):
    """The clock probe's drift verdict (``drift.probe_drift``); None figures: too few readings to judge."""
    readings: int
    best_ms: float
    first_ms: float | None
    last_ms: float | None
    early_ms: float | None
    late_ms: float | None
    slowdown: float | None
    noise: float | None
    drift: bool | None
    cooldown_readings: int


class RepeatRates(TypedDict):
    """The session rates of each complete repeat and their speedups (``summary_core._repeat_rates``)."""
    plain: list[float | None]
    spec: list[float | None]
    speedup: list[float | None]


class CommunicationShare(TypedDict):
    """Communication's share of a forward on each ruler (``summary_core._communication_share``)."""
    barrier: float | None
    barrier_free: float | None


class BreakdownSpread(TypedDict):
    """Each breakdown figure's spread over reps, median over cases (``summary_core._aggregate_spread``)."""
    whole_ms: list[float] | None
    instrumented_ms: list[float] | None
    block_sum_ms: list[float] | None
    inter_block_ms: list[float] | None
    blocks: dict[str, list[float] | None]            # block name -> its spread (the names are data)
    skip_estimates: dict[str, list[float] | None]


class PerRankAggregate(TypedDict):
    """A distributed breakdown's phase rank by rank, median over cases (``summary_core._aggregate_per_rank``):
    lists indexed by rank."""
    ranks: int
    whole_ms: list[float | None]
    blocks: dict[str, list[float | None]]            # block name -> its figure per rank (the names are data)
    skip_estimates: dict[str, list[float | None]]
    communication_split: dict[str, list[float | None]]  # "wait_ms", "transfer_ms"
    communication_barrier_ms: list[float | None]
    communication_ruler: str                         # "barrier_free" | "barrier"
    communication_ms: list[float | None]
    compute_ms: list[float | None]


class PhaseAggregate(TypedDict):
    """One phase (decode or verify) of the breakdown, median over cases (``summary_core.aggregate_breakdown``)."""
    positions: int
    whole_ms: float
    instrumented_ms: float
    block_sum_ms: float
    blocks: dict[str, float | None]                  # block name -> ms (the names are data)
    skip_estimates: dict[str, float | None]
    inter_block_ms: float
    barrier_distortion: float | None
    spread: BreakdownSpread
    communication_share: NotRequired[CommunicationShare]  # a run with communication among its blocks
    per_rank: NotRequired[PerRankAggregate]          # and per-rank figures in every case


class BreakdownAggregate(TypedDict):
    """The session's breakdown, median over cases (``summary_core.aggregate_breakdown``; ``Summary.breakdown``)."""
    decode: PhaseAggregate
    verify: PhaseAggregate
    ratios: dict[str, float | None]                  # block (and "inter_block", "whole") -> verify / decode
    block_order: list[str]
    labels: dict[str, str]                           # block -> its label for this model (the last case's)
    distributed: NotRequired[dict[str, Any]]         # a sharded model's facts, as the last case that has them holds them


class Acceptance(TypedDict):
    """Acceptance over rounds (``analysis.stats.acceptance_from_rounds``)."""
    k: int
    rounds: int
    drafted: int
    accepted: int
    p: float | None
    p_ci95: list[float]
    p_ci95_unit: str
    per_position: list[float]
    tokens_per_round: float | None
    tokens_per_round_ci95: list[float] | None
    low_sample: bool


class CaseStats(TypedDict):
    """One case's figures (``analysis.summary.case_stats``)."""
    plain_tok_s: float | None
    spec_tok_s: float | None
    repeats: int
    plain_tok_s_spread: list[float] | None
    spec_tok_s_spread: list[float] | None
    spec_instrumented_tok_s: float | None
    t_decode_ms: float | None
    t_verify_ms: float | None
    t_draft_ms: float | None
    acceptance: "Acceptance"
    predicted_speedup: float | None       # the case's judged round model, from its own components (``case_model``)
    division_speedup: float | None        # the seed's bare division from the same components (no rollback, bookkeeping)
    prediction_untimed: list[str] | None  # the case's round-model terms not timed apart
    ledger_speedup: float | None
    components_t_verify_ms: float | None
    components_t_draft_ms: float | None
    components_t_rollback_ms: float | None     # weighted by the case's own accepted counts
    components_t_bookkeeping_ms: float | None
    measured_speedup: float | None
    judged_tok_s: float | None            # the full rounds' rate (``rounds.judged_rounds``): what the prediction meets
    judged_tokens: int | None
    judged_measured_speedup: float | None
    prediction_error: float | None
    match: MatchStats | None
    divergence: Divergence | None     # with its verdict recomputed (``session.divergence.case_divergence``)
    discarded: bool
    regime: NotRequired[str]          # with the session's sampling regime (``session_case_stats``)


class FigureIntervals(TypedDict):
    """The headline figures' 95% intervals (``analysis.summary_intervals.figure_intervals``); None: no interval."""
    plain_tok_s_ci95: list[float] | None
    spec_tok_s_ci95: list[float] | None
    t_decode_ms_ci95: list[float] | None
    measured_speedup_ci95: list[float] | None
    t_verify_ms_ci95: list[float] | None
    t_draft_ms_ci95: list[float] | None


class DraftParts(TypedDict, total=False):
    """A draft timed alone, by part, where the drafter times its parts apart (mean ms over the components' drafts)."""
    forward: float                      # DFlash2: the drafter's forward with the top K candidates
    walk: float                         # DFlash2: the candidate selector's walk, one position after another


class TreeFigures(TypedDict):
    """A tree run's own figures (``--tree-budget``; ``analysis.tree_figures``), over the rounds acceptance counts (full:
    ``rounds.full_round``, first repeat). Acceptance itself is the accepted path: the summary's ``tokens_per_round``
    is 1 + the mean accepted path length, ``per_position`` the share of rounds whose path reached each depth."""
    budget: int | None                # the run's node budget
    rounds: int
    nodes_per_round: float | None     # drafted nodes verified per round (the verify's width less its root)
    depth_per_round: float | None     # the tree's deepest level, mean
    accepted_per_round: float | None  # the accepted path's length, mean (tokens per round less one)
    depth_histogram: list[int]        # rounds whose accepted path reached depth 0, 1, .., k exactly
    nodes_per_accepted: float | None  # nodes verified per accepted token: the tree's waste (None: nothing accepted)
    nodes_per_token: float | None     # nodes verified per emitted token (accepted + the target's own)


class Summary(FigureIntervals):
    """The session's figures (``analysis.summary.summarize``): speeds, the division's inputs, acceptance, the
    prediction and its verdict, the ledger, break-even, matches and divergences, the breakdown, drift, energy; each
    figure's 95% interval under ``<figure>_ci95`` (``FigureIntervals``; ``prediction_error_ci`` for the error). Every key is always there
    (a figure that cannot be had is None, with the reason where one is said): a missing one is a mypy error where the
    summary is built."""
    k: int
    regime: str
    what_if: bool
    cases_measured: int
    cases_discarded: int
    repeats: int
    plain_tok_s: float | None
    spec_tok_s: float | None
    repeat_rates: RepeatRates
    plain_tok_s_spread: list[float] | None
    spec_tok_s_spread: list[float] | None
    measured_speedup_spread: list[float] | None
    spec_instrumented_tok_s: float | None
    instrumentation_cost: float | None
    t_decode_ms: float | None
    division_inputs: str | None
    t_verify_ms: float | None
    t_draft_ms: float | None
    t_rollback_ms: float | None
    t_bookkeeping_ms: float | None  # the round's work after the read-back but the rollback, timed apart (components)
    t_draft_parts_ms: DraftParts | None  # a draft timed alone, by part (DFlash2's forward and walk); None: no parts
    p: float | None
    p_ci95: list[float] | None
    p_ci95_unit: str | None
    tokens_per_round_ci95: list[float] | None
    drafted: int
    accepted: int
    per_position: list[float]
    tokens_per_round: float | None
    low_sample: bool
    acceptance_by_content_class: dict[str, Any]
    predicted_speedup: float | None
    predicted_tok_s: float | None
    prediction_source: str | None
    prediction_unavailable: str | None
    predicted_speedup_with_rollback: float | None
    division_speedup: float | None    # the seed's bare division, beside the judged round model
    division_error: float | None
    prediction_untimed: list[str] | None  # terms of the round model not timed apart (e.g. t_bookkeeping_ms)
    rollback_untimed_counts: list[int]    # accepted counts the run had whose rollback was never timed apart
    prediction_error_with_rollback: float | None
    rollback_share: float | None
    prediction_components: dict[str, Any] | None
    measured_speedup: float | None
    judged_measured_speedup: float | None  # the full rounds' (``rounds.judged_rounds``): what the prediction meets
    tail_tokens: int                       # measured tokens of the shorter last rounds, left out of the judged figure
    tail_share: float | None
    prediction_error: float | None
    prediction_error_ci: list[float] | None
    prediction_error_corrected: float | None   # --until decided: the error with its stopping bias taken out
    prediction_error_correction: str | None    # ... and how (``sequential.CORRECTION``); None for other runs
    prediction_unit: str | None
    prediction_verdict: Verdict
    prediction_agrees: bool | None     # the verdict "agrees" (True) or "off" (False); None: undecided or none
    ledger_speedup: float | None
    ledger_error: float | None
    ledger_t_verify_ms: float | None
    ledger_t_draft_ms: float | None
    ledger_t_rollback_ms: float | None
    ledger_residual: float | None
    break_even_verify_ms: float | None     # the whole round's; None where out of reach (or no model)
    break_even_multiple: float | None
    break_even_out_of_reach: bool          # no verify time can pay: E·T_decode is spent by the round's other terms
    break_even_formula: str | None         # what break-even subtracts (``RoundModel.break_even_formula``)
    prediction_formula: str | None         # the round as the prediction prices it, untimed terms named
    verify_multiple: float | None
    block_sum_predicted_speedup: float | None
    match_rate: float | None
    all_match: bool
    divergences: list[dict[str, Any]]
    engine_faults: list[dict[str, Any]]
    unchecked_divergences: list[dict[str, Any]]
    breakdown: BreakdownAggregate | None
    probe: ProbeDrift | None
    energy: EnergySummary
    tree: TreeFigures | None          # a tree run's figures; None for a chain run


class ComponentCall(TypedDict):
    """One components call beside a pass, as a case's ``Components.calls`` lists it (``components_fold.call_of``)."""
    context: int | None
    at: float | None                  # the call's point of the case (0.5: its middle)
    reps: int | None
    wall_ms: float | None
    when: str | None
    repeat: int | None
    rounds: int


class EngineFacts(TypedDict):
    """Whose speculative loop a session ran (``engine_facts``): its name, and where the config has them, the engine's
    own facts (``SpeculativeEngine.describe``: version, the timings it reports and those it does not)."""
    name: str
    version: NotRequired[str]
    reports: NotRequired[list[str]]
    not_reported: NotRequired[list[str]]


def engine_facts(config: Mapping[str, Any]) -> EngineFacts:
    """Whose speculative loop a session ran, from its config: the engine's own facts (``run_facts``: name, version,
    reports, not_reported), or ``{"name": …}`` where only the run setting's name is there (a string: a stub engine,
    or an older session), or specscope's own."""
    eng = config.get("engine")
    if isinstance(eng, dict):
        return cast(EngineFacts, {"name": "specscope", **eng})  # the engine's run_facts, as the config keeps them
    return {"name": eng if isinstance(eng, str) and eng else "specscope"}


def drafter_label(config: Mapping[str, Any]) -> str:
    """The drafter's name as people read it: ``dflash`` names its variant where the folder is another one
    (``dflash (DFlash2)``); the run setting's name stays the drafter's kind, so commands and tunes keep working."""
    d = config.get("drafter")
    if not isinstance(d, dict):
        return str(d) if d else "?"
    name = str(d.get("name") or "?")
    variant = d.get("variant")
    return f"{name} ({DRAFTER_VARIANTS.get(variant, variant)})" if variant and variant != name else name


DRAFTER_VARIANTS = {"dflash2": "DFlash2"}

