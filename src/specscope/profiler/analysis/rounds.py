"""Which rounds count for what: a speculative round's kind, its repeat and its pass (no other module here needed)."""

from __future__ import annotations

from specscope.profiler.session.records import Round


def instrumented(r: Round) -> bool:
    """A round whose draft, verify and rollback were timed apart (older sessions have only these)."""
    return r.get("kind", "instrumented") == "instrumented"


def first_repeat(r: dict) -> bool:
    """A round of a case's first repeat. Repeats of a seeded run draft the same tokens again; counting the copies
    would narrow acceptance's interval with no new evidence."""
    return not r.get("repeat")


def counts_for_acceptance(r: Round) -> bool:
    """A round acceptance counts: of the first repeat, and not of a paired run's ledger pass (which repeats the
    measured pass's drafts on the same case)."""
    return not r.get("repeat") and r.get("pass") != "ledger"
