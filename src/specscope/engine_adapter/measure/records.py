"""What the engine's measurements return: typed records, plain dicts at run time (JSON as they are).

Where the session keeps a measurement under a record of ``specscope.events`` (``PhaseBreakdown``, ``Components``),
the measurement returns that record or one that extends it; where the event's record does not describe what the
producer writes, the record here does (the acceptance trace's ``tokens`` is a count, the breakdown's ratios may be
None), so each producer is checked against what it really returns.
"""

# no ``from __future__ import annotations``: TypedDict reads NotRequired[...] off evaluated annotations at run time
from typing import Any, NotRequired, TypedDict

from specscope.events import Components, ComponentTree, PhaseBreakdown, Trace


# -- breakdown (measure.breakdown, distributed.breakdown) -------------------------------------------------------------

class HookFigures(TypedDict, total=False):
    """What a ``RunHooks`` adds to a forward's figures (none by default; a sharded model's communication both)."""
    collectives: dict[str, Any]            # {"calls": {collective: count}, "bytes": per forward}
    communication_split: dict[str, float]  # waiting for the slowest rank vs transfer (ms, medians)


class BreakdownRecord(TypedDict):
    """``measure_breakdown``: a decode step's and a verify forward's time by block (kept by the session as
    ``events.Breakdown``, whose ``ratios`` says float where a block that took no time gives None)."""
    decode: PhaseBreakdown
    verify: PhaseBreakdown
    ratios: dict[str, float | None]  # block -> verify ms / decode ms (None where decode took no time)
    labels: dict[str, str]           # block -> its label for this model
    tree: NotRequired[ComponentTree]  # a tree run's: the verify is this tree's (``tree_breakdown``)
    engine: NotRequired[dict[str, Any]]  # another engine's forwards by block while its loop ran (engines.opened.OpenedPass)


# -- the clock probe (measure.clock_probe) ----------------------------------------------------------------------------

class ClockProbeInfo(TypedDict):
    """What the clock probe runs, recorded with the session."""
    kernel: str
    device: str
    reps: int
    flop: float


class ClockReading(TypedDict):
    """One reading: the median of the timed chains and every chain's time (``events.ProbeReading`` less the case,
    repeat, when and t the protocol adds)."""
    ms: float
    reps_ms: list[float]


# -- components (measure.components) ----------------------------------------------------------------------------------

ComponentTimes = Components  # ``measure_components``'s record, defined once with the event that carries it


# -- the acceptance trace (measure.acceptance_trace) -----------------------------------------------------------------

AcceptanceTrace = Trace  # ``record_trace``'s record, defined once with the event that carries it


# -- the doctor (measure.doctor, measure.dflash_check) ---------------------------------------------------------------

class ExactnessRow(TypedDict):
    k: int
    accepted: int
    relative_error: float
    exact: bool


class ExactnessCheck(TypedDict):
    """``rollback_exactness``: every k and accepted count, against a fresh cache."""
    rows: list[ExactnessRow]
    max_relative_error: float
    exact: bool
    tolerance: float
    seconds: float


class DrafterContextRow(TypedDict):
    accepted: int
    relative_error: float
    exact: bool
    context_positions: int       # the drafter's read_positions()
    expected_positions: int


class DrafterContextCheck(TypedDict):
    """``drafter_context_exactness``: a DFlash drafter's context after every accepted count."""
    k: int
    rows: list[DrafterContextRow]
    max_relative_error: float
    exact: bool
    tolerance: float
    seconds: float


class TreeExactnessCheck(TypedDict):
    """``tree_check.tree_exactness``: a tree verify with rejected branches against plain forwards along each node's
    path, the caches after keeping one path against a fresh cache, and the same comparison's negative control (a
    Gated DeltaNet node run from the wrong parent's state), which must be caught."""
    nodes: int                       # drafted nodes in the tree (the root not counted)
    depth: int
    path: list[int]                  # the path kept (nodes from depth 1)
    node_errors: list[float]         # per node (root first): relative logit error against the plain forward
    max_relative_error: float
    kept_relative_error: float       # the next logits after keeping ``path``, against a fresh cache's
    exact: bool
    control: str                     # what the negative control broke
    control_relative_error: float | None  # None: the model has no Gated DeltaNet layer to break
    control_caught: bool | None
    tolerance: float
    seconds: float


# ``specscope check``: compat_class.cheap_report's record ("class", "reasons", "rollback", "sliding_windows"), the
# checks run on it, the MTP head and the model ("class" is a Python keyword, hence the functional form)
DoctorReport = TypedDict("DoctorReport", {
    "class": str,
    "reasons": list[str],
    "rollback": dict[str, Any],        # "mode", "methods", "text", "layers"
    "sliding_windows": list[int],
    "exactness": NotRequired[ExactnessCheck],     # not for a refused model
    "dflash": NotRequired[dict[str, Any]],        # the DFlash drafter's description and "context": DrafterContextCheck
    "tree": NotRequired[TreeExactnessCheck],      # tree verification (``--tree-budget``), where the model takes trees
    "tree_refused": NotRequired[str],             # why this model takes no trees
    "mtp": dict[str, Any],             # inspect_model.mtp_status and "loadable" (and "error")
    "model": dict[str, Any],           # name, revision, path, model_type, architecture, layers, memory
})


# -- GPU traces (measure.gpu_trace) -----------------------------------------------------------------------------------

class MetalStatus(TypedDict):
    metal: bool
    device: str     # in words: 'Metal (Apple M2 Max)', 'CPU (Linux x86_64)', …


class CaptureEntry(TypedDict):
    name: str
    file: str
    positions: int
    start_position: int
    tokens: list[int]
    state_capture: NotRequired[bool]    # the verify's
    accepted: NotRequired[int]


class CaptureRecord(TypedDict):
    """``capture_forwards``: what was captured (without model or environment details)."""
    k: int
    prompt_tokens: int
    captures: list[CaptureEntry]
    drafts: str
    hybrid: bool


class DeviceInfo(TypedDict, total=False):
    """MLX's description of its device (``mx.device_info()``; ``mx.metal.device_info()`` before MLX 0.30), its keys
    as MLX names them: the ones specscope reads. Whatever else the device reports passes through (plain values)."""
    device_name: str                        # "Apple M2 Max"
    architecture: str                       # the GPU family, "applegpu_g14s"
    memory_size: int                        # bytes
    max_recommended_working_set_size: int   # bytes
    max_buffer_length: int
    resource_limit: int
    gpu_core_count: int                     # the GPU core count, where a version of MLX gives it (any of the three)
    gpu_cores: int
    core_count: int


class CaptureEnvironment(TypedDict):
    mlx: str
    mlx_lm: str
    device: str
    mlx_device: str
    device_info: DeviceInfo
    os: str
    machine: str
    python: str


class CapturePrompt(TypedDict):
    id: Any
    text: str
    tokens: int


class CaptureDescription(CaptureRecord):
    """``gpu_trace.run``: ``capture.json`` (and the worker's line on stdout)."""
    what: str
    model: str
    model_path: str
    model_type: Any
    prompt: CapturePrompt
    environment: CaptureEnvironment
    created: str
    seconds: float


# -- bytes and FLOPs (measure.model_cost) -----------------------------------------------------------------------------

class BlockCost(TypedDict):
    """One block's share of a forward (``ModelCost.forward``); the MoE block's expert figures where it has them."""
    weight_bytes: float     # rounded to whole bytes before it is returned
    other_bytes: float
    flops: float
    distinct_experts: float | None
    distinct_experts_per_layer: NotRequired[list[float]]
    routed_slots: NotRequired[int | None]
    experts: NotRequired[int]
    distinct_source: NotRequired[str]


# -- the verify cost curve (measure.verify_curve) ---------------------------------------------------------------------

class CurvePoint(TypedDict):
    """The curve at one n: the whole graph's times, and (with block repeats) the per-block rulers."""
    positions: int
    whole_ms: float
    whole_ms_samples: list[float]
    whole_ms_min: float
    whole_ms_max: float
    blocks: NotRequired[dict[str, float]]
    block_sum_ms: NotRequired[float]
    instrumented_ms: NotRequired[float]
    inter_block_ms: NotRequired[float]
    barrier_distortion: NotRequired[float]
    skip_estimates: NotRequired[dict[str, float]]
    routes: NotRequired[dict[str, list[int]]]   # MoE block path -> distinct experts per call


class VerifyCurve(TypedDict):
    """``measure_curve``: the verify cost curve at the end of a context."""
    context: int
    tokens: list[int]
    reps: int
    category_reps: int
    hybrid_capture: bool
    t_decode_ms: float
    points: list[CurvePoint]
    labels: dict[str, str]
    top_k: int | None


# -- the verify cost surface (measure.tree_curve) ---------------------------------------------------------------------

class SurfacePoint(TypedDict):
    """One forward of the surface: a chain of ``width`` positions or a tree of ``width`` − 1 nodes (its shape)."""
    kind: str                      # "chain" | "tree"
    shape: str                     # "chain", "best-first", "wide", "deep"
    width: int                     # rows of the forward (a tree's: the root and its nodes)
    budget: int | None             # a tree's drafted nodes
    depth: int
    widths: list[int]              # nodes per depth 1..depth
    whole_ms: float
    whole_ms_min: float
    whole_ms_max: float
    whole_ms_samples: list[float]
    blocks: NotRequired[dict[str, float]]           # block name -> barrier-timed ms (where the rulers ran)
    inter_block_ms: NotRequired[float]
    skip_estimates: NotRequired[dict[str, float]]
    routes: NotRequired[dict[str, list[int]]]       # MoE block path -> distinct experts per call
    cost: NotRequired[dict[str, BlockCost]]         # block name -> bytes and FLOPs (``ModelCost.forward``), added after


class SurfaceContextRaw(TypedDict):
    context: int                   # tokens before the verify (the long context and the prompt)
    tokens: list[int]              # the greedy continuation the chains (and the deep trees) verify
    t_decode_ms: float
    points: list[SurfacePoint]
    tree_refusal: str | None       # why this model takes no tree (then the chains only)


class SurfaceRaw(TypedDict):
    """``tree_curve.measure_surface``: the surface at every context."""
    contexts: list[SurfaceContextRaw]
    budgets: list[int]
    shapes: list[str]
    positions: int
    reps: int
    block_reps: int
    labels: dict[str, str]
    top_k: int | None
