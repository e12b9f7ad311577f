"""Every event a run emits, defined once: what the engine's decoding generators yield, what the worker writes (one
JSON object a line), what ``Session.apply`` folds.

A leaf below the engine, the run and the session (it imports nothing of specscope's). The events stay plain JSON,
so each is a ``TypedDict`` tagged by its ``event`` key: no conversion on the wire, and mypy checks every emit site
against its kind (a misspelled field, a missing one or a wrong type is an error in the suite's mypy run), and
``Session.apply`` narrows on the tag. The reader (``profiler.run.events.parse``) refuses a line without its kind's
required fields. A new event kind is one class here and one entry in ``EVENT_TYPES``.

The engine's records (``PrefillRecord``, ``StepRecord``, ``RoundRecord``) are the case-less core of the ``prefill``,
``step`` and ``round`` events: the protocol adds the case (``{**record, "case": …}``), nothing is copied by hand.
"""

# no ``from __future__ import annotations``: TypedDict reads NotRequired[...] off evaluated annotations at run time
from typing import Any, Callable, Literal, NotRequired, TypedDict, Union, get_args

RoundKind = Literal["instrumented", "end_to_end"]
PassName = Literal["measured", "ledger"]  # a paired run's two passes: end-to-end (measured) and instrumented (ledger)
Mode = Literal["plain", "spec"]


# -- the engine's records: what the decoding generators yield -------------------------------------------------------

class PrefillRecord(TypedDict):
    """The prompt forward; it also produces the first token."""
    event: Literal["prefill"]
    n_prompt: int
    token: int
    ms: float


class StepRecord(TypedDict):
    """One plain decode step: one token, wall time since the previous token was ready."""
    event: Literal["step"]
    index: int
    token: int
    ms: float


class TreeShape(TypedDict):
    """A tree round's shape (``--tree-budget``): the nodes verified and the path kept. The root (the last verified
    token) is node 0 and is not counted; drafted node ``i`` (1-based, node order, best first) is ``drafted[i - 1]``."""
    nodes: int                  # drafted nodes verified in the round's one forward
    depth: int                  # the tree's deepest level (a chain of k: k)
    widths: list[int]           # nodes at each depth 1..depth
    parents: list[int]          # each drafted node's parent (0: the root), in node order
    path: list[int]             # the accepted path's nodes from depth 1 (its length: the round's ``accepted``)
    budget: NotRequired[int]    # the round's node budget (``--tree-budget``)
    max_depth: NotRequired[int]  # the depth it could draft to: k, less near the output's end (a "full" round: k)


class RoundCore(TypedDict):
    """What every speculative round has, in the engine's record, the event and the session's ``Round``."""
    drafted: list[int]          # the draft tokens proposed
    accepted: int               # how many of them the target accepted
    emitted: list[int]          # the tokens the round emitted (accepted + one from the target)
    draft_ms: float | None      # an instrumented round's segments (None in an end-to-end round: nothing timed apart)
    verify_ms: float | None
    rollback_ms: float | None
    ms: float                   # whole round, wall clock, including bookkeeping
    tree: NotRequired[TreeShape]  # a tree round's shape (``drafted``: every node's token, node order); absent: a chain


class RoundRecord(RoundCore):
    """One speculative round: draft ``len(drafted)`` tokens, verify them in one forward, keep a prefix."""
    event: Literal["round"]
    index: int
    extra: dict[str, Any]
    kind: RoundKind             # "instrumented", or "end_to_end": drafts chained lazily into the verify, one sync a round


DecodeRecord = Union[PrefillRecord, StepRecord, RoundRecord]


# -- records shared by an event and the session ----------------------------------------------------------------------

class ProbeReading(TypedDict):
    """One clock-probe reading (a fixed kernel timed before and after each case's phases, or while cooling down)."""
    case: str
    repeat: int
    when: str
    ms: float
    reps_ms: list[float]
    t: float


class Divergence(TypedDict, total=False):
    """Where greedy speculative output left plain decoding, and the logits either side."""
    position: int
    plain_token: int | None
    spec_token: int | None
    plain_margin: float
    verify_margin: float
    plain_lead: float
    verify_lead: float
    plain_top: list[Any]
    verify_top: list[Any]
    plain_logits: dict[str, float]    # the plain and the speculative token's logits
    verify_logits: dict[str, float]
    verify_row: int
    verify_width: int
    dtype: str
    tolerance: float
    verdict: str
    reason: str


class PrefilledContext(TypedDict):
    """A long context prefilled once (``Engine.prepare_context``), its times on their own."""
    tokens: int
    prefill_ms: float
    prefill_tok_s: NotRequired[float]
    draft_prefill_ms: float | None
    kv_bytes: int
    draft_kv_bytes: NotRequired[int | None]
    reused: bool                # a stored context reused: the times are its first prefill's


class SensorWindow(TypedDict):
    """One pass's sensor window (``profiler.run.sensors.window``); energy from the package's mean power."""
    seconds: float
    gpu_freq_mhz: float | None
    gpu_power_w: float | None
    package_power_w: float | None
    gpu_temp_c: float | None
    joules: float | None
    # per energy domain ("package", "gpu"): the counter's rise over the window and its reading at the window's end
    # (joules since the source opened), so the analysis can tell a live counter from a stale or batched one
    energy_j: NotRequired[dict[str, float | None]]
    counter_j: NotRequired[dict[str, float | None]]
    source: NotRequired[str]    # where the reading came from ("macmon-lib", "recorded")


class ThermalReading(TypedDict):
    """``pmset -g therm`` (macOS): the text and what it names."""
    text: str
    limits: dict[str, int]
    warnings: list[str]


# -- the payloads events carry --------------------------------------------------------------------------------

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


class ComponentTree(TypedDict):
    """The tree a tree run timed apart (``measure.tree_components``, ``measure.tree_breakdown``): its budget and shape,
    and (components) per accepted count the length of the path whose keep was timed (the tree's deepest where it is
    not that deep)."""
    budget: int
    nodes: int
    depth: int
    widths: list[int]
    rollback_path_nodes: NotRequired[dict[str, int]]
    budget_shapes: NotRequired[dict[str, list[int]]]  # the budget what-if's trees: budget -> [nodes, depth]
    budget_cut_agrees: NotRequired[bool]  # the what-if's tree cut to the run's budget is the run's tree


class Breakdown(TypedDict, total=False):
    decode: PhaseBreakdown
    verify: PhaseBreakdown
    ratios: dict[str, float | None]   # block -> verify ms / decode ms (None: the decode took no time)
    labels: dict[str, str]            # block -> its label for this model
    distributed: dict[str, Any]       # a sharded model: ranks, backend, collectives and bytes per forward
    tree: ComponentTree               # a tree run's: the verify is this tree's (its nodes + 1 positions)
    engine: dict[str, Any]            # another engine's target forwards by block while its own loop ran (engines.opened)


class Components(TypedDict, total=False):
    """The prediction's inputs timed apart for one case (``engine_adapter.measure.components``)."""
    at: float                         # where in the continuation the timed rounds stood (0.5: its middle)
    context: int
    k: int
    reps: int
    verify_ms: list[float]
    draft_ms: list[float]
    round_ms: list[float]
    draft_alone_ms: list[float]
    draft_forward_ms: list[float]     # a draft timed alone, in parts, where the drafter has them (DFlash2's forward
    draft_walk_ms: list[float]        # + top-K, and the selector's walk)
    draft_method: str                 # "in_round": a round less the verify before it
    round_drafts_agree: float | None  # share of timed rounds whose draft equals drafting alone from the prefix
    rollback_ms: dict[str, list[float]]  # accepted count -> times
    rollback_mode: str
    wall_ms: float
    prior_accepted: list[int]          # per draft sample: the earlier round's accepted count it caught up from
    bookkeeping_ms: list[float]        # per timed round: its work after the read-back but the rollback
    calls: list[dict[str, Any]]        # the calls beside the passes (profiler.session.components_fold)
    tree: ComponentTree                # a tree run's: the tree whose verify, draft and keep were timed
    budget_verify_ms: dict[str, list[float]]  # a tree run's what-if: budget -> verify times of its tree here
    budget_verify_wall_ms: float       # what timing the what-if's verifies cost (within wall_ms)


class TreeTrace(TypedDict):
    """For a tree run's trace (greedy): at every start s what a tree round from there is grown from, and where the
    continuation's token is among each position's candidates (``rank``: -1, not there). DFlash ("per_position"): the
    top ``b`` probabilities of each block position 1..depth, best first; DFlash2 ("per_parent"): the selector's q over
    a position's K candidates given the previous position's candidate (row 0 only at the first position)."""
    b: int
    depth: int
    rank: list[list[int]]                # [s][position]
    kind: NotRequired[str]               # "per_position" (absent: the same) | "per_parent"
    top_p: NotRequired[list[list[list[float]]]]    # per_position: [s][position][rank]
    q: NotRequired[list[list[list[list[float]]]]]  # per_parent: [s][position][previous candidate][candidate]
    to_the_end: NotRequired[bool]        # the drafter drafts to the output's end (DFlash): its last depth limits


class Trace(TypedDict):
    """A case's acceptance trace A(s) along the target's own continuation (``engine_adapter.measure.acceptance_trace
    .record_trace``; checked by ``trace_record``), kept whole by the session."""
    drafter: str
    k_max: int
    A: list[int]
    tokens: int                          # how many tokens the continuation has
    regime: str
    estimate: bool
    cost_ms: dict[str, float]            # "target_ms", "draft_ms", "total_ms" (sampled: "total_ms" only)
    method: str
    target_agrees: NotRequired[float | None]    # greedy: share of positions where the target's argmax agrees
    draws: NotRequired[list[list[int]]]         # under sampling: every seeded draw's A(s)
    A_by_k: NotRequired[dict[str, list[int]]]   # drafts that depend on k: k -> A(s) of blocks of that k
    chained: NotRequired[bool]
    # the drafter drafts to the output's end (DFlash: its last rounds draft one more than a chain drafter's)
    to_the_end: NotRequired[bool]
    tree: NotRequired[TreeTrace]                # a tree run's: the candidates a position (``analysis.tree_trace``)


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


# -- the events ---------------------------------------------------------------------------------------------------------

class StatusEvent(TypedDict):
    event: Literal["status"]
    message: str
    done: NotRequired[int]      # a measurement that counts its steps (check): how many are done, of ``total``
    total: NotRequired[int]
    notice: NotRequired[bool]   # the user must hear it even without a progress bar (trace: a demo model rebuilt)


class RunStartedEvent(TypedDict):
    """The start of every measurement, one shape: what is measured (``measure``: a run, a sweep, or a measurement
    besides a run, named as the worker's MEASURE registry names it) and its configuration under ``config`` (a run's
    ``RunConfig`` with the engine's facts, or the measurement's configuration object as a dict)."""
    event: Literal["run_started"]
    measure: NotRequired[str]       # "run", "sweep", or the MEASURE registry's name (absent in older events: a run)
    config: dict[str, Any]
    environment: dict[str, Any]
    model: dict[str, Any]           # the model panel's facts ({} where the measurement opens no model up front)
    cases: list[dict[str, Any]]     # id, content_class, prompt ([] for a measurement without cases)
    time: NotRequired[float]


class PreflightEvent(TypedDict):
    """The pre-flight (engine_adapter.preflight), after run_started and before anything is measured."""
    event: Literal["preflight"]
    preflight: Preflight


class CaseStartedEvent(TypedDict):
    event: Literal["case_started"]
    case: dict[str, Any]            # id, content_class, prompt, prompt_tokens (and a context's own_tokens)
    index: int
    phase: str                      # "plain" or "spec"
    repeat: NotRequired[int]
    order: NotRequired[Literal["AB", "BA"]]
    discarded: NotRequired[bool]


class PrefillEvent(PrefillRecord):
    case: str
    mode: Mode


class StepEvent(StepRecord):
    case: str


_Pass = TypedDict("_Pass", {"pass": NotRequired[PassName]})  # "pass" is a Python keyword, hence the functional form


class RoundEvent(RoundRecord, _Pass):
    case: str


class RepeatDoneEvent(TypedDict):
    event: Literal["repeat_done"]
    case: str
    mode: Mode
    tok_s: float | None
    repeat: NotRequired[int]
    instrumented_tok_s: NotRequired[float | None]


class BreakdownEvent(TypedDict):
    event: Literal["breakdown"]
    case: str
    breakdown: Breakdown


class ComponentsEvent(TypedDict):
    """The prediction's inputs timed apart for one case (engine_adapter.measure.components), beside a pass."""
    event: Literal["components"]
    case: str
    components: Components
    repeat: NotRequired[int]
    when: NotRequired[str]


class TraceEvent(TypedDict):
    """A case's acceptance trace A(s) along its plain output (engine_adapter.measure.acceptance_trace)."""
    event: Literal["trace"]
    case: str
    trace: Trace | None


class DivergenceEvent(Divergence):
    event: Literal["divergence"]
    case: str


class CaseDoneEvent(TypedDict):
    event: Literal["case_done"]
    case: str
    plain_text: NotRequired[str]
    spec_text: NotRequired[str]
    plain_pieces: NotRequired[list[str] | None]
    spec_pieces: NotRequired[list[str] | None]


class MemoryEvent(TypedDict):
    event: Literal["memory"]
    peak_bytes: int


class ProbeEvent(ProbeReading):
    event: Literal["probe"]


class CooldownEvent(TypedDict):
    """How a --cooldown wait before a case ended (``reached``: the probe came back within 2% of its best)."""
    event: Literal["cooldown"]
    case: str
    waited_s: float
    reached: bool
    probe_ms: NotRequired[float]
    best_ms: NotRequired[float | None]


class SensorsEvent(SensorWindow, _Pass):
    event: Literal["sensors"]
    case: str
    mode: Mode
    repeat: NotRequired[int]
    tokens: NotRequired[int]
    accepted: NotRequired[int]  # a speculative pass's accepted draft tokens
    t: NotRequired[float]       # seconds since the run began, at the window's end


class ThermalEvent(ThermalReading):
    """``pmset -g therm`` before or after a case (macOS)."""
    event: Literal["thermal"]
    case: str
    when: str


class ContextEvent(PrefilledContext):
    """A long context prefilled once (or its stored cache reused), timed on its own (profiler.run.protocol.with_context)."""
    event: Literal["context"]
    context: int
    kind: str | None
    file: str | None


class SweepStartedEvent(TypedDict):
    """A context sweep (profiler.analysis.sweep): the contexts and the order they are visited in."""
    event: Literal["sweep_started"]
    contexts: list[int]
    order: list[int]
    passes: NotRequired[int]
    kind: NotRequired[str | None]
    file: NotRequired[str | None]


_SweepPass = TypedDict("_SweepPass", {"pass": NotRequired[int]})


class SweepVisitEvent(_SweepPass):
    """Before one visit of a context: the case events up to ``sweep_visit_done`` belong to that context."""
    event: Literal["sweep_visit"]
    context: int
    visit: int
    of: NotRequired[int]


class SweepVisitDoneEvent(_SweepPass):
    event: Literal["sweep_visit_done"]
    context: int
    visit: int
    status: str
    last: NotRequired[bool]


class RooflineEvent(TypedDict):
    """``specscope roofline`` (or ``run --roofline``): the verify cost curve and the roofline (profiler.run.measurement);
    ``partial``: the curve so far, while it is measured."""
    event: Literal["roofline"]
    roofline: dict[str, Any]
    partial: NotRequired[bool]


class TuneEvent(TypedDict):
    """``specscope tune``: every drafter's predicted speedup per k, the confirmations, the recommendation
    (profiler.run.measurement); ``partial``: the result so far."""
    event: Literal["tune"]
    tune: dict[str, Any]
    partial: NotRequired[bool]


class CheckResult(TypedDict):
    """``specscope check`` (profiler.run.check_run): the report (``engine_adapter.measure.doctor``'s, or with ``--engine``
    ``engines.audit``'s), its text as the command prints it, and whether the model (or engine) passed."""
    what: Literal["model", "engine"]
    report: dict[str, Any]
    text: str
    ok: bool


class CheckEvent(TypedDict):
    event: Literal["check"]
    check: CheckResult


class CaptureEvent(TypedDict):
    """``specscope capture`` (profiler.run.capture_run): what was captured, as its ``capture.json`` holds it
    (``engine_adapter.measure.records.CaptureDescription``), and the folder the traces are in."""
    event: Literal["capture"]
    capture: dict[str, Any]
    out_dir: str


class BenchEvent(TypedDict):
    """``specscope bench overhead|spec-vs-mlx-lm|rollback``: one benchmark's result, measured in the worker
    (profiler.run.bench_run; its shape: profiler.run.bench_records.BenchResult)."""
    event: Literal["bench"]
    bench: dict[str, Any]


class BenchPairEvent(TypedDict):
    """A benchmark's ``pair``-th pair is measured (the CLI's progress bar)."""
    event: Literal["bench_pair"]
    benchmark: str
    pair: int


class MemoryPeakEvent(TypedDict):
    """One side of ``specscope bench memory``, measured in a fresh worker (profiler.run.bench_memory): MLX's peak
    memory (``mlx_peak``, bytes) and the ``tokens`` that work made."""
    event: Literal["memory_peak"]
    memory_peak: dict[str, Any]


class InspectEvent(TypedDict):
    """``inspect`` measured in the worker (profiler.run.query_run; the app's model line): the model's description,
    ``engine_adapter.model.records.ModelDescription``, the record a run keeps as its session's ``model``."""
    event: Literal["inspect"]
    inspect: dict[str, Any]


class RunDoneEvent(TypedDict):
    event: Literal["run_done"]
    status: str
    time: NotRequired[float]


class ErrorEvent(TypedDict):
    event: Literal["error"]
    message: str
    kind: NotRequired[Literal["input", "internal"]]  # "input": the user can fix it; "internal": a specscope bug


Event = Union[StatusEvent, RunStartedEvent, PreflightEvent, CaseStartedEvent, PrefillEvent, StepEvent, RoundEvent,
              RepeatDoneEvent, BreakdownEvent, ComponentsEvent, TraceEvent, DivergenceEvent, CaseDoneEvent, MemoryEvent,
              ProbeEvent, CooldownEvent, SensorsEvent, ThermalEvent, ContextEvent, SweepStartedEvent, SweepVisitEvent,
              SweepVisitDoneEvent, RooflineEvent, TuneEvent, CheckEvent, CaptureEvent, BenchEvent, BenchPairEvent,
              MemoryPeakEvent, InspectEvent, RunDoneEvent, ErrorEvent]

# kind -> its record, read off the union (each class's ``event`` literal): nothing spelled twice
EVENT_TYPES: dict[str, type] = {get_args(cls.__annotations__["event"])[0]: cls for cls in get_args(Event)}


def required_fields(kind: str) -> frozenset[str]:
    """The fields an event of this kind must carry (its record's required keys, the tag included)."""
    return EVENT_TYPES[kind].__required_keys__  # type: ignore[attr-defined]


Emit = Callable[[Event], None]  # where a run's events go (the worker's stdout, a test's list, the pump's fold)
