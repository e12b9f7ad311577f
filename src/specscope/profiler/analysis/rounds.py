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


def full_round(r: Round, k: int) -> bool:
    """A round the division describes: a chain round that drafted ``k``; a tree round (``--tree-budget``) that could
    draft its whole budget to depth ``k`` (its depth limit not cut by the output's end, the tree analogue of
    ``len(drafted) == k``; a tree round recorded before the limit was kept counts as full)."""
    tree = r.get("tree")
    if tree is None:
        return len(r["drafted"]) == k
    return tree.get("max_depth", k) == k


def measured_rounds(rounds: list[Round]) -> list[Round]:
    """The rounds a case's measured speed comes from: its end-to-end rounds where it has them, else all."""
    return [r for r in rounds if not instrumented(r)] or list(rounds)


def judged_rounds(case, k: int) -> list[Round]:
    """The measured rounds the prediction is judged against: the full ones (k drafts; a tree's: ``full_round``). The round model prices a round
    of k drafts; near a case's end the engine drafts fewer (only the tokens left), and those cheaper, shorter rounds
    are no round the division describes (at k = 15 with 48 tokens a case they were a third of its rounds, and the
    prediction read 13% low against all of them). A case without a full round keeps all its measured rounds."""
    rounds = measured_rounds(case["spec"]["rounds"])
    full = [r for r in rounds if full_round(r, k)]
    return full or rounds
