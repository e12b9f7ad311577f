"""The shapes of what the charts draw (``TypedDict``s: plain dicts at run time, keys checked by mypy): the series
``data``, ``live_data``, ``cost_data``, ``breakdown.rank_data`` and ``trace`` arrange from a session, the same for
the live app and the exported report images. No Qt here.
"""

# no ``from __future__ import annotations``: TypedDict reads NotRequired[...] off evaluated annotations at run time
from typing import NotRequired, TypedDict

from specscope.profiler.session.records import Summary


# -- the charts' colours (common.LIGHT, common.DARK; theme.chart_theme) -----------------------------------------------

class ChartTheme(TypedDict):
    """A chart theme: its name and a colour per role (a ``#rrggbb`` string, an RGBA tuple for a band, a grey level for
    the grid, a list for the categories)."""
    name: str                         # "light" | "dark"
    bg: str
    fg: str
    grid: int
    muted: str
    plain: str
    spec: str
    pred: str
    band: tuple[int, int, int, int]
    accept: str
    bar: str
    whole: str
    breakeven: str
    cats: list[str]


# -- the Live page (data.throughput_series, acceptance_series, tokens_per_round_hist, probe_series) ----------------------

class ThroughputSeries(TypedDict):
    """Plain and speculative tok/s over each mode's own generation clock (seconds)."""
    plain_x: list[float]
    plain_y: list[float]
    spec_x: list[float]
    spec_y: list[float]


class ThroughputData(ThroughputSeries):
    predicted_tok_s: float | None
    plain_tok_s: float | None
    spec_tok_s: float | None


class AcceptanceSeries(TypedDict):
    """Cumulative acceptance (%) over drafted tokens, its 95% band."""
    x: list[int]
    y: list[float]
    lo: list[float]
    hi: list[float]
    low_sample_limit: int


class TreeAcceptance(TypedDict):
    """A tree run's accepted path by depth (``tree_acceptance``): the share of full rounds whose path reached each
    depth, in %, with its 95% interval."""
    budget: int | None
    k: int                            # the depth limit
    rounds: int                       # full tree rounds counted
    depths: list[int]                 # 1..min(k, budget): a path holds at most the budget's nodes
    y: list[float]
    lo: list[float]
    hi: list[float]
    histogram: list[int]              # rounds whose path ended at depth 0..k


class AcceptanceData(AcceptanceSeries):
    regime: str | None
    drafted: int | None
    tree: TreeAcceptance | None       # a tree run: the chart shows the accepted path by depth instead


class TokensPerRoundHist(TypedDict):
    bins: list[int]                   # 1 .. k+1 tokens a round
    counts: list[int]


class TokensPerRoundData(TokensPerRoundHist):
    mean: float | None
    k: int | None


class ProbeSeries(TypedDict):
    """The clock probe over the run's wall clock (% of the best reading), and the GPU clock where sensors read it."""
    x: list[float]
    y: list[float]
    cool_x: list[float]
    cool_y: list[float]
    noise: float | None
    slowdown: float | None
    drift: bool
    warning: str | None
    gpu_x: list[float]
    gpu_y: list[float]


# -- the Breakdown page (data.breakdown_data, breakdown.rank_data) -----------------------------------------------------

class SideSpread(TypedDict):
    """Each figure's spread over reps (None in sessions from before it was kept), blocks in ``block_order``."""
    blocks: list[list[float] | None]
    skip_estimates: list[list[float] | None]
    whole_ms: list[float] | None
    block_sum_ms: list[float] | None
    inter_block_ms: list[float] | None
    instrumented_ms: list[float] | None


class BreakdownSide(TypedDict):
    """A decode step or a verify forward by block, blocks in ``block_order``."""
    positions: int
    blocks: list[float]
    block_sum_ms: float
    whole_ms: float
    instrumented_ms: float
    inter_block_ms: float
    barrier_distortion: float | None
    skip_estimates: list[float | None]
    spread: SideSpread


class BreakdownData(TypedDict):
    block_order: list[str]
    labels: list[str]
    inter_block_label: str
    ratios: list[float | None]
    ratio_inter_block: float | None
    ratio_whole: float | None
    decode: BreakdownSide
    verify: BreakdownSide


class RankSide(TypedDict):
    """One phase rank by rank (lists indexed by rank)."""
    positions: int
    whole_ms: list[float | None]
    compute_ms: list[float | None]
    communication_ms: list[float | None]
    communication_barrier_ms: list[float | None]
    wait_ms: list[float | None]
    transfer_ms: list[float | None]
    share: dict[str, float | None]    # CommunicationShare's rulers -> share


class RankRatios(TypedDict):
    """Verify ÷ decode rank by rank."""
    compute_ms: list[float | None]
    communication_ms: list[float | None]
    whole_ms: list[float | None]


class RankData(TypedDict):
    """A distributed breakdown's compute and communication per rank (``breakdown.rank_data``)."""
    ranks: int
    hosts: list[str]
    backend: str | None
    ratio: RankRatios
    decode: RankSide
    verify: RankSide
    ruler: str                        # "barrier_free" | "barrier": which communication figure the bars show


# -- the Division page (data.division_data) --------------------------------------------------------------------------

class DivisionPoint(TypedDict):
    label: str
    p: float | None
    p_lo: float | None
    p_hi: float | None
    speedup: float
    main: bool


class DivisionAt(TypedDict):
    """A point on the curve: the what-if's α, or the run's own."""
    p: float
    speedup: float | None


class DivisionData(TypedDict):
    """The round model's speedup over α, its markers and the times it prices (``data.division_data``)."""
    k: int
    ps: list[float]
    curve: list[float]
    measured_curve: list[float] | None
    division_curve: list[float] | None
    block_curve: list[float] | None
    points: list[DivisionPoint]
    what_if: DivisionAt | None
    t_decode_ms: float
    t_verify_ms: float
    t_draft_ms: float
    t_draft_ms_ci95: list[float] | None
    t_rollback_ms: float | None
    t_bookkeeping_ms: float | None
    untimed: list[str]
    formula: str
    alpha: float | None
    p_ci95_unit: str | None
    source: str | None
    predicted: DivisionAt | None


class ChartData(TypedDict):
    """Every chart of the session's pages, and the summary they were drawn from (``data.all_chart_data``,
    ``live_data.LiveChartData.chart_data``)."""
    probe: ProbeSeries
    summary: Summary
    throughput: ThroughputData
    acceptance: AcceptanceData
    tokens_per_round: TokensPerRoundData
    breakdown: BreakdownData | None
    division: DivisionData | None


# -- the Verify cost and Tune pages (cost_data) ------------------------------------------------------------------------

class VerifyCurveData(TypedDict):
    """Measured cost (with spread), n × decode and the floor, in plain decode steps."""
    n: list[int]
    measured: list[float]
    measured_lo: list[float | None] | None
    measured_hi: list[float | None] | None
    floor: list[float | None]
    ideal: list[float | None] | None
    note: str


class BlockFloor(TypedDict):
    key: str
    label: str
    ms: float | None
    floor_ms: float | None
    efficiency: float | None


class BlockFloorData(TypedDict):
    positions: int
    blocks: list[BlockFloor]


class ExpertUnionData(TypedDict, total=False):
    """Distinct experts per MoE layer against n × top-k; empty (``{}``) when the model has no MoE."""
    n: list[int]
    distinct: list[float]
    bound: list[int | None] | None
    n_experts: int | None


class TuneSeries(TypedDict):
    """One drafter's predicted speedup per k (its interval) and the confirmations' measurement."""
    name: str
    k: list[int]
    predicted: list[float]
    lo: list[float | None]
    hi: list[float | None]
    measured: list[float | None]
    measured_ci: list[list[float] | None]


class TuneMark(TypedDict):
    k: int
    speedup: float | None
    label: str


class TuneChartData(TypedDict):
    drafters: list[TuneSeries]
    recommended: TuneMark | None


# -- the Context page (views.context.chart_data) ----------------------------------------------------------------------

class ContextSeries(TypedDict):
    """One line over the contexts; a band (``lo``, ``hi``) where it has an interval."""
    name: str
    y: list[float | None]
    symbol: NotRequired[str]
    lo: NotRequired[list[float | None]]
    hi: NotRequired[list[float | None]]
    negative_note: NotRequired[str]   # what a value below zero means (T_draft: noise)


class ContextPanel(TypedDict):
    contexts: list[int]
    series: list[ContextSeries]
    ref: NotRequired[float]           # a reference line (break-even: 1x) and its name
    ref_name: NotRequired[str]
    stacked: NotRequired[bool]


class ContextChartData(TypedDict):
    speedup: ContextPanel
    verify: ContextPanel
    split: ContextPanel
    acceptance: ContextPanel


# -- the acceptance trace (trace.trace_case_data, trace_class_data) ---------------------------------------------------

class TraceCaseData(TypedDict):
    """A(s) of one case, with its pieces of text for the hover text."""
    A: list[int]
    k_max: int
    drafter: str
    estimate: bool
    case: str
    content_class: str
    pieces: list[str]
    mean_A: float | None
    first_draft_agrees: float | None


class TraceClass(TypedDict):
    name: str
    k: list[int]
    E: list[float | None]
    estimate: bool
    traces: int


class TraceClassData(TypedDict):
    classes: list[TraceClass]


class TraceTreeData(TypedDict):
    """A tree run's traces walked (``trace.trace_tree_data``): E by budget, and at the run's budget the depths."""
    budget: int                        # the run's budget (marked)
    depth: int                         # the depth limit (k)
    budgets: list[int]                 # 1..b
    E: list[float | None]              # E(budget), walked
    E_at_budget: float | None
    full_rounds: int                   # full rounds walked at the run's budget
    acceptance_by_depth: list[float | None]  # share of paths reaching depth i, i = 1..depth
    depth_histogram: list[int]         # paths that ended at depth 0..depth
    measured_E: float | None           # the cases' own full tree rounds
    traces: int                        # cases with a tree trace


# -- the verify cost surface (tree_cost_data; the Verify cost page's tree charts) -------------------------------------

class TreeCostSeries(TypedDict):
    """One family's cost by forward width at one context: chains (n positions) or trees of one shape (budget + 1)."""
    family: str                        # "chain" or a tree shape
    width: list[int]
    steps: list[float]                 # plain decode steps
    depth: list[int]


class TreeCostData(TypedDict):
    context: int
    t_decode_ms: float
    limit: float                       # the knee's limit, decode steps
    series: list[TreeCostSeries]
    knee_width: int | None             # the chain's knee (the widest within the limit)
    knee_text: str


class TreeBlock(TypedDict):
    key: str
    label: str
    ms: list[float | None]             # per family, in TreeBlocksData's order


class TreeBlocksData(TypedDict):
    """Per block at one width and context: the chain's and each tree shape's barrier-timed ms."""
    context: int
    width: int
    families: list[str]
    depths: list[int]
    blocks: list[TreeBlock]
    experts: list[float | None]        # distinct experts per MoE layer, per family (None: no MoE)
