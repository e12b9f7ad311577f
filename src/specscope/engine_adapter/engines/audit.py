"""Is the engine right at temperature? Its sampled output against plain decoding's, and the test's own power.

Greedy parity is checked by every run (the divergence auditor). At temperature a correct speculative rule leaves the
distribution of every token unchanged, so the token at a drafted position, over many seeds, must be distributed as
plain decoding's (two-sample chi-square). A rule that accepts a draft because it matches the target's most likely
token (an exact-match check instead of rejection sampling) inflates that token's share; one that accepts every draft
takes the drafter's distribution. The test's power is checked on the same model and prompt: specscope's own loop
with an always-accept rule (a known-wrong engine) must be told apart at the same number of draws, or the verdict is
"too little power", never "consistent".
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, NotRequired, TypedDict

import numpy as np

from specscope.chi_square import two_sample
from specscope.engine_adapter.decode.sampling import Sampling
from specscope.errors import SpecscopeError

class SamplingAudit(TypedDict):
    """The engine's sampled token against plain decoding's (``sampling_audit``): the chi-square, the power check's
    (an always-accept rule at the same draws), the verdict and the sentence that says it."""
    position: int
    draws: int
    temp: float
    top_p: float
    k: int
    chi2: float
    dof: int
    p: float
    power_chi2: float
    power_dof: int
    power_p: float
    verdict: str        # "differs", "consistent" or "too little power"
    text: str
    engine: NotRequired[Mapping[str, Any]]  # added by `specscope check --engine`: the engine's describe()


ALPHA = 0.01   # a wrong rule is named at p below this
POSITION = 1   # the token after the prefill's: decided by the engine's first cycle, with k drafts
SEED_OFFSET = 1_000_000  # the engine's seeds, disjoint from plain decoding's


def _token_at(records, position: int) -> int:
    out: list[int] = []
    for rec in records:
        out += [rec["token"]] if rec["event"] in ("prefill", "step") else list(rec["emitted"])
        if len(out) > position:
            return out[position]
    raise SpecscopeError(f"the engine ended after {len(out)} tokens: no token at position {position} to audit")


def sampling_audit(engine, prompt: list[int], draws: int = 100, temp: float = 0.25, top_p: float = 0.9) -> SamplingAudit:
    """``engine``: a run's ``Engine`` (its ``foreign`` loop, or specscope's own). Returns the chi-square of the
    engine's token at ``POSITION`` against plain decoding's, the power check's, and the verdict."""
    from specscope.engine_adapter.decode.decoding import speculative_generate

    k = engine.params.num_draft_tokens
    n_tokens = POSITION + k + 1
    saved = engine.sampling
    plain: Counter[int] = Counter()
    spec: Counter[int] = Counter()
    broken: Counter[int] = Counter()
    try:
        for s in range(draws):
            engine.sampling = Sampling(temp, top_p, s)
            plain[_token_at(engine.plain(prompt, POSITION + 1), POSITION)] += 1
            engine.sampling = Sampling(temp, top_p, SEED_OFFSET + s)
            spec[_token_at(engine.speculative(prompt, [], n_tokens), POSITION)] += 1
            # the power check: specscope's own loop with a rule that accepts every draft (known to be wrong)
            wrong = AlwaysAccept(temp, top_p, 2 * SEED_OFFSET + s)
            broken[_token_at(speculative_generate(engine.target.model, prompt, engine.make_drafter(), k, n_tokens,
                                                  wrong, round_kinds="instrumented"), POSITION)] += 1
    finally:
        engine.sampling = saved
    stat, dof, p = two_sample(plain, spec)
    p_stat, p_dof, p_power = two_sample(plain, broken)
    powered = p_power < ALPHA
    verdict = ("differs" if p < ALPHA else "consistent" if powered else "too little power")
    return {"position": POSITION, "draws": draws, "temp": temp, "top_p": top_p, "k": k,
            "chi2": stat, "dof": dof, "p": p, "power_chi2": p_stat, "power_dof": p_dof, "power_p": p_power,
            "verdict": verdict,
            "text": {"differs": f"the engine's sampled tokens differ from plain decoding's (chi-square {stat:.1f}, "
                                f"{dof} dof, p = {p:.2g} < {ALPHA}): its acceptance rule changes the distribution",
                     "consistent": f"consistent with plain decoding (p = {p:.2g}; the test tells a wrong rule apart "
                                   f"here: p = {p_power:.2g})",
                     "too little power": f"no difference seen (p = {p:.2g}), but the test cannot tell a wrong rule "
                                         f"apart at {draws} draws here (p = {p_power:.2g}): draw more"}[verdict]}


class AlwaysAccept(Sampling):
    """A sampling rule that keeps every draft (and samples the bonus token from the target): the power check's
    known-wrong engine."""

    def verify(self, logits, draft, position):
        if draft.tokens is None:  # a lazy draft: the verify evaluates it
            draft.materialize()
        p = np.array(self.probs(logits), dtype=np.float64)
        n = len(draft.tokens)
        rng = np.random.default_rng([self.seed, position])
        return n, int(rng.choice(p.shape[1], p=p[n] / p[n].sum())), {}
