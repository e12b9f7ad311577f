"""The MTP head drafter: loading (own checkpoint or --mtp-weights), shape checks, greedy equality, its own rollback."""

import shutil

import mlx.core as mx
import pytest

from specscope.engine_adapter.decode.decoding import plain_generate, speculative_generate
from specscope.errors import SpecscopeError
from specscope.engine_adapter.model.loader import load_model
from specscope.engine_adapter.drafters.mtp import MTPDrafter, load_mtp_drafter
from specscope.engine_adapter.decode.records import tokens_of

N = 24


@pytest.fixture(scope="module")
def plain(hybrid, prompt):
    return tokens_of(list(plain_generate(hybrid.model, prompt, N)))


class CheckedMTP(MTPDrafter):
    """Asserts the MTP cache invariant after every round: one entry per verified (h_j, t_j+1) pair."""

    def begin(self, prompt, first_token, hidden=None):
        super().begin(prompt, first_token, hidden)
        self.n_known = len(prompt)  # pairs whose next token is known
        assert self.pending_hidden.shape[0] == len(self.pending_tokens)
        assert self.cache.offset + len(self.pending_tokens) == self.n_known

    def update(self, accepted, draft, emitted, hidden=None):
        super().update(accepted, draft, emitted, hidden)
        self.n_known += len(emitted)
        self.accepted_seen = getattr(self, "accepted_seen", set()) | {accepted}
        assert self.cache.offset + len(self.pending_tokens) == self.n_known
        assert self.pending_hidden.shape[0] == len(self.pending_tokens)


# post-norm at k = 3 and pre-norm at k = 1 in the default run, the other two in the slow set (~2.5 s each)
@pytest.mark.parametrize("k,hidden_mode", [(3, "post-norm"), (1, "pre-norm"),
                                           pytest.param(1, "post-norm", marks=pytest.mark.slow),
                                           pytest.param(3, "pre-norm", marks=pytest.mark.slow)])
def test_mtp_greedy_equals_plain(k, hidden_mode, hybrid, prompt, plain):
    base = load_mtp_drafter(hybrid, hidden=hidden_mode)
    drafter = CheckedMTP(hybrid, base.head, hidden=hidden_mode)
    ev = list(speculative_generate(hybrid.model, prompt, drafter, k, N))
    assert tokens_of(ev) == plain
    acc = sum(r["accepted"] for r in ev[1:])
    assert acc > 0  # the demo head agrees with the trunk part of the time
    if k == 3:
        assert len(drafter.accepted_seen) >= 2  # the MTP cache was rolled back at several acceptance counts


def test_mtp_weights_from_another_directory(tmp_path, model_dirs, hybrid, prompt, plain):
    converted = tmp_path / "converted"
    shutil.copytree(model_dirs["hybrid"], converted)
    (converted / "model-mtp.safetensors").unlink()
    original = tmp_path / "original"
    original.mkdir()
    shutil.copy(model_dirs["hybrid"] / "model-mtp.safetensors", original / "model-00002-of-00002.safetensors")
    target = load_model(converted)
    with pytest.raises(SpecscopeError, match="no mtp"):
        load_mtp_drafter(target)
    drafter = load_mtp_drafter(target, weights_path=str(original))
    ev = list(speculative_generate(target.model, prompt, drafter, 2, N))
    assert tokens_of(ev) == plain


def test_mtp_shape_mismatch_is_refused(tmp_path, model_dirs, hybrid):
    bad = tmp_path / "bad"
    bad.mkdir()
    w = mx.load(str(model_dirs["hybrid"] / "model-mtp.safetensors"))
    w["mtp.fc.weight"] = mx.zeros((16, 32), dtype=mx.bfloat16)
    mx.save_safetensors(str(bad / "model.safetensors"), w, metadata={"format": "pt"})
    with pytest.raises(SpecscopeError, match="different model"):
        load_mtp_drafter(hybrid, weights_path=str(bad))


def test_mtp_on_a_model_without_head(dense):
    with pytest.raises(SpecscopeError, match="no mtp"):
        load_mtp_drafter(dense)


def test_an_engine_loads_its_head_once_and_every_pass_is_still_exact(monkeypatch):
    """An engine makes every MTP drafter from one head (loaded once, as a production engine does); a drafter's state is
    its own cache, so passes and a components call in between leave the next pass exact."""
    from specscope.engine_adapter.drafters import mtp
    from specscope.engine_adapter.engine import Engine, EngineParams

    eng = Engine.open(EngineParams(model=None, demo=True, drafter="mtp", num_draft_tokens=2))
    loads = []
    build = mtp.build_mtp_head
    monkeypatch.setattr(mtp, "build_mtp_head", lambda *a, **kw: loads.append(1) or build(*a, **kw))
    prompt = eng.encode("The history of the printing press")
    plain = [r["token"] for r in eng.plain(prompt, N)]
    first, second = eng.make_drafter(), eng.make_drafter()
    assert first is not second and first.head is second.head
    for _ in range(2):
        assert tokens_of(list(eng.speculative(prompt, plain, N))) == plain
        eng.components(prompt, plain, reps=1)
    assert len(loads) == 1
