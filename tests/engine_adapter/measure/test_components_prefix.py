"""What a components call does not redo: the case's prompt is prefilled once for all of its calls (an entry kept
apart from the long-context store), and the drafter's state over the context once per call (``hold_prefix``), so
each sample's begin fills in only its last positions. Both are exact copies, and neither is left where a later pass
could start from it."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest
from mlx_lm.models.cache import make_prompt_cache

from specscope.engine_adapter.cache import context
from specscope.engine_adapter.cache.hidden import install_tap, tapping
from specscope.engine_adapter.decode.decoding import plain_generate, prefill
from specscope.engine_adapter.decode.records import tokens_of
from specscope.engine_adapter.drafters.drafter import DraftModelDrafter
from specscope.engine_adapter.drafters.mtp import load_mtp_drafter
from specscope.engine_adapter.engine import Engine, EngineParams


@pytest.fixture(autouse=True)
def _clear(hybrid, draft):
    """The session's shared models start and end each test with nothing stored."""
    for m in (hybrid.model, draft.model):
        context.clear(m)
    yield
    for m in (hybrid.model, draft.model):
        context.clear(m)


@pytest.fixture
def prefilled(monkeypatch):
    """Every ``context.run_prefill``: (the model's id, how many positions)."""
    seen: list[tuple[int, int]] = []
    real = context.run_prefill

    def counting(model, cache, tokens, *a, **kw):
        seen.append((id(model), len(tokens)))
        return real(model, cache, tokens, *a, **kw)

    monkeypatch.setattr(context, "run_prefill", counting)
    return seen


def test_a_prefill_from_a_kept_entry_equals_a_full_prefill_and_the_store_never_offers_it(hybrid, prompt):
    install_tap(hybrid.model)
    tokens = prompt + prompt[:7]
    with tapping() as tap:
        full_cache = make_prompt_cache(hybrid.model)
        full = prefill(hybrid.model, full_cache, tokens)
        mx.eval(full)
        full_hidden = tap.hidden("post-norm")
    entry = context.prefill_entry(hybrid.model, prompt, with_hidden=True)
    assert context.find(hybrid.model, tokens) is None  # kept apart: no other prefill starts from it
    with tapping() as tap:
        cache = make_prompt_cache(hybrid.model)
        out = prefill(hybrid.model, cache, tokens, start=entry)
        mx.eval(out)
        hidden = tap.hidden("post-norm")
    assert hidden.shape == full_hidden.shape  # the entry's hidden states fed first: every position, as after a full prefill
    np.testing.assert_allclose(np.array(out), np.array(full), atol=2e-4, rtol=2e-4)
    np.testing.assert_allclose(np.array(hidden), np.array(full_hidden), atol=2e-4, rtol=2e-4)
    assert int(mx.argmax(out)) == int(mx.argmax(full))
    assert [c.offset for c in cache if hasattr(c, "offset")] == [c.offset for c in full_cache if hasattr(c, "offset")]
    # not a proper prefix (the same tokens): nothing restored, everything prefilled
    assert context.restore_entry(entry, make_prompt_cache(hybrid.model), prompt) == 0


@pytest.mark.parametrize("kind", [pytest.param("draft", marks=pytest.mark.slow), "mtp"])  # draft: slow set (~2.2 s)
def test_a_held_prefix_spares_the_drafters_prefill_and_changes_nothing_it_drafts(kind, hybrid, draft, prompt, prefilled):
    k = 3
    install_tap(hybrid.model)
    cont = tokens_of(list(plain_generate(hybrid.model, prompt, 12)))
    seq = prompt + cont
    with tapping() as tap:
        mx.eval(prefill(hybrid.model, make_prompt_cache(hybrid.model), seq))
        hidden = tap.hidden("post-norm")
    make = (lambda: DraftModelDrafter(draft.model)) if kind == "draft" else (lambda: load_mtp_drafter(hybrid))
    start = len(seq) - 2

    def drafts(d):
        d.begin(seq[:start], seq[start], hidden=hidden[:start])
        out = d.draft(seq[start], k)
        out.materialize()
        return out.tokens

    alone = drafts(make())
    d = make()
    held = seq[:start - 3]
    key = d.model if kind == "draft" else d.context_key
    steps: list[int] = []  # positions the MTP head reads, call by call
    if kind == "mtp":
        real_step = d._step
        d._step = lambda tokens, hidden: steps.append(tokens.shape[0]) or real_step(tokens, hidden)
    with d.hold_prefix(held, hidden=hidden[:len(held)]):
        assert context.lookup(key, held) is not None
        prefilled.clear()
        steps.clear()
        assert drafts(d) == alone
        # the begin filled in only the positions after the held prefix (then the draft: a catch-up and k - 1 steps)
        if kind == "draft":
            assert prefilled == [(id(draft.model), start - len(held))]
        else:
            assert steps == [start - len(held), 1] + [1] * (k - 1)
    assert context.lookup(key, held) is None  # gone on exit: no later pass starts from it
    assert drafts(d) == alone


@pytest.mark.parametrize("drafter", ["draft", pytest.param("mtp", marks=pytest.mark.slow), "dflash"])  # mtp: slow set
def test_a_cases_component_calls_prefill_its_prompt_once_and_leave_nothing_stored(drafter, prefilled, monkeypatch):
    e = Engine.open(EngineParams(demo=True, drafter=drafter, num_draft_tokens=2))
    prompt = e.encode("Explain why a verification pass over several tokens can cost as much as decoding.")
    plain = [r["token"] for r in e.plain(prompt, 16)]
    spec = [r.get("emitted") for r in e.speculative(prompt, plain, 16)]
    target = id(e.target.model)
    prefilled.clear()
    calls = [e.components(prompt, plain, reps=1, at=at) for at in (0.25, 0.5, 0.75)]
    on_target = [n for m, n in prefilled if m == target]
    # the prompt once (its entry, with the hidden states a head or a DFlash drafter reads), then each call only its
    # part of the continuation
    assert on_target == [len(prompt)] + [c["context"] - len(prompt) for c in calls]
    assert e._held_prompt is not None and e._held_prompt.tokens == prompt
    assert (e._held_prompt.extra["hidden"] is not None) == (drafter != "draft")
    assert context.find(e.target.model, prompt + plain) is None
    assert not len(context.contexts_of(e.target.model))  # no drafter's copy left behind either (an MTP head's is here)
    assert e.draft is None or not len(context.contexts_of(e.draft.model))
    with monkeypatch.context() as m:  # the same calls prefilling everything: the same drafts
        m.setattr(e, "_prompt_entry", lambda *a: None)
        again = [e.components(prompt, plain, reps=1, at=at) for at in (0.25, 0.5, 0.75)]
    assert [c["round_drafts_agree"] for c in again] == [c["round_drafts_agree"] for c in calls]
    assert [r.get("emitted") for r in e.speculative(prompt, plain, 16)] == spec  # a pass after them: unchanged
    other = e.encode("def add(a, b):")
    e.components(other, [r["token"] for r in e.plain(other, 8)], reps=1)
    assert e._held_prompt.tokens == other  # the next case's prompt replaces the last one's


def test_no_prompt_entry_where_a_stored_long_context_already_starts_the_prompt():
    e = Engine.open(EngineParams(demo=True, drafter="ngram", num_draft_tokens=2))
    ctx = e.encode("A long document, stored once. " * 6)
    e.prepare_context(ctx)
    prompt = ctx + e.encode("def add(a, b):")
    plain = [r["token"] for r in e.plain(prompt, 8)]
    e.components(prompt, plain, reps=1)
    assert e._held_prompt is None  # that copy already spares the prefill: no second copy of the context is held
