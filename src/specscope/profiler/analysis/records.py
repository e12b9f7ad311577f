"""The shapes of the figures ``profiler.analysis`` computes beside the session's own (``session.records``): typed
records (``TypedDict``), plain dicts at run time, so what is written and read stays JSON as it was.

The parts of the figures a session's summary holds (the verdict, matches, drift, repeat rates, the aggregated
breakdown) are the session's records (``session.records``: the session never imports the analysis), named here too.
``GenuinePrediction``, which holds the prediction's ``Division`` and ``RoundModel`` objects, is with them in
``prediction``.
"""

# no ``from __future__ import annotations``: TypedDict reads NotRequired[...] off evaluated annotations at run time
from typing import Any, NotRequired, TypedDict

# the figures a session's summary holds are the session's records (``session.records``), named here for analysis
from specscope.profiler.session.records import (BreakdownAggregate, BreakdownSpread, CaseStats,  # noqa: F401
                                                CommunicationShare, MatchStats, PerRankAggregate, PhaseAggregate,
                                                ProbeDrift, RepeatRates, Summary, Verdict)


class Agreement(TypedDict):
    """What a tune confirmation says about its prediction (``tune_confirm.agreement``)."""
    state: str | None
    text: str
    half_width: float | None
    interval: list[float] | None
    data_needed: float | None
    interval_kind: str                # "paired" | "unpaired"


class CommunicationWhatIf(TypedDict):
    """The division with ``comm_ms`` of communication per forward (``stats.communication_what_if``)."""
    comm_ms: float
    t_decode_ms: float
    t_verify_ms: float
    compute_decode_ms: float
    compute_verify_ms: float
    verify_multiple: float | None
    break_even_p: float | None


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


class ComponentSamples(TypedDict):
    """How many samples each timed-apart component's mean is over (``prediction.genuine_prediction``)."""
    verify: int
    draft: int
    bookkeeping: int


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
    t_rollback_ms: float | None       # the point's judged round beside T_verify and T_draft (None: untimed)
    t_bookkeeping_ms: float | None
    prediction_formula: str | None
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
    break_even_out_of_reach: bool | None
    prefill_ms: float | None
    prefill_tok_s: float | None
    draft_prefill_ms: float | None
    low_sample: bool | None
    visits: NotRequired[int]
    complete: NotRequired[bool]


class SessionFigures(TypedDict):
    """The figures a session file holds beside its data (``session_file.figures``), dropped and recomputed on load."""
    summary: Summary
    case_stats: dict[str, CaseStats]              # case id -> its figures
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
    # greedy with a trace: whether E(k) is taken as exact (trace_check found nothing against it), and if not, why
    e_exact: NotRequired[bool]
    e_exact_void: NotRequired[str]


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


class RunError(TypedDict):
    """One run's judged prediction error as the verdict over runs reads it (``over_runs.pooled``)."""
    error: float                      # predicted ÷ measured − 1
    interval: list[float]             # the run's own 95% interval of it


class OverRuns(TypedDict):
    """The verdict over runs (``over_runs.pooled``): the error pooled over runs of one setting, random effects."""
    runs: int
    error: float                      # the pooled error (predicted ÷ measured − 1)
    interval: list[float] | None      # its 95% interval, the run-to-run spread in it; None from too few runs
    between_runs_sd: float            # τ: the spread of the runs' own errors beyond what their intervals allow (log)
    q: float                          # Cochran's Q over the runs, on runs − 1 degrees of freedom
    heterogeneity_p: float | None     # P(Q at least this large | no offset between runs)
    run_intervals_cover: int          # how many runs' own intervals hold the pooled error
    verdict: Verdict
