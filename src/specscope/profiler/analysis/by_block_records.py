"""The shapes ``by_block`` returns: a session's verify by block, and two sessions' side by side (plain dicts at run
time; a leaf, so ``analysis.records`` can name them without importing the analysis)."""

# no ``from __future__ import annotations``: TypedDict reads NotRequired[...] off evaluated annotations at run time
from typing import NotRequired, TypedDict


class WidthRow(TypedDict):
    """One position count of a session's verify by block: every forward's (or rep's) block times, pooled."""
    positions: int
    forwards: int
    blocks: dict[str, list[float]]    # block -> ms, one value per forward (or rep)


class VerifyTable(TypedDict):
    """``verify_table``: where a session's verify-by-block figures come from, and the rows."""
    engine: str
    source: str      # "opened" (the engine's own forwards) or "breakdown" (specscope's forward of the model)
    rows: list[WidthRow]
    labels: dict[str, str]


class BlockRow(TypedDict):
    positions: int
    block: str
    label: str
    a_ms: float
    b_ms: float
    delta_ms: float
    ratio: float | None
    ratio_ci95: list[float] | None
    beyond_noise: bool


class BlockDifference(TypedDict):
    """``block_difference``: every block at every shared position count, the block named, and the line."""
    rows: list[BlockRow]
    named: BlockRow | None
    line: str
    sources: dict[str, str]          # name -> "opened" / "breakdown"
    min_effect: float
    note: NotRequired[str]
