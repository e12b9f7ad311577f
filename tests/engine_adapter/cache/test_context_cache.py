"""A long context prefilled once and stored: every later prefill that starts with it starts from a copy, and the
output is exactly the output of prefilling everything (the target's caches, a draft model's, the MTP head's)."""

from __future__ import annotations

import pytest

from specscope.engine_adapter.cache import context
from specscope.engine_adapter.engine import Engine, EngineParams
from specscope.profiler.run.context import context_tokens


@pytest.mark.parametrize("drafter", ["mtp", "draft"])
def test_stored_context_gives_the_same_output_and_is_timed_apart(drafter):
    e = Engine.open(EngineParams(demo=True, drafter=drafter, num_draft_tokens=2))
    ctx = context_tokens(e.encode, 96, "mixed")
    prompt = ctx + e.encode("def add(a, b):")
    ref_plain = [r["token"] for r in e.plain(prompt, 8)]
    ref_spec = [(r["accepted"], r["emitted"]) for r in list(e.speculative(prompt, ref_plain, 8))[1:]]
    facts = e.prepare_context(ctx)
    assert facts["tokens"] == 96 and facts["prefill_ms"] > 0 and not facts["reused"]
    assert facts["draft_prefill_ms"] is not None and facts["draft_prefill_ms"] >= 0  # the drafter's own, apart
    assert context.find(e.target.model, prompt) is not None
    recs = list(e.plain(prompt, 8))
    assert recs[0]["n_prompt"] == len(prompt)
    assert [r["token"] for r in recs] == ref_plain
    assert [(r["accepted"], r["emitted"]) for r in list(e.speculative(prompt, ref_plain, 8))[1:]] == ref_spec
    again = e.prepare_context(ctx)
    assert again["reused"] and again["prefill_ms"] == facts["prefill_ms"]
    # a prompt that does not start with the context prefills everything itself
    assert context.find(e.target.model, e.encode("hello") + ctx) is None


def test_a_stored_cache_is_not_changed_by_the_runs_that_copy_it():
    e = Engine.open(EngineParams(demo=True, drafter="ngram", num_draft_tokens=2))
    ctx = context_tokens(e.encode, 64, "code")
    e.prepare_context(ctx)
    p1, p2 = ctx + e.encode("import os"), ctx + e.encode("你好")
    first = [r["token"] for r in e.plain(p1, 6)]
    [r["token"] for r in e.plain(p2, 12)]
    assert [r["token"] for r in e.plain(p1, 6)] == first
    e.forget_contexts()
    assert [r["token"] for r in e.plain(p1, 6)] == first
