"""The DFlash drafter: the multi-layer tap, greedy output equal to plain decoding at every accepted length 0..B−1 on
the Gated DeltaNet hybrid, the drafter's own context after every accepted length (and the check's power), sampling at
temperature against the distribution the drafter drew from (and the test's power), and a run end to end."""

from collections import Counter

import mlx.core as mx
import numpy as np
import pytest
from chi2 import chi2_goodness_of_fit
from mlx_lm.models.base import create_attention_mask
from mlx_lm.models.cache import make_prompt_cache

from specscope.engine_adapter.cache.hidden import install_tap, tapped_layers, tapping
from specscope.engine_adapter.decode import sampling as sampling_mod
from specscope.engine_adapter.decode.decoding import plain_generate, prefill, speculative_generate
from specscope.engine_adapter.decode.records import tokens_of
from specscope.engine_adapter.decode.sampling import Sampling
from specscope.engine_adapter.drafters.dflash import DFlashDrafter, load_dflash_drafter
from specscope.engine_adapter.drafters.drafter import Draft
from specscope.engine_adapter.measure.dflash_check import drafter_context_exactness
from specscope.engine_adapter.model.dflash_demo import build_dflash_demo
from specscope.errors import SpecscopeError

N = 24
B = 8  # the drafter's block: up to 7 drafts a round


@pytest.fixture(scope="module")
def dflash_dir(tmp_path_factory, hybrid):
    return build_dflash_demo(tmp_path_factory.mktemp("dflash") / "d", hybrid.checkpoint.text_config, "hybrid", block_size=B)


@pytest.fixture(scope="module")
def base(hybrid, dflash_dir):
    return load_dflash_drafter(hybrid, dflash_dir)


@pytest.fixture(scope="module")
def plain(hybrid, prompt):
    return tokens_of(list(plain_generate(hybrid.model, prompt, N)))


# -- the tap ---------------------------------------------------------------------------------------------------------

def test_tap_records_the_layers_a_separate_forward_computes(draft, prompt):
    """On a plain qwen3 model: the tapped outputs of layers 0 and 1 equal a forward run layer by layer by hand."""
    model = draft.model
    install_tap(model, layers=(1, 0))
    assert tapped_layers(model) == (0, 1)
    with tapping() as tap:
        mx.eval(model(mx.array(prompt)[None]))
    got = tap.hidden((1, 0))
    inner = model.model
    h = inner.embed_tokens(mx.array(prompt)[None])
    mask = create_attention_mask(h, None)
    outs = []
    for layer in inner.layers:
        h = layer(h, mask, None)
        outs.append(h[0])
    want = mx.concatenate([outs[1], outs[0]], axis=-1)
    assert got.shape == (len(prompt), 2 * h.shape[-1])
    assert np.allclose(np.array(got), np.array(want), atol=1e-5)
    with pytest.raises(RuntimeError, match="no tap on the output of layer"):
        tap.hidden((0, 3))


def test_tap_over_prefill_and_verify_equals_one_forward(hybrid, prompt, plain, base):
    """On the hybrid: the features a run collects (prefill, then a verify over 5 positions) equal those of one forward
    over the same tokens; no tap open, nothing is recorded."""
    model, ids = hybrid.model, base.hidden_mode
    cache = make_prompt_cache(model)
    with tapping() as tap:
        mx.eval(prefill(model, cache, prompt))
    parts = [tap.hidden(ids)]
    with tapping() as tap:
        mx.eval(model(mx.array(plain[:5])[None], cache=cache))
    parts.append(tap.hidden(ids))
    mx.eval(model(mx.array(plain[5:7])[None], cache=cache))  # no tap open: recorded nowhere
    with tapping() as tap:
        mx.eval(model(mx.array(prompt + plain[:5])[None], cache=make_prompt_cache(model)))
    whole = tap.hidden(ids)
    got = mx.concatenate(parts, axis=0)
    assert got.shape == whole.shape == (len(prompt) + 5, len(ids) * hybrid.checkpoint.text_config["hidden_size"])
    assert np.allclose(np.array(got), np.array(whole), atol=1e-4)


# -- greedy exactness ----------------------------------------------------------------------------------------------------

class ForcedDFlash(DFlashDrafter):
    """The real DFlash drafter (its forward reads its pending context every round; its update keeps the verified
    features), its block then replaced by the plain continuation made wrong at draft ``wrong_at``: every full round
    accepts exactly that many. Asserts the context invariant after every round: the drafter holds (read or pending)
    the features of every position but the newest token."""

    def __init__(self, target, base, plain, wrong_at):
        super().__init__(target, base.model, base.spec)
        self.plain, self.wrong_at, self.pos, self.seen = plain, wrong_at, 1, set()

    def begin(self, prompt, first_token, hidden=None):
        super().begin(prompt, first_token, hidden)
        self.n_tokens = len(prompt) + 1

    def draft(self, last_token, k, lazy=False):
        real = super().draft(last_token, k)
        toks = [self.plain[min(self.pos + i, len(self.plain) - 1)] for i in range(k)]
        if self.wrong_at < k:
            toks[self.wrong_at] = (toks[self.wrong_at] + 1) % self.spec.vocab_size
        return Draft(toks, extra=real.extra)

    def update(self, accepted, draft, emitted, hidden=None):
        super().update(accepted, draft, emitted, hidden)
        self.pos += len(emitted)
        self.n_tokens += len(emitted)
        self.seen.add(accepted)
        pending = 0 if self.pending is None else self.pending.shape[0]
        assert self.read_positions() + pending == self.n_tokens - 1


# the edges (0, 1, B−2, B−1 accepted) in the default run, the middle in the slow set (`pytest -m slow`), as DFlash2's
@pytest.mark.parametrize("wrong_at", [w if w in (0, 1, B - 2, B - 1) else pytest.param(w, marks=pytest.mark.slow)
                                      for w in range(B)])
def test_greedy_equals_plain_at_every_accepted_length(wrong_at, hybrid, prompt, plain, base):
    k = B - 1
    # six full rounds at least (a round drafts k only while k + 1 tokens are left; 23 rounds at 0 accepted took 7 s)
    n = min(N, k + 1 + 6 * (wrong_at + 1))
    drafter = ForcedDFlash(hybrid, base, plain, wrong_at)
    ev = list(speculative_generate(hybrid.model, prompt, drafter, k, n))
    full = [r for r in ev[1:] if len(r["drafted"]) == k]
    assert full and all(r["accepted"] == wrong_at for r in full), [r["accepted"] for r in full]
    assert tokens_of(ev) == plain[:n], f"output diverged with {wrong_at} of {k} accepted"


# k = 3 instrumented in the default run (DFlash2's test runs k = 3 end to end there: the same loop, the other kind); in
# the slow set (pytest -m slow) k = 3 end to end, k = 1 instrumented and the whole block (k = 7) end to end (~11 s)
@pytest.mark.parametrize("k,round_kinds", [(3, "instrumented"), pytest.param(3, "end_to_end", marks=pytest.mark.slow),
                                           pytest.param(1, "instrumented", marks=pytest.mark.slow),
                                           pytest.param(B - 1, "end_to_end", marks=pytest.mark.slow)])
def test_greedy_equals_plain_with_the_drafters_own_drafts(k, round_kinds, hybrid, prompt, plain, base):
    drafter = DFlashDrafter(hybrid, base.model, base.spec)
    ev = list(speculative_generate(hybrid.model, prompt, drafter, k, N, round_kinds=round_kinds))
    assert tokens_of(ev) == plain
    assert all(r["extra"].get("block") == len(r["drafted"]) + 1 for r in ev[1:] if r["drafted"])


def test_more_drafts_than_the_block_holds_are_refused(hybrid, base):
    d = DFlashDrafter(hybrid, base.model, base.spec)
    d.begin([1, 2, 3], 4, hidden=mx.zeros((3, base.model.fc.weight.shape[1])))
    with pytest.raises(SpecscopeError, match="at most block size − 1 = 7"):
        d.draft(4, B)


# -- the drafter's own context ---------------------------------------------------------------------------------------------

@pytest.mark.slow  # the drafter's context against a fresh one at every accepted length (~17 s); greedy equality at every accepted length stays in the default run
def test_drafter_context_is_exact_after_every_accepted_length(hybrid, prompt, base):
    res = drafter_context_exactness(hybrid.model, lambda: DFlashDrafter(hybrid, base.model, base.spec), prompt,
                                    B - 1, 1e-3)
    assert [r["accepted"] for r in res["rows"]] == list(range(B))
    assert res["exact"], res["rows"]


class KeepsARejectedPosition(DFlashDrafter):
    """A broken update: it keeps the features of one rejected draft as if it had been accepted."""

    def update(self, accepted, draft, emitted, hidden=None):
        super().update(min(accepted + 1, len(draft.tokens)), draft, emitted, hidden)


def test_the_context_check_sees_a_drafter_that_keeps_a_rejected_position(hybrid, prompt, base):
    res = drafter_context_exactness(hybrid.model, lambda: KeepsARejectedPosition(hybrid, base.model, base.spec),
                                    prompt, 3, 1e-3)
    bad = [r for r in res["rows"] if r["accepted"] < 3]
    assert not res["exact"]
    assert all(r["relative_error"] > 1e-3 and r["context_positions"] != r["expected_positions"] for r in bad), bad


# -- sampling at temperature -----------------------------------------------------------------------------------------------
#
# The first token a round emits is the first draft when the rule accepts it, else a draw from the residual: either way it
# must be distributed as the target's own distribution at that position, p0. Here the context and the last token are
# fixed, and each seed gives one real round: the drafter (a random DFlash drafter for the small qwen3 demo) draws its
# block from its own distribution at the run's temperature and hands it over as Draft.probs, the target verifies it in
# one forward, and ``Sampling.verify`` decides. The emitted tokens are tested against p0 (goodness of fit); at this
# temperature the first draft is accepted about half the time, so both branches of the rule are exercised.

K, DRAWS, ALPHA = 2, 300, 1e-3
REGIME = {"temp": 0.5, "top_p": 1.0}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, draft):
    folder = build_dflash_demo(tmp_path_factory.mktemp("dflash-tiny") / "d", draft.checkpoint.text_config, "draft",
                               block_size=4)
    return draft, load_dflash_drafter(draft, folder), draft.encode("Why is the sky blue?")


@pytest.fixture(scope="module")
def seeded_rounds(tiny) -> tuple[list, int]:
    """DRAWS seeded rounds up to the rule's decision: the drafter's block drawn and the target's one verify forward
    (the costly part, ~60 ms a round). The rule is stateless (its draws are keyed by seed and position), so the fit
    and its power check decide on the same rounds, each with its own rule, and these run once for both."""
    from specscope.engine_adapter.cache.rollback import CacheSnapshot

    lm, base_drafter, prompt = tiny
    model = lm.model
    cache = make_prompt_cache(model)
    with tapping() as tap:
        last = int(mx.argmax(prefill(model, cache, prompt)).item())
        hidden = tap.hidden(base_drafter.hidden_mode)
    mx.eval(hidden, [c.state for c in cache])
    snapshot = CacheSnapshot(cache)
    rounds = []
    for seed in range(DRAWS):
        s = Sampling(**REGIME, seed=seed)
        d = DFlashDrafter(lm, base_drafter.model, base_drafter.spec, s)
        d.begin(prompt, last, hidden=hidden)
        out = d.draft(last, K)
        snapshot.restore()
        logits = model(mx.array([last] + out.tokens, dtype=mx.uint32)[None], cache=cache)[0]
        mx.eval(logits, *([] if out.probs is None else [out.probs]))
        rounds.append((s, out, logits))
    return rounds, len(prompt)


def first_tokens(seeded_rounds) -> tuple[Counter, Counter, np.ndarray]:
    """The first emitted token of the DRAWS seeded rounds under ``Sampling.verify`` (as patched), the first draft's
    acceptance counts, and p0."""
    rounds, position = seeded_rounds
    tokens, accepted, p0 = Counter(), Counter(), None
    for s, out, logits in rounds:
        n, bonus, _ = s.verify(logits, out, position)
        accepted[min(n, 1)] += 1
        tokens[out.tokens[0] if n > 0 else bonus] += 1
        if p0 is None:
            p0 = np.array(s.probs(logits)[0], dtype=np.float64)
    assert p0 is not None
    return tokens, accepted, p0


def goodness_of_fit(counts: Counter, p: np.ndarray) -> tuple[float, int]:
    """p-value and bins of the counts against p, tokens expected fewer than 5 times pooled into one bin."""
    total = sum(counts.values())
    big = [t for t in range(p.size) if p[t] * total >= 5]
    obs = [counts[t] for t in big] + [total - sum(counts[t] for t in big)]
    probs = [p[t] for t in big] + [1.0 - sum(p[t] for t in big)]
    keep = [i for i, q in enumerate(probs) if q * total >= 1e-9]
    return chi2_goodness_of_fit(np.array([obs[i] for i in keep], dtype=np.float64), np.array([probs[i] for i in keep])), len(keep)


def test_drafts_carry_the_distribution_they_were_drawn_from(tiny):
    lm, base_drafter, prompt = tiny
    s = Sampling(**REGIME, seed=3)
    d = DFlashDrafter(lm, base_drafter.model, base_drafter.spec, s)
    cache = make_prompt_cache(lm.model)
    with tapping() as tap:
        mx.eval(prefill(lm.model, cache, prompt))
    d.begin(prompt, 7, hidden=tap.hidden(d.hidden_mode))
    out = d.draft(7, 3)
    assert out.probs is not None and out.probs.shape == (3, base_drafter.spec.vocab_size)
    assert np.allclose(np.array(out.probs.sum(axis=-1)), 1.0, atol=1e-4)
    assert all(float(out.probs[i, t]) > 0 for i, t in enumerate(out.tokens))


@pytest.mark.slow  # a chi-square over many sampled runs (~18 s); the shared sampling rule's own test stays in the default run
def test_speculative_sampling_with_dflash_keeps_the_target_distribution(seeded_rounds):
    tokens, accepted, p0 = first_tokens(seeded_rounds)
    assert accepted[0] >= DRAWS // 10 and accepted[1] >= DRAWS // 10, accepted  # both branches of the rule
    p, bins = goodness_of_fit(tokens, p0)
    print(f"DFlash, correct rule: p = {p:.3g} over {bins} bins; first draft accepted {accepted[1]} of {DRAWS}")
    assert bins >= 3 and p > ALPHA, (p, bins, tokens.most_common(5))


def test_sampled_rounds_end_to_end_equal_instrumented_ones(tiny):
    """At temperature an end-to-end round hands the verify unevaluated drafts and their distribution: the same draws,
    the same decisions, the same output as rounds that read the drafts back first."""
    lm, base_drafter, prompt = tiny
    runs = []
    for kinds in ("instrumented", "end_to_end"):
        s = Sampling(**REGIME, seed=11)
        d = DFlashDrafter(lm, base_drafter.model, base_drafter.spec, s)
        ev = list(speculative_generate(lm.model, prompt, d, 3, 16, s, round_kinds=kinds))
        runs.append([(r["drafted"], r["accepted"], r["emitted"]) for r in ev[1:]])
    assert runs[0] == runs[1]
    assert any(a for _, a, _ in runs[0]) and any(len(dr) > a for dr, a, _ in runs[0])  # accepts and rejects


@pytest.mark.slow  # a check of the test above (its power), not of specscope: `pytest -m slow`
def test_the_fit_detects_a_broken_rule_with_dflash(seeded_rounds, monkeypatch):
    """The same test with a rule that accepts every draft: the emitted token is then the drafter's draw, whose
    distribution is not the target's, and the test sees it."""

    from specscope.engine_adapter.engines.audit import AlwaysAccept  # the known-wrong rule check --engine's power uses

    monkeypatch.setattr(sampling_mod.Sampling, "verify", AlwaysAccept.verify)
    tokens, accepted, p0 = first_tokens(seeded_rounds)
    assert accepted == Counter({1: DRAWS})
    p, bins = goodness_of_fit(tokens, p0)
    print(f"DFlash, always-accept rule: p = {p:.3g} over {bins} bins")
    assert p < ALPHA, (p, bins, tokens.most_common(5))


# -- the engine ----------------------------------------------------------------------------------------------------------

@pytest.mark.slow  # two engine runs from model folders (~19 s); `run --demo` with a DFlash drafter folder stays in the default run
def test_engine_runs_dflash_end_to_end_and_refuses_a_misfit(model_dirs, dflash_dir, tmp_path, prompt, plain):
    from specscope.engine_adapter.engine import Engine, EngineParams

    eng = Engine.open(EngineParams(model=str(model_dirs["hybrid"]), draft_model=str(dflash_dir), num_draft_tokens=B - 1))
    assert eng.drafter_name == "dflash"  # auto: a DFlash --draft-model is the DFlash drafter
    facts = eng.run_facts(N)
    assert facts["drafter"]["name"] == "dflash" and facts["drafter"]["block_size"] == B
    assert facts["draft_model_path"] == str(dflash_dir)
    assert tokens_of(list(eng.speculative(prompt, plain, N, round_kinds="end_to_end"))) == plain
    trace = eng.trace(prompt, plain)  # the acceptance trace walks the drafter along the target's own output
    assert trace is not None and trace["drafter"] == "dflash" and len(trace["A"]) == N - 1
    with pytest.raises(SpecscopeError, match="does not fit"):
        Engine.open(EngineParams(model=str(model_dirs["draft"]), drafter="dflash", draft_model=str(dflash_dir)))
    with pytest.raises(SpecscopeError, match="is a DFlash drafter, not a draft model: use --drafter dflash"):
        Engine.open(EngineParams(model=str(model_dirs["hybrid"]), drafter="draft", draft_model=str(dflash_dir)))
    with pytest.raises(SpecscopeError, match="block size 8 drafts at most 7"):
        Engine.open(EngineParams(model=str(model_dirs["hybrid"]), drafter="dflash", draft_model=str(dflash_dir),
                                 num_draft_tokens=B))


def test_demo_drafter_and_a_stored_long_context():
    """``--demo --drafter dflash`` without a folder builds the demo's drafter once; a long context stored once gives
    the drafter the same features (the same drafts, acceptances and output) as prefilling everything."""
    from specscope.engine_adapter.cache import context
    from specscope.engine_adapter.engine import Engine, EngineParams
    from specscope.profiler.run.context import context_tokens

    e = Engine.open(EngineParams(demo=True, drafter="dflash", num_draft_tokens=3))
    try:
        assert e.dflash is not None and e.dflash.block_size == 16
        ctx = context_tokens(e.encode, 96, "mixed")
        prompt = ctx + e.encode("def add(a, b):")
        ref_plain = [r["token"] for r in e.plain(prompt, 10)]
        ref = [(r["drafted"], r["accepted"], r["emitted"]) for r in list(e.speculative(prompt, ref_plain, 10))[1:]]
        facts = e.prepare_context(ctx)
        assert facts["tokens"] == 96 and not facts["reused"]
        assert context.find(e.target.model, prompt) is not None
        assert [(r["drafted"], r["accepted"], r["emitted"]) for r in list(e.speculative(prompt, ref_plain, 10))[1:]] == ref
        assert [t for _, _, em in ref for t in em] == ref_plain[1:]
    finally:
        e.forget_contexts()


def test_uninstall_tap_gives_the_trunk_its_own_classes_back(hybrid, prompt):
    """``bench capture``'s side without hooks: after uninstall_tap the norm and the layers are mlx-lm's own classes,
    and the forward's logits are the same with the tap in place and without it."""
    import mlx.core as mx
    from mlx_lm.models.cache import make_prompt_cache

    from specscope.engine_adapter.cache.hidden import (install_tap, tapped_layers, tapping, trunk_layers, trunk_parts,
                                                       uninstall_tap)

    model = hybrid.model
    norm_was_tapped, layers_were = type(trunk_parts(model)["norm"]).__name__.startswith("Tapped"), tapped_layers(model)

    def logits():
        out = model(mx.array([prompt]), cache=make_prompt_cache(model))
        mx.eval(out)
        return out

    try:
        install_tap(model, layers=(1, 2))
        with tapping() as tap:
            tapped = logits()
        assert tap.hidden((1, 2)).shape[-1] == 2 * tap.hidden((1,)).shape[-1]
        uninstall_tap(model)
        assert not type(trunk_parts(model)["norm"]).__name__.startswith("Tapped")
        assert not any(type(x).__name__.startswith("TappedLayer") for x in trunk_layers(model))
        assert tapped_layers(model) == ()
        assert mx.array_equal(logits(), tapped).item()
    finally:  # leave the session's shared model as this test found it
        uninstall_tap(model)
        if norm_was_tapped or layers_were:
            install_tap(model, layers=layers_were)


@pytest.mark.slow  # the shipped trained drafter run (~12 s); `check --demo` with it stays in the default run
def test_the_demo_drafts_with_the_shipped_trained_drafter_and_it_is_accepted(tmp_path):
    """``--demo --drafter dflash`` with no folder takes the DFlash drafter trained against the shipped demo
    (training/train_dflash.py, in the package), and the target accepts its drafts; a random drafter in the same
    format is the negative control: never accepted here. Greedy, so the counts are the same every run."""
    from specscope.engine_adapter.decode.decoding import speculative_generate
    from specscope.engine_adapter.drafters.dflash import load_dflash_drafter
    from specscope.engine_adapter.model.demo_model import trained_demo_path
    from specscope.engine_adapter.model.dflash_demo import build_dflash_demo, default_dflash_path
    from specscope.engine_adapter.model.loader import load_model

    target = load_model(trained_demo_path("hybrid"))
    shipped = trained_demo_path("dflash")
    assert shipped is not None and default_dflash_path(target) == shipped
    build_dflash_demo(tmp_path / "random", target.checkpoint.text_config, "the trained demo")
    accepted = {}
    for name, folder in (("trained", shipped), ("random", tmp_path / "random")):
        accepted[name] = sum(r["accepted"] for prompt in ("def total(xs):\n    s = 0\n",
                                                        "The quick brown fox jumps over the lazy dog.", "春眠不觉晓，")
                             for r in list(speculative_generate(target.model, target.encode(prompt),
                                                                load_dflash_drafter(target, folder), 15, 32))[1:])
    assert accepted["trained"] >= 15 and accepted["random"] <= 2, accepted
