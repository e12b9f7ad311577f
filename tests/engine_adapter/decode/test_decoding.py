"""Plain decoding equals mlx-lm; speculative greedy equals plain (hybrid included); rollback is exact."""

import mlx.core as mx
import numpy as np
import pytest
from mlx_lm.generate import generate_step
from mlx_lm.models.cache import make_prompt_cache

from specscope.engine_adapter.decode.decoding import plain_generate, prefill, speculative_generate
from specscope.engine_adapter.drafters.drafter import Draft, Drafter, DraftModelDrafter, NgramDrafter
from specscope.engine_adapter.cache.capture import capturing, install_capture
from specscope.engine_adapter.cache.rollback import VerifyRollback
from specscope.engine_adapter.decode.records import tokens_of

N = 24


@pytest.fixture(scope="module")
def plain_hybrid(hybrid, prompt):
    return tokens_of(list(plain_generate(hybrid.model, prompt, N)))


@pytest.mark.parametrize("which", ["hybrid", "dense"])
def test_plain_greedy_equals_mlx_lm(which, request, prompt):
    lm = request.getfixturevalue(which)
    ref = [t for t, _ in generate_step(mx.array(prompt), lm.model, max_tokens=N)]
    ours = tokens_of(list(plain_generate(lm.model, prompt, N)))
    assert ours == ref


def test_plain_records_times(hybrid, prompt):
    ev = list(plain_generate(hybrid.model, prompt, 6))
    assert ev[0]["event"] == "prefill" and ev[0]["n_prompt"] == len(prompt)
    assert [e["index"] for e in ev[1:]] == [1, 2, 3, 4, 5]
    assert all(e["ms"] > 0 for e in ev)


@pytest.mark.parametrize("k", [1, pytest.param(2, marks=pytest.mark.slow), 4])  # k = 2 in the slow set (~2.4 s each)
@pytest.mark.parametrize("kind", ["draft", "ngram"])
def test_speculative_greedy_equals_plain_on_hybrid(k, kind, hybrid, draft, prompt, plain_hybrid):
    drafter = DraftModelDrafter(draft.model) if kind == "draft" else NgramDrafter()
    ev = list(speculative_generate(hybrid.model, prompt, drafter, k, N))
    rounds = ev[1:]
    assert all(len(r["drafted"]) <= k and 0 <= r["accepted"] <= len(r["drafted"]) for r in rounds)
    assert sum(len(r["emitted"]) for r in rounds) + 1 == N
    # On the CPU backend batched and single-row kernels agree exactly; a mismatch is a bug here.
    assert tokens_of(ev) == plain_hybrid


class ForcedDrafter(Drafter):
    """Drafts the true continuation but makes draft ``wrong_at`` wrong: exactly that many are accepted."""

    kind = "forced"

    def __init__(self, plain, wrong_at, vocab):
        self.plain, self.wrong_at, self.vocab, self.pos = plain, wrong_at, vocab, 1

    def draft(self, last_token, k):
        toks = [self.plain[min(self.pos + i, len(self.plain) - 1)] for i in range(k)]
        if self.wrong_at < k:
            toks[self.wrong_at] = (toks[self.wrong_at] + 1) % self.vocab
        return Draft(toks)

    def update(self, accepted, draft, emitted, hidden=None):
        self.pos += len(emitted)


# k = 3 (~12 s) with `pytest -m slow`; every cache kind's rollback is tested by default in cache/test_conformance.py
@pytest.mark.parametrize("k", [1, pytest.param(3, marks=pytest.mark.slow)])
def test_rollback_at_every_acceptance_count(k, hybrid, prompt, plain_hybrid):
    for n in range(k + 1):
        drafter = ForcedDrafter(plain_hybrid, n, hybrid.vocab_size)
        ev = list(speculative_generate(hybrid.model, prompt, drafter, k, N))
        full = [r for r in ev[1:] if len(r["drafted"]) == k]
        assert full and all(r["accepted"] == n for r in full), (n, [r["accepted"] for r in full])
        assert tokens_of(ev) == plain_hybrid, f"output diverged after rollback to {n} of {k}"


@pytest.mark.parametrize("accepted", [0, 1, 2, 3])
def test_rolled_back_state_equals_plain_state(accepted, hybrid, prompt, plain_hybrid):
    """After verify over k+1 positions and rollback to n, every cache equals a plain run over the same tokens."""
    model, k = hybrid.model, 3
    install_capture(model)
    tokens = plain_hybrid[: k + 1]
    cache = make_prompt_cache(model)
    mx.eval(prefill(model, cache, prompt))
    rb = VerifyRollback(model, cache)
    with capturing() as cap:
        mx.eval(model(mx.array(tokens)[None], cache=cache))
    rb.record(cap, k + 1)
    mx.eval(rb.rollback(accepted))

    ref = make_prompt_cache(model)
    mx.eval(prefill(model, ref, prompt))
    mx.eval(model(mx.array(tokens[: accepted + 1])[None], cache=ref))
    for c, r in zip(cache, ref):
        if hasattr(c, "offset"):
            assert c.offset == r.offset
            assert np.allclose(np.array(c.state[0][..., : c.offset, :]), np.array(r.state[0][..., : r.offset, :]), atol=1e-5)
        else:
            for a, b in zip(c.cache, r.cache):
                assert a.shape == b.shape
                assert np.allclose(np.array(a), np.array(b), atol=1e-5)


def test_ngram_drafter_proposes_repeats():
    d = NgramDrafter(max_ngram=2)
    d.begin([1, 2, 3, 4, 1, 2], 3)
    assert d.draft(3, 3).tokens == [4, 1, 2]
    d.update(1, Draft([4, 1, 2]), [4, 9])
    assert d.context[-2:] == [4, 9]
