"""The verify cost surface a roofline keeps when it was measured with trees (``roofline["surface"]``: ``specscope
roofline --tree``, ``run --roofline`` of a tree run); computed by ``analysis.cost_surface.build_surface``.

An optional key of the roofline (no schema bump: a roofline without it is a chain-only measurement, as every one
before it was, and the pages and the report draw no tree curve for it).
"""

# no ``from __future__ import annotations``: TypedDict reads NotRequired[...] off evaluated annotations at run time
from typing import NotRequired, TypedDict


class SurfaceBlock(TypedDict):
    """One block of one surface forward against its floor."""
    ms: float | None                  # barrier-timed (None: the rulers did not run at this width)
    ms_barrier_free: float | None
    floor_ms: float
    bound: str                        # "bandwidth" | "compute"
    efficiency: float | None
    distinct_experts: float | None    # the MoE block: distinct experts per layer the forward read
    routed_slots: NotRequired[int | None]
    experts: NotRequired[int]


class SurfaceRow(TypedDict):
    """One forward of the surface: a chain of ``width`` positions or a tree of ``budget`` nodes of a shape."""
    kind: str                         # "chain" | "tree"
    shape: str                        # "chain", "best-first", "wide", "deep"
    width: int                        # rows of the forward (a tree's: the root and its nodes)
    budget: int | None                # a tree's drafted nodes (width − 1)
    depth: int
    widths: list[int]                 # nodes per depth
    whole_ms: float
    whole_ms_min: float | None
    whole_ms_max: float | None
    multiple_of_decode: float
    floor_ms: float
    floor_multiple: float | None      # the floor ÷ the decode step's floor
    inter_block_ms: float | None
    by_block: dict[str, SurfaceBlock]  # block name -> its figures (the names are data)


class Knee(TypedDict):
    """Where one family (chains, or trees of one shape) stops being about one weight read: the widest measured
    verify before the first that costs more than ``limit`` decode steps (``analysis.cost_surface.knee``)."""
    family: str                       # "chain" or a tree shape
    limit: float                      # decode steps
    within: int                       # widest width before the first over the limit (1: only the decode step)
    within_multiple: float
    over: int | None                  # the first measured width over the limit (None: none is)
    over_multiple: float | None


class SurfaceAt(TypedDict):
    """The surface at one context."""
    context: int                      # tokens before the verify
    t_decode_ms: float
    rows: list[SurfaceRow]
    knees: list[Knee]
    tree_refusal: str | None          # why this model takes no tree (the chains only, then)


class CostSurface(TypedDict):
    limit: float                      # the knee's limit, decode steps
    budgets: list[int]
    shapes: list[str]
    positions: int
    reps: int
    block_reps: int
    width: int                        # the width the per-block comparison is drawn at
    contexts: list[SurfaceAt]
    headline: str
    notes: list[str]
