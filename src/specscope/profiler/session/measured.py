"""The measurements a session keeps beside its cases (``SessionData``'s ``roofline``, ``tune``, ``context_sweep``,
``cooldowns``, ``sensors`` and ``thermal``): typed records (``TypedDict``), plain JSON at run time.

They are defined here, in the session's floor, because the session holds them and never imports the floors that
compute them (``profiler.analysis``: the roofline's and tune's figures; ``profiler.run``: what the measurement knows
beside them); those floors name them from here (``analysis.records``, ``run.records``).
"""

# no ``from __future__ import annotations``: TypedDict reads NotRequired[...] off evaluated annotations at run time
from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypedDict, cast

from specscope.events import Mode, PassName, SensorWindow, ThermalReading
from specscope.profiler.session.surface import CostSurface

_Pass = TypedDict("_Pass", {"pass": NotRequired[PassName]})  # "pass" is a keyword: the functional form



# -- tune (tune.run_tune) ---------------------------------------------------------------------------------------------

class Agreement(TypedDict):
    """What a tune confirmation says about its prediction (``tune_confirm.agreement``)."""
    state: str | None
    text: str
    half_width: float | None
    interval: list[float] | None
    data_needed: float | None
    interval_kind: str                # "paired" | "unpaired"
    level: NotRequired[float]         # the interval's level: 0.95, or a look's corrected level (``tune_decide``)


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
    budgets: NotRequired[list[int]]   # a tree setting's: the budgets ``tokens_per_round`` is at (``tune_trees``)


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
    tokens_per_round_k_max_rounds: float | None  # None: a tree budget below the largest (no run there)
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
    tree_budget: NotRequired[int]     # a tree setting (``tune_trees``): its budget (``k`` holds it too) and depth limit
    depth: NotRequired[int]


class TuneDecision(TypedDict):
    """Whether tune's recommendation is decided (``analysis.tune.decision``): the pick against its nearest rival, and
    the pick's verdict, each at a level corrected for the looks (``analysis.tune_decide``)."""
    pick: list[Any] | None            # [drafter, k]: the confirmed setting measured fastest
    rival: list[Any] | None           # [drafter, k]: the other one confirmed (None: only one)
    ratio: float | None               # pick's measured speedup ÷ rival's
    ratio_interval: list[float] | None  # at ``level``
    order: str | None                 # "faster", "equal" (within ±5%), or None: not decided
    verdict: str | None               # the pick's prediction: "agrees", "off", or None: not decided
    level: float                      # each look's level
    looks: int                        # the most looks the rule may make
    decided: bool
    text: str


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
    decision: NotRequired[TuneDecision]   # absent from tunes saved before the stop on a decided recommendation


def recommendation(tune: TuneResult | None) -> Recommendation | None:
    """What a tune recommends; None where it has not said yet (a partial tune's ``{}``) or there is no tune."""
    rec = tune.get("recommendation") if tune else None
    return cast(Recommendation, rec) if rec else None


# -- the roofline (roofline.build_roofline; roofline_run.roofline_data) -----------------------------------------------

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


class CurveTimes(TypedDict):
    """The whole graph's time at n positions (the median, and the fastest and slowest repeat): what a roofline's
    curve has so far while it measures (``verify_curve.measure_curve``'s ``on_sweep``), and every row of it after."""
    positions: int
    whole_ms: float
    whole_ms_min: float | None
    whole_ms_max: float | None


class RooflineRow(CurveTimes):
    """The verify at n positions: measured, n × decode, its floor and the ideal (``roofline.build_roofline``)."""
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
    gpu_cores: NotRequired[int | None]   # absent in rooflines saved before the chip's figures were read
    nominal_bin: NotRequired[str | None]
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
    surface: NotRequired[CostSurface]      # measured with trees (roofline --tree); absent: chains only, as before


class ContextPrefill(TypedDict):
    """The long context prefilled once and stored (``TuneEngine.store_context``), and where its tokens came from."""
    ms: float
    tokens: int
    bytes: int
    kind: str                          # "file", or the synthetic context's kind


class AttentionAtContext(TypedDict):
    """Full attention's KV reads against a decode step's bytes, from the model's bytes (not timed)."""
    bytes_per_context_token: float
    step_bytes_no_context: float
    kv_share_of_step: float            # of a decode step's bytes at this context
    context_at_10pct: float            # the context at which the KV reads are 10% (and 50%) of a step's bytes
    context_at_50pct: float


class RooflineRun(Roofline):
    """The roofline as ``specscope roofline`` measures it (``roofline_run.roofline_data``): ``analysis.records.Roofline``
    and what the measurement knows beside it. ``notes`` also holds the cost model's own notes."""
    model: str
    prompt_tokens: int
    weight_bytes_total: int
    machine: Mapping[str, Any]         # machine_probe.probe_machine's record, as measured
    labels: dict[str, str]             # block name -> its label for this model
    verify_tokens: list[int]
    context_prefill: NotRequired[ContextPrefill | None]   # absent in rooflines saved before --context
    attention_at_context: NotRequired[AttentionAtContext]   # where the model's KV bytes per token are known


class RooflinePartial(TypedDict):
    """The verify curve so far, while a roofline measures (a ``roofline`` event with ``partial``): what a session
    holds until the whole ``RooflineRun`` replaces it (or holds still, where the run was stopped)."""
    curve: list[CurveTimes]
    partial: Literal[True]


def whole_roofline(roof: "RooflineRun | RooflinePartial | None") -> RooflineRun | None:
    """A session's roofline when it is whole; None where there is none or only the curve so far (a partial one)."""
    return None if not roof or "partial" in roof else cast(RooflineRun, roof)


# -- a context sweep (sweep.sweep_figures) ----------------------------------------------------------------------------

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


class ContextSweep(TypedDict):
    """A context sweep's figures as the app's Context page keeps them with the session (``SessionData.context_sweep``):
    the contexts and their order as the sweep started them, and each context's figures (``sweep.sweep_figures``)."""
    contexts: NotRequired[list[int] | None]
    order: NotRequired[list[int] | None]
    points: list[SweepPointFigures]


# -- what a run reads beside its passes (the ``cooldown``, ``sensors`` and ``thermal`` events, less ``event``) ----------

class Cooldown(TypedDict):
    """How a --cooldown wait before a case ended (``reached``: the probe came back within 2% of its best)."""
    case: str
    waited_s: float
    reached: bool
    probe_ms: NotRequired[float]
    best_ms: NotRequired[float | None]



class SensorReading(SensorWindow, _Pass):
    """One pass's sensor window (``run.sensors.window``) and the pass it belongs to (``pass``: which of a paired
    speculative phase's two; absent from older sessions, whose speculative window held both)."""
    case: str
    mode: Mode
    repeat: NotRequired[int]
    tokens: NotRequired[int]
    accepted: NotRequired[int]
    t: NotRequired[float]


class ThermalRecord(ThermalReading):
    """``pmset -g therm`` before or after a case (macOS)."""
    case: str
    when: str


# -- energy (analysis.energy) -----------------------------------------------------------------------------------------

class Cadence(TypedDict):
    """How one energy counter moved over a run's windows (``analysis.energy.cadence``)."""
    domain: str                       # "package" or "gpu"
    kind: Literal["live", "batched", "stale", "unknown"]
    windows: int                      # windows with a reading of this counter
    moved: int                        # ... in which it rose
    period_s: float | None            # batched: the estimated update period (window seconds ÷ windows it rose in)
    shortest_window_s: float | None


class EnergyWidened(TypedDict):
    """A batched counter read over the whole run (first window's start to last window's end): both modes and the work
    between passes together, never per mode."""
    domain: str
    span_s: float
    joules: float
    mean_power_w: float
    periods: float                    # the span in update periods (its ends are off by a batch at most)


class EnergyMode(TypedDict):
    """One mode's energy over its measured passes, from the trusted domain."""
    windows: int
    tokens: int
    accepted: int | None              # speculative: accepted draft tokens; plain: None
    joules: float
    joules_per_token: float | None
    joules_per_token_ci95: list[float] | None
    joules_per_accepted: float | None
    joules_per_accepted_ci95: list[float] | None
    power_w: float | None             # the trusted domain's mean power over the passes (joules ÷ seconds)
    gpu_freq_mhz: float | None
    gpu_temp_c: float | None


class EnergySummary(TypedDict):
    """The session's energy figures (``analysis.energy.energy_figures``): per mode from a counter that moved in every
    window, or none, with the reason; a batched package counter widened to the whole run where it is long enough."""
    available: bool
    reason: str | None                # why there are no per-mode figures (None when there are)
    domain: str | None                # "package" or "gpu": the counter the per-mode figures come from
    note: str | None                  # what the figures are not (e.g. GPU only, and why)
    source: str | None
    cadence: list[Cadence]
    unit: str | None                  # the intervals' unit: "cases" or "passes"
    plain: EnergyMode | None
    spec: EnergyMode | None
    ratio: float | None               # speculative J per token ÷ plain J per token (< 1: speculation spends less)
    ratio_ci95: list[float] | None
    widened: EnergyWidened | None
    widened_reason: str | None        # why a batched package counter was not widened

