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
from specscope.profiler.session.records import SessionData
from specscope.profiler.session.records import (BreakdownAggregate, BreakdownSpread, CaseStats,  # noqa: F401
                                                CommunicationShare, MatchStats, PerRankAggregate, PhaseAggregate,
                                                ProbeDrift, RepeatRates, Summary, Verdict)
from specscope.profiler.analysis.by_block_records import BlockDifference
# the roofline's, tune's and a sweep's figures are kept with the session: defined with it (``session.measured``)
from specscope.profiler.session.measured import (Agreement, BlockExperts, Recommendation, Roofline,  # noqa: F401
                                                 RooflineBlock, RooflineRow, SweepPointFigures, TraceFacts,
                                                 TuneDrafter, TuneResult, TuneRow)


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
    by_block: NotRequired[BlockDifference | None]     # verify by block, engine against engine (analysis.by_block)


class SessionFigures(TypedDict):
    """The figures a session file holds beside its data (``session_file.figures``), dropped and recomputed on load."""
    summary: Summary
    case_stats: dict[str, CaseStats]              # case id -> its figures
    sweep_figures: NotRequired[list[SweepPointFigures]]  # a context sweep's points (``sweep.sweep_figures``)


class SessionFile(SessionData, SessionFigures):
    """A session file's whole JSON (``session_file.session_dict``): the data, and the figures written beside it."""


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


class ContentRow(TypedDict):
    """One drafter on one content class (``by_content.content_table``): the class's own summary, its cases alone."""
    drafter: str                        # the session's name for it (its file's stem, or as given)
    drafter_label: str                  # the drafter as the session names it (``dflash (DFlash2)``)
    content_class: str
    k: int
    cases: int
    drafted: int
    p: float | None
    p_ci95: list[float] | None
    tokens_per_round: float | None
    tokens_per_round_ci95: list[float] | None
    predicted_speedup: float | None     # the round model at the class's E and the class's components
    division_speedup: float | None      # the seed's bare division, the same inputs
    measured_speedup: float | None
    measured_speedup_ci95: list[float] | None
    verdict: str | None                 # the class's own verdict state ("agrees", "off", "too_little_data")


class ContentDrafter(TypedDict):
    """Whether a drafter's classes differ: two classes whose tokens-per-round intervals do not overlap."""
    drafter: str
    drafter_label: str
    differ: list[list[str]]             # pairs of classes whose E intervals are apart
    regime: str


class ContentTable(TypedDict):
    """The seed's content table: drafters side by side per content class, with the division per class."""
    model: str | None
    regime: str
    classes: list[str]
    drafters: list[ContentDrafter]
    rows: list[ContentRow]
    notes: list[str]
