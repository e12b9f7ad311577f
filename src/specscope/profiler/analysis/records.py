"""The shapes of the figures ``profiler.analysis`` computes beside the session's own (``session.records``): typed
records (``TypedDict``), plain dicts at run time, so what is written and read stays JSON as it was.

This module imports nothing from the session (``session.records`` reads some of these records for its ``Summary``
and ``CaseStats``): a record here is built from ``typing`` alone (the prediction's ``Division`` and ``RoundModel``
and the session file's ``Summary`` and ``CaseStats`` are named for the type checker only).
"""

# no ``from __future__ import annotations``: TypedDict reads NotRequired[...] off evaluated annotations at run time
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

if TYPE_CHECKING:  # the prediction holds these objects (never written: the summary reads its figures off them)
    from specscope.profiler.analysis.round_model import RoundModel
    from specscope.profiler.analysis.stats import Division
    # the session's figures (``session.records`` imports this module: named for the type checker only)
    from specscope.profiler.session.records import CaseStats, Summary


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


class Agreement(TypedDict):
    """What a tune confirmation says about its prediction (``tune_confirm.agreement``)."""
    state: str | None
    text: str
    half_width: float | None
    interval: list[float] | None
    data_needed: float | None
    interval_kind: str                # "paired" | "unpaired"


class MatchStats(TypedDict):
    """How far speculative output equals plain output (``stats.match_stats``)."""
    equal: bool
    match_rate: float
    first_divergence: int | None


class CommunicationWhatIf(TypedDict):
    """The division with ``comm_ms`` of communication per forward (``stats.communication_what_if``)."""
    comm_ms: float
    t_decode_ms: float
    t_verify_ms: float
    compute_decode_ms: float
    compute_verify_ms: float
    verify_multiple: float | None
    break_even_p: float | None


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


class TraceFigures(TypedDict):
    """The rounds an acceptance trace walks at k (``trace_walk._figures``), with what ``at_k`` and ``pooled`` add."""
    k: int
    rounds: int
    full_rounds: int
    accepted: list[int]
    tokens_per_round: float | None
    acceptance_by_depth: list[float | None]
    tokens_per_round_hist: list[int]
    accepted_total: int
    drafted_total: int
    estimate: NotRequired[bool]
    draws: NotRequired[int]
    tokens_per_round_spread: NotRequired[list[float] | None]
    traces: NotRequired[int]


class TraceSummary(TypedDict):
    """A short description of one trace (``trace_walk.summary``)."""
    positions: int
    mean_A: float | None
    first_draft_agrees: float | None
    k_max: int
    drafter: str | None
    estimate: bool


class Judgement(TypedDict):
    """One figure of two sessions held side by side (``compare._judge``)."""
    a: Any                            # the figures as the summaries hold them ("below noise" for a breakdown time)
    b: Any
    delta: float | None
    relative: float | None
    winner: str | None                # a session's name, "tie", or None (a figure missing, or no better side)
    by: str | None
    a_ci95: list[float] | None
    b_ci95: list[float] | None
    judged: NotRequired[str]


class SessionDescription(TypedDict):
    """What a comparison says about each session (``compare._describe``)."""
    model: str | None
    demo: bool
    demo_trained: bool
    device: str
    mlx: str | None
    engine: str
    drafter: str | None
    drafter_kind: str | None
    what_if: bool
    k: int
    regime: str
    cases: int
    max_tokens: int | None
    status: str


class WhyTerm(TypedDict):
    key: str
    label: str
    log: float
    share: float | None


class WhyFaster(TypedDict):
    """Which term makes the faster one faster (``why_faster.decompose`` / ``decompose_measured``), with what the
    comparison adds (``compare._why``)."""
    names: list[str]
    terms: list[WhyTerm]
    log_ratio: float
    model_ratio: float | None
    measured_ratio: float | None
    unexplained_log: float | None
    basis: str                        # "round model" | "measured"
    why_whole: NotRequired[str]
    cause: str | None
    answer: str
    measured_difference: NotRequired[bool]


class ErrorUnit(TypedDict):
    """One independent unit of the prediction error's interval (``uncertainty._unit``)."""
    tokens: int
    ms: float
    accepted: int
    counted: int
    v_sum: float
    v_n: int
    d_sum: float
    d_n: int
    components_only: NotRequired[bool]


class RoundRest(TypedDict):
    """A case's components as the error's units read them (``prediction._round_rest``)."""
    verify_ms: list[float]
    draft_ms: list[float]


class CommunicationShare(TypedDict):
    """Communication's share of a forward on each ruler (``summary_core._communication_share``)."""
    barrier: float | None
    barrier_free: float | None


class RepeatRates(TypedDict):
    """The session rates of each complete repeat and their speedups (``summary_core._repeat_rates``)."""
    plain: list[float | None]
    spec: list[float | None]
    speedup: list[float | None]


class Recommendation(TypedDict):
    """What tune recommends (``tune.recommendation``)."""
    drafter: str
    k: int
    measured_speedup: float
    predicted_speedup: float
    predicted_ci95: list[float] | None
    measured_ci95: list[float] | None
    wins: bool
    what_if: bool
    t_verify_ms: float
    break_even_verify_ms: float
    text: str


class TraceFacts(TypedDict):
    """What a drafter's acceptance traces say in a tune (``tune._trace_facts``)."""
    positions: int
    estimate: bool
    tokens_per_round: list[float | None]
    acceptance_by_depth: list[float | None]
    tokens_per_round_k_max_rounds: list[float | None]
    cost_ms: float | None


class CasesInterval(TypedDict):
    """Acceptance's interval with the case as the unit (``summary_intervals.acceptance_by_unit``)."""
    p_ci95: list[float]
    p_ci95_unit: str
    tokens_per_round_ci95: list[float]


class ComponentPrediction(TypedDict):
    """The prediction from the verify curve (``prediction.component_prediction``): ``available`` False with ``why``,
    or the prediction with its inputs and its error against the measured speedup."""
    available: bool
    why: NotRequired[str]
    speedup: NotRequired[float]
    t_decode_ms: NotRequired[float]
    t_verify_ms: NotRequired[float]
    t_draft_ms: NotRequired[float]
    tokens_per_round: NotRequired[float]
    measured_speedup: NotRequired[float | None]
    error: NotRequired[float | None]
    ledger_speedup: NotRequired[float | None]
    ledger_error: NotRequired[float | None]


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


class ComponentSamples(TypedDict):
    """How many samples each timed-apart component's mean is over (``prediction.genuine_prediction``)."""
    verify: int
    draft: int
    bookkeeping: int


class GenuinePrediction(TypedDict):
    """The prediction from components timed apart, or from the verify curve (``prediction.genuine_prediction``):
    ``available`` False with ``why`` (and the inputs found so far), or the judged round model, the seed's division
    beside it, its error against the measured speedup, the error's interval and its verdict. Read by the summary,
    never written as it is (``division`` and ``model`` are objects)."""
    available: bool
    source: str | None                # "components" | "verify curve"; None: neither
    t_verify_ms: NotRequired[float]
    t_draft_ms: NotRequired[float]
    t_bookkeeping_ms: NotRequired[float | None]  # components only
    samples: NotRequired[ComponentSamples]
    cases_timed: NotRequired[int]
    why: NotRequired[str]             # not available: why
    division: NotRequired["Division"]
    model: NotRequired["RoundModel"]
    speedup: NotRequired[float]
    division_speedup: NotRequired[float]
    division_error: NotRequired[float | None]
    untimed: NotRequired[list[str]]
    tokens_per_round: NotRequired[float]
    t_decode_ms: NotRequired[float]
    t_rollback_ms: NotRequired[float | None]
    speedup_with_rollback: NotRequired[float | None]
    rollback_share: NotRequired[float | None]
    error: NotRequired[float | None]
    error_ci: NotRequired[list[float] | None]
    unit: NotRequired[str | None]
    units: NotRequired[int]
    verdict: NotRequired[Verdict]
    error_with_rollback: NotRequired[float | None]
    draft_samples: NotRequired[list[list[float]] | None]
    rollback_untimed_counts: NotRequired[list[int]]


class ComparedFigure(Judgement):
    """One row of a comparison (``compare.compare``): the figure, its unit and which way is better, judged."""
    key: str
    label: str
    unit: NotRequired[str]            # absent in the per-block ratios (the page shows them as ×)
    better: str | None                # "higher" | "lower" | "abs-lower" | None


class Comparison(TypedDict):
    """Two sessions side by side (``compare.compare``; ``compare --json`` writes it as it is)."""
    schema: str
    schema_version: int
    names: list[str]
    sessions: dict[str, SessionDescription]          # keyed by the two names (data)
    same_regime: bool
    acceptance_compared: bool
    headline: str
    correct: dict[str, bool]                         # keyed by the two names
    why: WhyFaster | None
    figures: list[ComparedFigure]
    ratios: list[ComparedFigure]
    breakdown: list[ComparedFigure]
    acceptance_by_content_class: list[ComparedFigure]
    notes: list[str]


class SweepPointFigures(TypedDict):
    """One context sweep point's figures, read off its own session's summary (``sweep.point_figures``);
    ``sweep_figures`` adds how many visits it had and whether it is complete."""
    context: int
    cases: int | None
    plain_tok_s: float | None
    plain_tok_s_ci95: list[float] | None
    spec_tok_s: float | None
    spec_tok_s_ci95: list[float] | None
    t_decode_ms: float | None
    t_verify_ms: float | None
    t_draft_ms: float | None
    t_draft_ms_ci95: list[float] | None
    verify_multiple: float | None
    full_attention_share_decode: float | None
    full_attention_share_verify: float | None
    blocks_decode: dict[str, float | None] | None
    blocks_verify: dict[str, float | None] | None
    kv_bytes_per_step: float | None
    cache_bytes: int | None
    p: float | None
    p_ci95: list[float] | None
    tokens_per_round: float | None
    tokens_per_round_ci95: list[float] | None
    predicted_speedup: float | None
    measured_speedup: float | None
    measured_speedup_ci95: list[float] | None
    break_even_verify_ms: float | None
    break_even_multiple: float | None
    prefill_ms: float | None
    prefill_tok_s: float | None
    draft_prefill_ms: float | None
    low_sample: bool | None
    visits: NotRequired[int]
    complete: NotRequired[bool]


class SessionFigures(TypedDict):
    """The figures a session file holds beside its data (``session_file.figures``), dropped and recomputed on load."""
    summary: "Summary"
    case_stats: dict[str, "CaseStats"]              # case id -> its figures
    sweep_figures: NotRequired[list[dict[str, Any]]]  # a context sweep's points (``sweep.sweep_figures``)


# -- the roofline (roofline.build_roofline) ---------------------------------------------------------------------------

class BlockExperts(TypedDict, total=False):
    """The MoE block's expert figures in the roofline, those its cost has (``ModelCost.forward``)."""
    distinct_experts_per_layer: list[float]
    routed_slots: int | None
    experts: int
    distinct_source: str


class RooflineBlock(TypedDict):
    """One block at n positions against its floor (``roofline.build_roofline``); the MoE block's expert figures where
    its cost has them."""
    ms: float | None                  # the barrier-timed block (None: no per-block rulers)
    ms_barrier_free: float | None
    weight_bytes: float
    other_bytes: float
    flops: float
    floor_ms: float
    bound: str                        # "bandwidth" | "compute"
    efficiency: float | None
    distinct_experts: float | None
    distinct_experts_per_layer: NotRequired[list[float]]
    routed_slots: NotRequired[int | None]
    experts: NotRequired[int]
    distinct_source: NotRequired[str]
    ideal_ms: float | None


class RooflineRow(TypedDict):
    """The verify at n positions: measured, n × decode, its floor and the ideal (``roofline.build_roofline``)."""
    positions: int
    whole_ms: float
    whole_ms_min: float | None
    whole_ms_max: float | None
    multiple_of_decode: float
    n_times_decode_ms: float
    floor_ms: float
    efficiency: float | None
    inter_block_ms: float | None
    by_block: dict[str, RooflineBlock]      # block name -> its figures (the names are data)
    ideal_ms: float | None
    ideal_multiple: float | None
    floor_multiple: float | None


class Roofline(TypedDict):
    """How far each block is from what this machine allows (``roofline.build_roofline``: ``specscope roofline
    --json``); ``run.records.RooflineRun`` adds what the measurement knows beside it."""
    bandwidth_gbs: float
    peak_tflops: float
    chip: str
    nominal_bandwidth_gbs: float | None
    nominal_tflops: float | None
    gpu_cores: int | None
    nominal_bin: str | None
    device: str | None
    compute_dtype: str | None
    context: int | None
    t_decode_ms: float
    k: int
    curve: list[RooflineRow]
    verify_multiple: float
    ideal_verify_multiple: float | None
    gap_ms: float | None
    gap_shares: dict[str, float]            # block name -> its share of the gap
    speedup_now: float | None
    speedup_at_floor: float | None
    division: dict[str, Any] | None         # the division passed in, with the verify times and speedups added
    headline: str
    notes: list[str]


# -- tune (tune.run_tune) ---------------------------------------------------------------------------------------------

class TuneDrafter(TypedDict):
    """What a drafter's K_max run (and its traces) measured in a tune (``tune.run_tune``)."""
    label: str
    what_if: bool
    rounds: int
    acceptance: list[float]
    acceptance_ci95: list[list[float]]
    t_draft_ms_k1: float | None
    t_draft_ms_kmax: float | None
    t_verify_ms_in_run: float | None
    trace: NotRequired[TraceFacts]


class TuneRow(TypedDict):
    """One (drafter, k) of a tune (``tune._row``): the prediction, and the confirmation runs' measurement where
    there are some (the keys from ``measured_tokens_per_round`` on)."""
    drafter: str
    k: int
    predicted_speedup: float
    predicted_ci95: list[float]
    measured_speedup: float | None
    measured_range: list[float] | None
    prediction_error: float | None
    what_if: bool
    tokens_per_round: float
    timed_beside: bool                # T_verify, T_draft and T_rollback re-taken beside the confirmation runs
    tokens_per_round_k_max_rounds: float
    acceptance_source: str            # "trace" | "k_max_rounds"
    division_speedup: float | None
    t_decode_ms: float
    t_verify_ms: float
    t_draft_ms: float
    t_rollback_ms: float
    t_bookkeeping_ms: float
    t_bookkeeping_source: str
    break_even_verify_ms: float
    t_draft_source: str
    t_draft_below_noise: bool
    measured_tokens_per_round: NotRequired[float]
    measured_round_ms: NotRequired[float]
    predicted_round_ms: NotRequired[float]
    measured_speedup_median: NotRequired[float | None]
    measured_ci95: NotRequired[list[float] | None]
    paired_repeats: NotRequired[list[list[float]]]
    agreement: NotRequired[Agreement | None]


class TuneResult(TypedDict):
    """The whole tuning run (``tune.run_tune``: ``specscope tune --json``). A partial result (``partial``, while the
    confirmations run) has no recommendation yet: ``{}``."""
    recommendation: Recommendation | dict[str, Any]
    rows: list[TuneRow]
    assumption: str
    acceptance_source: str
    traces: dict[str, list[dict[str, Any]]]   # drafter -> its acceptance traces (session.trace_record)
    regime: str
    model: str | None
    k_max: int
    max_tokens: int
    prompts: int
    confirm_reps: int
    measured_method: str
    confirm_reps_rule: str
    t_decode_ms: float
    plain_tok_s: float | None
    verify_ms: dict[str, float]               # n -> mean verify (ms)
    verify_ms_beside: dict[str, float]        # "drafter:k" -> mean verify re-taken beside its pairs
    verify_context: int
    drafters: dict[str, TuneDrafter]
    method: str
    partial: NotRequired[bool]
