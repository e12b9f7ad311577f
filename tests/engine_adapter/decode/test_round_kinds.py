"""End-to-end rounds (drafts chained lazily into the verify, one sync) give the same tokens as instrumented ones."""

from __future__ import annotations

import pytest

from specscope.engine_adapter.decode.decoding import plain_generate, speculative_generate
from specscope.engine_adapter.drafters.drafter import DraftModelDrafter, NgramDrafter
from specscope.engine_adapter.drafters.mtp import load_mtp_drafter
from specscope.engine_adapter.decode.records import tokens_of

N = 20


@pytest.fixture(scope="module")
def plain(hybrid, prompt):
    return tokens_of(list(plain_generate(hybrid.model, prompt, N)))


# one kind per drafter in the default run (each kind twice), the other three in the slow set (~2 s each)
@pytest.mark.parametrize("kinds,drafter", [("end_to_end", "mtp"), ("alternate", "draft"), ("alternate", "ngram"),
                                           pytest.param("alternate", "mtp", marks=pytest.mark.slow),
                                           pytest.param("end_to_end", "draft", marks=pytest.mark.slow),
                                           pytest.param("end_to_end", "ngram", marks=pytest.mark.slow)])
def test_round_kinds_keep_greedy_output(kinds, drafter, hybrid, draft, prompt, plain):
    d = {"mtp": lambda: load_mtp_drafter(hybrid), "draft": lambda: DraftModelDrafter(draft.model),
         "ngram": NgramDrafter}[drafter]()
    rounds = list(speculative_generate(hybrid.model, prompt, d, 3, N, round_kinds=kinds))
    assert tokens_of(rounds) == plain
    spec = rounds[1:]
    kinds_seen = [r["kind"] for r in spec]
    if kinds == "end_to_end":
        assert set(kinds_seen) == {"end_to_end"}
    else:
        assert kinds_seen[:4] == ["instrumented", "end_to_end", "instrumented", "end_to_end"][: len(kinds_seen[:4])]
    for r in spec:
        timed_apart = (r["draft_ms"], r["verify_ms"], r["rollback_ms"])
        assert (None not in timed_apart) if r["kind"] == "instrumented" else timed_apart == (None, None, None)
        assert r["ms"] > 0


def test_unknown_round_kind_is_refused(hybrid, prompt):
    with pytest.raises(ValueError, match="round_kinds"):
        list(speculative_generate(hybrid.model, prompt, NgramDrafter(), 2, 4, round_kinds="fast"))
