"""The prediction's inputs timed apart (``components.measure_components``) on the tiny generated models."""

from __future__ import annotations

import pytest

from specscope.engine_adapter.measure.components import measure_components
from specscope.engine_adapter.decode.decoding import plain_generate
from specscope.engine_adapter.drafters.drafter import DraftModelDrafter, NgramDrafter
from specscope.engine_adapter.drafters.mtp import load_mtp_drafter
from specscope.engine_adapter.decode.records import tokens_of
from specscope.engine_adapter.decode.sampling import Sampling


@pytest.fixture(scope="module")
def plain24(hybrid, prompt):
    """The target's own greedy continuation, once for the module (a shorter one is its prefix)."""
    return tokens_of(list(plain_generate(hybrid.model, prompt, 24)))


@pytest.mark.parametrize("kind", ["mtp", "ngram", "draft"])
def test_components_time_a_real_round_and_leave_the_drafter_where_a_real_round_would(kind, hybrid, draft, prompt,
                                                                                       plain24):
    k, reps = 2, 2
    cont = plain24[:16]
    make = {"mtp": lambda: load_mtp_drafter(hybrid), "ngram": NgramDrafter,
            "draft": lambda: DraftModelDrafter(draft.model)}[kind]
    comp = measure_components(hybrid.model, make, Sampling(), prompt, cont, k, reps=reps)
    n = reps * (k + 1)
    assert len(comp["verify_ms"]) == len(comp["round_ms"]) == len(comp["draft_ms"]) == n
    assert comp["draft_ms"] == pytest.approx([r - v for r, v in zip(comp["round_ms"], comp["verify_ms"])])
    assert all(x > 0 for x in comp["round_ms"]) and len(comp["draft_alone_ms"]) == 1
    assert sorted(comp["rollback_ms"]) == [str(a) for a in range(k + 1)]
    if kind != "draft":  # state from true tokens and hidden states only: after any earlier round, the same proposal
        assert comp["round_drafts_agree"] == 1.0
    else:
        assert comp["round_drafts_agree"] is not None


def test_components_time_the_bookkeeping_and_stand_where_they_are_told(hybrid, prompt, plain24):
    """Each timed round's work after the read-back (the rollback's record and the drafter's update) is timed apart
    beside the earlier accepted count its draft caught up from; ``at`` moves the timed rounds along the case."""
    k, reps = 2, 1
    cont = plain24
    early = measure_components(hybrid.model, lambda: load_mtp_drafter(hybrid), Sampling(), prompt, cont, k, reps=reps, at=0.25)
    late = measure_components(hybrid.model, lambda: load_mtp_drafter(hybrid), Sampling(), prompt, cont, k, reps=reps, at=0.75)
    n = reps * (k + 1)
    for comp in (early, late):
        assert comp["prior_accepted"] == [a % (k + 1) for a in range(n)]
        assert len(comp["bookkeeping_ms"]) == n and all(x > 0 for x in comp["bookkeeping_ms"])
        assert comp["round_drafts_agree"] == 1.0  # the drafter was left where a real round leaves it
    assert early["context"] == len(prompt) + 6 - 1 and late["context"] == len(prompt) + 18 - 1
    assert early["at"] == 0.25 and late["at"] == 0.75
    with pytest.raises(ValueError):
        measure_components(hybrid.model, NgramDrafter, Sampling(), prompt, cont, k, at=1.5)


def test_the_timed_round_follows_a_verify_not_the_drafters_own_preparation(hybrid, draft, prompt, monkeypatch, plain24):
    """What runs just before a real round's draft is the earlier round's verify and rollback. A round timed straight
    after the drafter was made ready (its weights and cache just touched) priced a draft model's round 5.6% low
    (0.944 of the real rounds it was interleaved with, 400 rounds), so each sample readies the drafter first, then
    runs the verify and the rollback, then the timed round. The log of who ran in which order says so."""
    log: list[str] = []
    target_cls = type(hybrid.model)
    target_call = target_cls.__call__

    def logged_target(self, inputs, *a, **kw):
        log.append(f"target{inputs.shape[-1]}")
        return target_call(self, inputs, *a, **kw)

    class LoggedDrafter(DraftModelDrafter):
        def begin(self, prompt, first_token, hidden=None):
            log.append("ready")
            super().begin(prompt, first_token, hidden)

        def draft(self, last_token, k, lazy=False):
            log.append("draft")
            return super().draft(last_token, k, lazy)

    k = 2
    cont = plain24[:16]
    monkeypatch.setattr(target_cls, "__call__", logged_target)
    measure_components(hybrid.model, lambda: LoggedDrafter(draft.model), Sampling(), prompt, cont, k, reps=1)
    # a sample: ready, its earlier round's draft, then the verify alone (k+1 positions), then the timed round's draft
    # and its verify; the drafter's preparation is never what the timed draft follows
    timed = [i for i in range(2, len(log)) if log[i] == "draft" and log[i - 1] != "ready" and log[i + 1:i + 2] == [f"target{k + 1}"]]
    assert len(timed) >= k + 1, log
    for i in timed[-(k + 1):]:
        assert log[i - 1] == f"target{k + 1}", log[i - 4:i + 2]  # the verify (and its rollback) ran just before
        assert "ready" in log[max(0, i - 4):i], log[i - 4:i + 2]  # the drafter was readied within the same sample
