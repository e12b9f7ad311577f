"""The DFlash2 drafter: the selector's walk against a hand computation, greedy output equal to plain decoding at every
accepted length 0..B−1 on the Gated DeltaNet hybrid, the forward and the walk timed apart, the drafter's own context
after every accepted length, and sampling at temperature against the selector's q (the distribution test, its power
against an always-accept rule, and the negative control: a verifier handed the drafter's plain softmax instead of q)."""

from collections import Counter
from types import SimpleNamespace

import mlx.core as mx
import numpy as np
import pytest
from chi2 import chi2_goodness_of_fit
from mlx_lm.models.cache import make_prompt_cache

from specscope.engine_adapter.cache.hidden import tapping
from specscope.engine_adapter.decode import sampling as sampling_mod
from specscope.engine_adapter.decode.decoding import plain_generate, prefill, speculative_generate
from specscope.engine_adapter.decode.records import tokens_of
from specscope.engine_adapter.decode.sampling import Sampling
from specscope.engine_adapter.drafters.dflash_loader import load_dflash_drafter
from specscope.engine_adapter.drafters.dflash2 import DFlash2Drafter
from specscope.engine_adapter.drafters.dflash2_model import CandidateSelector
from specscope.engine_adapter.drafters.drafter import Draft
from specscope.engine_adapter.measure.dflash_check import drafter_context_exactness
from specscope.engine_adapter.model.dflash2_demo import build_dflash2_demo
from specscope.errors import SpecscopeError

N = 24
B = 8  # the drafter's block: up to 7 drafts a round


@pytest.fixture(scope="module")
def dflash2_dir(tmp_path_factory, hybrid):
    # a window of 16: the prompt (about 20 tokens) already runs past it, so the window is exercised
    return build_dflash2_demo(tmp_path_factory.mktemp("dflash2") / "d", hybrid.checkpoint.text_config, "hybrid",
                              block_size=B, window=16)


@pytest.fixture(scope="module")
def base(hybrid, dflash2_dir):
    d = load_dflash_drafter(hybrid, dflash2_dir)
    assert type(d) is DFlash2Drafter  # the folder's architecture picks the drafter
    return d


@pytest.fixture(scope="module")
def plain(hybrid, prompt):
    return tokens_of(list(plain_generate(hybrid.model, prompt, N)))


# -- the walk --------------------------------------------------------------------------------------------------------

def test_the_walk_scores_candidates_by_logit_plus_the_edge_from_the_previous_pick():
    """Random tensors, the walk recomputed with numpy: candidates are the top K logits; each position's score is
    logit + Σ A[prev] · proj(h) · B[cand], from the anchor; greedy takes the argmax, and at temperature q is the
    softmax of score / T along the path taken."""
    V, H, r, K, k, anchor, T = 50, 16, 4, 5, 4, 7, 0.7
    sel = CandidateSelector(SimpleNamespace(selector_top_k=K, hidden_size=H, selector_rank=r, vocab_size=V))
    keys = mx.random.split(mx.random.key(1), 5)
    sel.hidden_projection.weight = mx.random.normal((r, H), key=keys[0])
    sel.predecessor_codebook = mx.random.normal((V, r), key=keys[1])
    sel.successor_codebook = mx.random.normal((V, r), key=keys[2])
    h, logits = mx.random.normal((k, H), key=keys[3]), 2 * mx.random.normal((k, V), key=keys[4])
    parts = sel.candidates(h, logits)
    picks, _ = sel.walk(anchor, parts)
    A, Bc, P, L = (np.array(x) for x in (sel.predecessor_codebook, sel.successor_codebook,
                                         h @ sel.hidden_projection.weight.T, logits))
    prev, want, scores = anchor, [], []
    for i in range(k):
        cands = np.argsort(-L[i])[:K]
        s = L[i, cands] + (A[prev] * P[i] * Bc[cands]).sum(-1)
        prev = int(cands[np.argmax(s)])
        want.append(prev)
        scores.append(dict(zip(cands.tolist(), s.tolist())))
    assert picks.tolist() == want
    assert any(w != int(np.argmax(L[i])) for i, w in enumerate(want))  # the edges changed a pick: they matter here
    _, q = sel.walk(anchor, parts, T, path=want)
    for i, c in enumerate(np.array(parts[0]).tolist()):
        s = np.array([scores[i][t] for t in c]) / T
        assert np.allclose(np.array(q[i]), np.exp(s - s.max()) / np.exp(s - s.max()).sum(), atol=1e-5)


# -- greedy exactness ------------------------------------------------------------------------------------------------

class ForcedDFlash2(DFlash2Drafter):
    """The real DFlash2 drafter (its forward and walk run every round, its update keeps the verified features), its
    picks then replaced by the plain continuation made wrong at draft ``wrong_at``: every full round accepts exactly
    that many. Asserts the context invariant after every round."""

    def __init__(self, target, base, plain, wrong_at):
        super().__init__(target, base.model, base.spec)
        self.plain, self.wrong_at, self.pos = plain, wrong_at, 1

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
        pending = 0 if self.pending is None else self.pending.shape[0]
        assert self.read_positions() + pending == self.n_tokens - 1


# the edges (0, 1, B−2, B−1 accepted) in the default run, the middle in the slow set (`pytest -m slow`)
@pytest.mark.parametrize("wrong_at", [w if w in (0, 1, B - 2, B - 1) else pytest.param(w, marks=pytest.mark.slow)
                                      for w in range(B)])
def test_greedy_equals_plain_at_every_accepted_length(wrong_at, hybrid, prompt, plain, base):
    k = B - 1
    # six full rounds at least, as DFlash's test (a round drafts k only while k + 1 tokens are left)
    n = min(N, k + 1 + 6 * (wrong_at + 1))
    ev = list(speculative_generate(hybrid.model, prompt, ForcedDFlash2(hybrid, base, plain, wrong_at), k, n))
    full = [r for r in ev[1:] if len(r["drafted"]) == k]
    assert full and all(r["accepted"] == wrong_at for r in full), [r["accepted"] for r in full]
    assert tokens_of(ev) == plain[:n], f"output diverged with {wrong_at} of {k} accepted"


# k = 3 end to end in the default run (DFlash's test runs k = 3 instrumented there: the same loop, the other kind); k = 3
# instrumented and the whole block (k = 7) end to end, the lazy walk, in the slow set
@pytest.mark.parametrize("k,round_kinds", [pytest.param(3, "instrumented", marks=pytest.mark.slow), (3, "end_to_end"),
                                           pytest.param(B - 1, "end_to_end", marks=pytest.mark.slow)])
def test_greedy_equals_plain_with_the_drafters_own_walk(k, round_kinds, hybrid, prompt, plain, base):
    drafter = DFlash2Drafter(hybrid, base.model, base.spec)
    ev = list(speculative_generate(hybrid.model, prompt, drafter, k, N, round_kinds=round_kinds))
    assert tokens_of(ev) == plain
    assert all(r["extra"].get("block") == len(r["drafted"]) + 1 for r in ev[1:] if r["drafted"])
    n = 1  # the reference's loop: each cycle's block is min(B, tokens left + 1), its bonus cut past max_tokens
    for r in ev[1:]:
        assert len(r["drafted"]) == min(k, N - n), (n, [len(x["drafted"]) for x in ev[1:]])
        n += len(r["emitted"])
    assert n == N


def test_an_instrumented_draft_times_the_forward_and_the_walk_apart(hybrid, prompt, base):
    """Alone, a draft syncs after the forward (with the head and the candidates) and after the walk, and says how long
    each took; a lazy draft leaves both unevaluated and says nothing (its round has one sync)."""
    cache = make_prompt_cache(hybrid.model)
    with tapping() as tap:
        last = int(mx.argmax(prefill(hybrid.model, cache, prompt)).item())
        hidden = tap.hidden(base.hidden_mode)
    d = DFlash2Drafter(hybrid, base.model, base.spec)
    d.begin(prompt, last, hidden=hidden)
    out = d.draft(last, B - 1)
    assert out.tokens is not None and len(out.tokens) == B - 1
    assert out.extra["forward_ms"] > 0 and out.extra["walk_ms"] > 0
    d.begin(prompt, last, hidden=hidden)
    lazy = d.draft(last, B - 1, lazy=True)
    assert lazy.tokens is None and "walk_ms" not in lazy.extra
    assert lazy.as_array().tolist() == out.tokens  # the same walk, evaluated later


def test_more_drafts_than_the_block_holds_are_refused(hybrid, base):
    d = DFlash2Drafter(hybrid, base.model, base.spec)
    d.begin([1, 2, 3], 4, hidden=mx.zeros((3, base.model.fc.weight.shape[1])))
    with pytest.raises(SpecscopeError, match="at most block size − 1 = 7"):
        d.draft(4, B)


@pytest.mark.slow  # the drafter's context against a fresh one at every accepted length (~20 s)
def test_drafter_context_is_exact_after_every_accepted_length(hybrid, prompt, base):
    res = drafter_context_exactness(hybrid.model, lambda: DFlash2Drafter(hybrid, base.model, base.spec), prompt,
                                    B - 1, 1e-3)
    assert [r["accepted"] for r in res["rows"]] == list(range(B))
    assert res["exact"], res["rows"]


# -- sampling at temperature -----------------------------------------------------------------------------------------
#
# As DFlash's test (test_dflash.py): fixed context and last token, one real round per seed; the first emitted token
# must be distributed as the target's own p0. The drafts are the selector's sampled walk; Draft.probs is its q. At
# temperature 1 the tiny drafter's softmax is close to p0 (overlap about 0.8) while q, reshaped by the selector's edges,
# is not (overlap about 0.07): a verifier handed the softmax then over-accepts q's favourite tokens, which the fit sees
# in its bin of q's top tokens. The bins are fixed before any draw, from p0 and q0 (q at the first position does not
# depend on the seed: the walk starts from the same anchor), so the test stays a goodness-of-fit test.

K, DRAWS, ALPHA = 2, 400, 1e-3
# the power check and the negative control fail their rules by far (p = 0 and 6e-277 at 400 draws): fewer draws
# keep them decided, at a third of the time
CONTROL_DRAWS = 150
REGIME = {"temp": 1.0, "top_p": 1.0}
Q_TOP, P_BINS = 32, 8


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, draft):
    folder = build_dflash2_demo(tmp_path_factory.mktemp("dflash2-tiny") / "d", draft.checkpoint.text_config, "draft",
                                block_size=4, top_k=256)
    return draft, load_dflash_drafter(draft, folder), draft.encode("Why is the sky blue?")


class PlainSoftmaxToTheVerifier(DFlash2Drafter):
    """The negative control: drafts by the selector's walk, but hands the verifier the drafter's plain softmax over
    its logits (at the run's temperature) instead of q."""

    def block_states(self, last_token, k):
        h, self.logits = super().block_states(last_token, k)
        return h, self.logits

    def draft(self, last_token, k, lazy=False):
        out = super().draft(last_token, k)
        return Draft(out.tokens, probs=self.sampling.probs(self.logits), extra=out.extra)


def first_tokens(tiny, cls=DFlash2Drafter, draws: int = DRAWS) -> tuple[Counter, Counter, np.ndarray, np.ndarray]:
    """The first emitted token of ``draws`` seeded rounds, the first draft's acceptance counts, p0 and q0."""
    from specscope.engine_adapter.cache.rollback import CacheSnapshot

    lm, base_drafter, prompt = tiny
    model = lm.model
    cache = make_prompt_cache(model)
    with tapping() as tap:
        last = int(mx.argmax(prefill(model, cache, prompt)).item())
        hidden = tap.hidden(base_drafter.hidden_mode)
    mx.eval(hidden, [c.state for c in cache])
    snapshot = CacheSnapshot(cache)
    d = DFlash2Drafter(lm, base_drafter.model, base_drafter.spec, Sampling(**REGIME))
    d.begin(prompt, last, hidden=hidden)
    q0 = np.array(d.draft(last, K).probs[0], dtype=np.float64)
    tokens, accepted, p0 = Counter(), Counter(), None
    for seed in range(draws):
        s = Sampling(**REGIME, seed=seed)
        d = cls(lm, base_drafter.model, base_drafter.spec, s)
        d.begin(prompt, last, hidden=hidden)
        out = d.draft(last, K)
        snapshot.restore()
        logits = model(mx.array([last] + out.tokens, dtype=mx.uint32)[None], cache=cache)[0]
        n, bonus, _ = s.verify(logits, out, len(prompt))
        accepted[min(n, 1)] += 1
        tokens[out.tokens[0] if n > 0 else bonus] += 1
        if p0 is None:
            p0 = np.array(s.probs(logits)[0], dtype=np.float64)
    assert p0 is not None
    return tokens, accepted, p0, q0


def goodness_of_fit(counts: Counter, p: np.ndarray, q: np.ndarray, draws: int = DRAWS) -> tuple[float, int]:
    """p-value and bins of the counts against p. Bins fixed by p and q alone: q's top tokens (at least Q_TOP, more
    until p expects 10 draws there), then the rest in order of p cut into up to P_BINS bins of about equal mass."""
    order = np.argsort(-q)
    n = Q_TOP
    while p[order[:n]].sum() * draws < 10:
        n += Q_TOP
    top = [int(t) for t in order[:n]]
    bins, cur, mass = [top], [], 0.0
    share = (1.0 - p[top].sum()) / P_BINS
    chosen = set(top)
    for t in (int(t) for t in np.argsort(-p) if int(t) not in chosen):
        cur.append(t)
        mass += p[t]
        if mass >= share and len(bins) < P_BINS:
            bins.append(cur)
            cur, mass = [], 0.0
    if cur:
        bins.append(cur)
    obs = np.array([sum(counts[t] for t in b) for b in bins], dtype=np.float64)
    probs = np.array([p[b].sum() for b in bins])
    total = obs.sum()
    assert (probs * total >= 5).all(), probs * total  # the chi-square's approximation holds in every bin
    return chi2_goodness_of_fit(obs, probs), len(bins)


def test_drafts_carry_the_selectors_q_zero_outside_the_candidates(tiny):
    lm, base_drafter, prompt = tiny
    s = Sampling(**REGIME, seed=3)
    d = DFlash2Drafter(lm, base_drafter.model, base_drafter.spec, s)
    cache = make_prompt_cache(lm.model)
    with tapping() as tap:
        mx.eval(prefill(lm.model, cache, prompt))
    d.begin(prompt, 7, hidden=tap.hidden(d.hidden_mode))
    out = d.draft(7, 3)
    probs = np.array(out.probs)
    top_k = base_drafter.spec.selector_top_k
    assert probs.shape == (3, base_drafter.spec.vocab_size)
    assert np.allclose(probs.sum(axis=-1), 1.0, atol=1e-5)
    assert all((row > 0).sum() <= top_k for row in probs)  # q lives on the K candidates only
    assert all(probs[i, t] > 0 for i, t in enumerate(out.tokens))
    d.begin(prompt, 7, hidden=tap.hidden(d.hidden_mode))
    soft = np.array(s.probs(d.block_logits(7, 3)))
    assert np.abs(soft - probs).sum(axis=-1).max() > 0.1  # q is not the drafter's softmax: the control below can fail


@pytest.mark.slow  # a chi-square over many sampled rounds (~40 s)
def test_speculative_sampling_with_dflash2_keeps_the_target_distribution(tiny):
    tokens, accepted, p0, q0 = first_tokens(tiny)
    assert accepted[0] >= DRAWS // 10 and accepted[1] >= DRAWS // 40, accepted  # both branches of the rule
    p, bins = goodness_of_fit(tokens, p0, q0)
    print(f"DFlash2, q to the verifier: p = {p:.3g} over {bins} bins; first draft accepted {accepted[1]} of {DRAWS}")
    assert bins >= 3 and p > ALPHA, (p, bins, tokens.most_common(5))


@pytest.mark.slow  # the power of the test above: `pytest -m slow`
def test_the_fit_detects_a_broken_rule_with_dflash2(tiny, monkeypatch):
    from specscope.engine_adapter.engines.audit import AlwaysAccept

    monkeypatch.setattr(sampling_mod.Sampling, "verify", AlwaysAccept.verify)
    tokens, accepted, p0, q0 = first_tokens(tiny, draws=CONTROL_DRAWS)
    assert accepted == Counter({1: CONTROL_DRAWS})
    p, bins = goodness_of_fit(tokens, p0, q0, CONTROL_DRAWS)
    print(f"DFlash2, always-accept rule: p = {p:.3g} over {bins} bins")
    assert p < ALPHA, (p, bins, tokens.most_common(5))


@pytest.mark.slow  # the negative control: `pytest -m slow`
def test_the_fit_fails_a_verifier_given_the_plain_softmax_instead_of_q(tiny):
    tokens, accepted, p0, q0 = first_tokens(tiny, PlainSoftmaxToTheVerifier, CONTROL_DRAWS)
    p, bins = goodness_of_fit(tokens, p0, q0, CONTROL_DRAWS)
    print(f"DFlash2, plain softmax to the verifier: p = {p:.3g} over {bins} bins; accepted {accepted[1]} of "
          f"{CONTROL_DRAWS}")
    assert p < ALPHA, (p, bins, tokens.most_common(5))


def test_sampled_rounds_end_to_end_equal_instrumented_ones(tiny):
    lm, base_drafter, prompt = tiny
    runs = []
    for kinds in ("instrumented", "end_to_end"):
        s = Sampling(**REGIME, seed=11)
        d = DFlash2Drafter(lm, base_drafter.model, base_drafter.spec, s)
        ev = list(speculative_generate(lm.model, prompt, d, 3, 24, s, round_kinds=kinds))
        runs.append([(r["drafted"], r["accepted"], r["emitted"]) for r in ev[1:]])
    assert runs[0] == runs[1]
    assert any(a for _, a, _ in runs[0]) and any(len(dr) > a for dr, a, _ in runs[0])  # accepts and rejects


# -- the engine ------------------------------------------------------------------------------------------------------

@pytest.mark.slow  # engine runs from model folders (~20 s); the drafter's own tests above stay in the default run
def test_engine_runs_dflash2_end_to_end(model_dirs, dflash2_dir, tmp_path):
    """``--draft-model`` a DFlash2 folder: the engine takes it as the DFlash drafter (auto), its run facts say DFlash2,
    an end-to-end run equals plain decoding, the acceptance trace walks it, and a misfit is refused by name. On the
    small qwen3 target with a drafter built for it (the random hybrid's took 15 s of the slow set)."""
    from specscope.engine_adapter.engine import Engine, EngineParams
    from specscope.engine_adapter.model.checkpoint import open_checkpoint

    target = model_dirs["draft"]
    small = build_dflash2_demo(tmp_path / "d", open_checkpoint(target).text_config, "draft", block_size=B)
    eng = Engine.open(EngineParams(model=str(target), draft_model=str(small), num_draft_tokens=B - 1))
    assert eng.drafter_name == "dflash" and eng.dflash is not None and eng.dflash.variant == "dflash2"
    assert isinstance(eng.make_drafter(), DFlash2Drafter)
    facts = eng.run_facts(N)
    assert facts["drafter"]["variant"] == "dflash2" and facts["drafter"]["block_size"] == B
    assert "selector's greedy walk" in facts["drafter"]["drafts"]
    prompt = eng.encode("Why is the sky blue? Because the air scatters")
    plain = [r["token"] for r in eng.plain(prompt, N)]
    assert tokens_of(list(eng.speculative(prompt, plain, N, round_kinds="end_to_end"))) == plain
    trace = eng.trace(prompt, plain)
    assert trace is not None and trace["drafter"] == "dflash" and len(trace["A"]) == N - 1
    with pytest.raises(SpecscopeError, match="DFlash2 drafter d does not fit"):
        Engine.open(EngineParams(model=str(model_dirs["hybrid"]), drafter="dflash", draft_model=str(small)))


def test_components_time_the_forward_and_the_walk_of_a_draft_timed_alone(hybrid, prompt, plain, base):
    """The prediction's inputs timed apart keep DFlash2's draft in its parts (forward + top K, then the walk), one
    sample of each per draft timed alone; a drafter without parts has none."""
    from specscope.engine_adapter.drafters.drafter import NgramDrafter
    from specscope.engine_adapter.measure.components import measure_components

    comp = measure_components(hybrid.model, lambda: DFlash2Drafter(hybrid, base.model, base.spec), Sampling(),
                              prompt, plain[:12], 3, reps=1)
    assert len(comp["draft_forward_ms"]) == len(comp["draft_walk_ms"]) == len(comp["draft_alone_ms"]) == 1
    assert all(x > 0 for x in comp["draft_forward_ms"] + comp["draft_walk_ms"])
    assert comp["draft_forward_ms"][0] + comp["draft_walk_ms"][0] <= comp["draft_alone_ms"][0]
    no_parts = measure_components(hybrid.model, NgramDrafter, Sampling(), prompt, plain[:12], 3, reps=1)
    assert "draft_walk_ms" not in no_parts and "draft_forward_ms" not in no_parts


@pytest.mark.slow  # the shipped trained DFlash2 drafter on the trained demo (~20 s)
def test_the_shipped_trained_dflash2_drafter_fits_the_demo_and_is_accepted(tmp_path):
    """The DFlash2 drafter trained against the shipped demo (training/train_dflash.py --dflash2, in the package) is in
    the published format (window at least 2048, so no context in a check wraps it), fits the trained demo, its greedy
    output equals plain decoding, and the target accepts its walks; a random DFlash2 drafter in the same format is the
    negative control: hardly ever accepted. Greedy, so the counts are the same every run."""
    from specscope.engine_adapter.model.demo_model import trained_demo_path
    from specscope.engine_adapter.model.dflash_format import read_dflash
    from specscope.engine_adapter.model.loader import load_model

    target_path, shipped = trained_demo_path("hybrid"), trained_demo_path("dflash2")
    if target_path is None or shipped is None:
        pytest.skip("this install has no trained demo")
    spec = read_dflash(shipped)
    assert spec.variant == "dflash2" and spec.sliding_window >= 2048 and spec.selector_top_k >= 8
    target = load_model(target_path)
    build_dflash2_demo(tmp_path / "random", target.checkpoint.text_config, "the trained demo", block_size=spec.block_size,
                       window=2048, softcap=None)
    accepted = {}
    for name, folder in (("trained", shipped), ("random", tmp_path / "random")):
        accepted[name] = 0
        for text in ("def total(xs):\n    s = 0\n", "The quick brown fox jumps over the lazy dog.", "春眠不觉晓，"):
            ids = target.encode(text)
            ev = list(speculative_generate(target.model, ids, load_dflash_drafter(target, folder), spec.block_size - 1, 32))
            assert tokens_of(ev) == tokens_of(list(plain_generate(target.model, ids, 32))), (name, text)
            accepted[name] += sum(r["accepted"] for r in ev[1:])
    assert accepted["trained"] >= 15 and accepted["random"] <= 2, accepted
