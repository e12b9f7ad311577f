"""The records the decoding generators yield: the case-less core of the run's ``prefill``, ``step`` and ``round``
events, defined once in ``specscope.events``. Plain JSON-friendly dicts (ints, floats, lists), tagged by ``event``."""

from __future__ import annotations

from typing import Iterable

from specscope.events import DecodeRecord, PrefillRecord, RoundRecord, StepRecord

__all__ = ["DecodeRecord", "PrefillRecord", "RoundRecord", "StepRecord", "tokens_of"]


def tokens_of(records: Iterable[DecodeRecord]) -> list[int]:
    """The token ids a decoding generator emitted, in order (prefill token, then steps or rounds)."""
    out: list[int] = []
    for r in records:
        out.extend(r["emitted"] if r["event"] == "round" else [r["token"]])
    return out
