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
from typing import Any, Literal, Mapping, NotRequired, TypedDict

RoundKind = Literal["instrumented", "end_to_end"]
PassName = Literal["measured", "ledger"]  # a paired run's two passes: end-to-end (measured) and instrumented (ledger)

# A speculative round. "pass" is a Python keyword, hence the functional form.
Round = TypedDict("Round", {
    "drafted": list[int],       # the draft tokens proposed
    "accepted": int,            # how many of them the target accepted
    "emitted": list[int],       # the tokens the round emitted (accepted + one from the target)
    "draft_ms": float | None,   # an instrumented round's segments (None in an end-to-end round)
    "verify_ms": float | None,
    "rollback_ms": float | None,
    "ms": float,                # the whole round
    "kind": NotRequired[RoundKind],  # absent in sessions from before end-to-end rounds: all instrumented
    "pass": NotRequired[PassName],
    "repeat": NotRequired[int],      # absent for repeat 0
})
ROUND_FIELDS = ("drafted", "accepted", "emitted", "draft_ms", "verify_ms", "rollback_ms", "ms")  # what every round has


class PlainSide(TypedDict):
    tokens: list[int]
    prefill_ms: float | None
    step_ms: list[float]
    repeats_tok_s: list[float]
    repeat_starts: NotRequired[list[list[int]]]  # [repeat, index of its first step]


class SpecSide(TypedDict):
    tokens: list[int]
    prefill_ms: float | None
    rounds: list[Round]
    repeats_tok_s: list[float]
    repeat_starts: NotRequired[list[list[int]]]
    repeats_instrumented_tok_s: NotRequired[list[float]]


class PhaseBreakdown(TypedDict, total=False):
    """One forward's time by block (``engine_adapter.measure.breakdown``): the whole forward, the sum of the timed
    blocks and what lies between them."""
    positions: int
    reps: int
    whole_ms: float
    instrumented_ms: float
    blocks: dict[str, float]          # block name -> ms
    block_sum_ms: float
    inter_block_ms: float
    barrier_distortion: float
    skip_estimates: dict[str, float]
    samples: dict[str, Any]           # every rep's figures (the medians above are over these)
    uncalled_blocks: list[str]        # blocks the model has that this forward never entered
    spread: dict[str, Any]
    per_rank: dict[str, Any]          # a sharded model's figures rank by rank (lists indexed by rank)
    collectives: dict[str, Any]       # a sharded model: collective calls and bytes per forward
    communication_split: dict[str, float]  # waiting for the slowest rank vs transfer


class Breakdown(TypedDict, total=False):
    decode: PhaseBreakdown
    verify: PhaseBreakdown
    ratios: dict[str, float]          # block -> verify ms / decode ms
    labels: dict[str, str]            # block -> its label for this model
    distributed: dict[str, Any]       # a sharded model: ranks, backend, collectives and bytes per forward


class Components(TypedDict, total=False):
    """The prediction's inputs timed apart for one case (``engine_adapter.measure.components``)."""
    context: int
    k: int
    reps: int
    verify_ms: list[float]
    draft_ms: list[float]
    round_ms: list[float]
    draft_alone_ms: list[float]
    draft_method: str                 # "in_round": a round less the verify before it
    round_drafts_agree: float | None  # share of timed rounds whose draft equals drafting alone from the prefix
    rollback_ms: dict[str, list[float]]  # accepted count -> times
    rollback_mode: str
    wall_ms: float
    prior_accepted: list[int]          # per draft sample: the earlier round's accepted count it caught up from
    bookkeeping_ms: list[float]        # per timed round: its work after the read-back but the rollback
    calls: list[dict[str, Any]]        # the calls beside the passes (profiler.session.components_fold)


class Divergence(TypedDict, total=False):
    """Where greedy speculative output left plain decoding, and the logits either side."""
    position: int
    plain_token: int
    spec_token: int
    plain_margin: float
    verify_margin: float
    plain_lead: float
    verify_lead: float
    plain_top: list[Any]
    verify_top: list[Any]
    plain_logits: list[float]
    verify_logits: list[float]
    verify_row: int
    verify_width: int
    dtype: str
    tolerance: float
    verdict: str
    reason: str


DIVERGENCE_FIELDS = tuple(Divergence.__annotations__)


class Trace(TypedDict, total=False):
    """A case's acceptance trace (``engine_adapter.measure.acceptance_trace``; checked by ``trace_record``)."""
    A: list[int]
    k_max: int
    drafter: str
    tokens: list[int]
    regime: str
    estimate: bool
    draws: list[list[int]]
    cost_ms: dict[str, float]


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


class ProbeReading(TypedDict, total=False):
    """One clock-probe reading (a fixed kernel timed before and after each case's phases)."""
    case: str
    repeat: int
    when: str
    ms: float
    reps_ms: list[float]
    t: float


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


SWEEP_FIELDS = ("contexts", "order", "passes", "kind", "file")  # what sweep_started carries; points are folded


PreflightStatus = Literal["pass", "warn", "fail", "not checked"]


class PreflightCheck(TypedDict):
    """One pre-flight check (``engine_adapter.preflight``): what it read and what to do about it."""
    name: str
    status: PreflightStatus
    evidence: str
    fix: str


class Preflight(TypedDict, total=False):
    """The pre-flight taken before the run measured anything (``engine_adapter.preflight.evaluate``): the worst status,
    every check, and the parts of the model with the dtype each runs in as loaded."""
    status: Literal["pass", "warn", "fail"]
    system: str | None
    checks: list[PreflightCheck]
    parts: list[dict[str, Any]]       # {"part", "dtype", "path", "how"}
    model_bytes: int | None
    counts: dict[str, int]
    time: float | None
    ignored: bool                     # a failed pre-flight the run went on past (--ignore-preflight)
    readings_from: str | None         # readings recorded elsewhere (SPECSCOPE_PREFLIGHT_READINGS), not this machine's


class SessionData(TypedDict):
    schema: str
    schema_version: int
    status: str                       # empty | running | complete | incomplete | failed
    config: dict[str, Any]            # the run's configuration (``run.config.RunConfig.to_dict``)
    environment: dict[str, Any]
    model: dict[str, Any]             # the model panel's facts (``engine_adapter.model.inspect_model``)
    cases: list[Case]
    errors: list[str]
    started_at: NotRequired[float | None]
    finished_at: NotRequired[float | None]
    probe: NotRequired[list[ProbeReading]]
    cooldowns: NotRequired[list[dict[str, Any]]]
    sensors: NotRequired[list[dict[str, Any]]]
    thermal: NotRequired[list[dict[str, Any]]]
    context: NotRequired[ContextFacts]
    sweep: NotRequired[Sweep]
    roofline: NotRequired[dict[str, Any]]
    tune: NotRequired[dict[str, Any]]
    context_sweep: NotRequired[dict[str, Any]]  # the app's Context page: a sweep's figures kept with the session
    dropped_events: NotRequired[int]
    internal_errors: NotRequired[list[str]]
    preflight: NotRequired[Preflight]  # the machine before the run (absent in sessions from before the pre-flight)


# -- figures ---------------------------------------------------------------------------------------------------------

class Acceptance(TypedDict, total=False):
    """Acceptance over rounds (``analysis.stats.acceptance_from_rounds``)."""
    rounds: int
    drafted: int
    accepted: int
    p: float | None
    p_ci95: list[float] | None
    p_ci95_unit: str | None
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
    acceptance: dict[str, Any]
    predicted_speedup: float | None
    ledger_speedup: float | None
    components_t_verify_ms: float | None
    components_t_draft_ms: float | None
    measured_speedup: float | None
    judged_tok_s: float | None            # the full rounds' rate (``rounds.judged_rounds``): what the prediction meets
    judged_tokens: int | None
    judged_measured_speedup: float | None
    prediction_error: float | None
    match: dict[str, Any] | None
    divergence: dict[str, Any] | None
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
    repeat_rates: dict[str, list[Any]]
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
    prediction_error_with_rollback: float | None
    rollback_share: float | None
    prediction_components: dict[str, Any] | None
    measured_speedup: float | None
    judged_measured_speedup: float | None  # the full rounds' (``rounds.judged_rounds``): what the prediction meets
    tail_tokens: int                       # measured tokens of the shorter last rounds, left out of the judged figure
    tail_share: float | None
    prediction_error: float | None
    prediction_error_ci: list[float] | None
    prediction_unit: str | None
    prediction_verdict: dict[str, Any]
    prediction_within_noise: bool | None
    ledger_speedup: float | None
    ledger_error: float | None
    ledger_t_verify_ms: float | None
    ledger_t_draft_ms: float | None
    ledger_t_rollback_ms: float | None
    ledger_residual: float | None
    break_even_verify_ms: float | None
    break_even_multiple: float | None
    verify_multiple: float | None
    block_sum_predicted_speedup: float | None
    match_rate: float | None
    all_match: bool
    divergences: list[dict[str, Any]]
    engine_faults: list[dict[str, Any]]
    unchecked_divergences: list[dict[str, Any]]
    breakdown: dict[str, Any] | None
    probe: dict[str, Any] | None
    energy: dict[str, Any] | None


def engine_facts(config: Mapping[str, Any]) -> dict[str, Any]:
    """Whose speculative loop a session ran, from its config: the engine's own facts (``run_facts``: name, version,
    reports, not_reported), or ``{"name": …}`` where only the run setting's name is there (a string: a stub engine,
    or an older session), or specscope's own."""
    eng = config.get("engine")
    if isinstance(eng, dict):
        return {"name": "specscope", **eng}
    return {"name": eng if isinstance(eng, str) and eng else "specscope"}
