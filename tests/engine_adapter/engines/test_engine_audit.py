"""At temperature, an engine whose acceptance is an exact-match check (a draft kept when it is the target's most
likely token) is caught by the sampling audit; mlx-lm's own loop (rejection-free but exact: it keeps a draft only
when the target's own sample equals it) passes; the audit's power check tells a wrong rule apart on this model."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest
from mlx_lm.models.cache import make_prompt_cache, trim_prompt_cache

from specscope.chi_square import chi2_sf
from specscope.engine_adapter.decode.records import PrefillRecord, RoundRecord
from specscope.engine_adapter.engine import Engine
from specscope.engine_adapter.engines import registry
from specscope.engine_adapter.engines.audit import sampling_audit
from specscope.engine_adapter.engines.seam import SpeculativeEngine
from specscope.engine_adapter.params import EngineParams


class ExactMatch(SpeculativeEngine):
    """Drafts the draft model's most likely tokens (as many engines draft) and keeps a draft while it equals the
    target's most likely token — the greedy check, used at temperature — instead of keeping it with the target's
    probability; at the first mismatch the target's distribution is sampled."""

    name = "exact-match"

    def speculative(self, prompt, max_tokens, sampling):
        target, draft, k = self.target.model, self.draft.model, self.params.num_draft_tokens
        rng = np.random.default_rng([sampling.seed, 17])
        tc, dc = make_prompt_cache(target), make_prompt_cache(draft)
        first = int(sampling.sample(target(mx.array([prompt]), cache=tc)[0, -1], 0))
        draft(mx.array([prompt]), cache=dc)
        yield PrefillRecord(event="prefill", n_prompt=len(prompt), token=first, ms=0.0)
        last, made, i = first, 1, 0
        while made < max_tokens:
            n = min(k, max_tokens - made - 1)
            drafts, y = [], last
            for _ in range(n):
                y = int(mx.argmax(draft(mx.array([[y]]), cache=dc)[0, -1]))
                drafts.append(y)
            p = np.array(sampling.probs(target(mx.array([[last] + drafts]), cache=tc)[0]), dtype=np.float64)
            a = 0
            while a < n and drafts[a] == int(p[a].argmax()):  # the bug: an exact match, not rejection sampling
                a += 1
            bonus = int(rng.choice(p.shape[1], p=p[a] / p[a].sum()))
            trim_prompt_cache(tc, n - a)
            trim_prompt_cache(dc, max(n - a - 1, 0))
            if a == n and n:
                draft(mx.array([[drafts[-1]]]), cache=dc)
            emitted = drafts[:a] + [bonus]
            yield RoundRecord(event="round", index=i, drafted=drafts, accepted=a, emitted=emitted, draft_ms=None, verify_ms=None,
                            rollback_ms=None, ms=1.0, extra={}, kind="end_to_end")
            last, made, i = emitted[-1], made + len(emitted), i + 1


def test_chi2_sf_matches_tables():
    for x, dof, p in [(3.841, 1, 0.05), (6.635, 1, 0.01), (16.266, 3, 0.001), (9.488, 4, 0.05), (29.588, 10, 0.001)]:
        assert chi2_sf(x, dof) == pytest.approx(p, rel=2e-3), (x, dof)


def _engine(model_dirs, name: str) -> Engine:
    # target and drafter the same small model: its drafts are often the target's most likely token, so an exact-match
    # rule keeps them far more often than the target would emit them
    m = str(model_dirs["draft"])
    return Engine.open(EngineParams(model=m, draft_model=m, drafter="draft", engine=name, num_draft_tokens=2,
                                    temp=0.25, top_p=0.9))


def test_an_exact_match_acceptance_is_caught(model_dirs, monkeypatch):
    monkeypatch.setitem(registry.BUILT_IN, "exact-match", f"{__name__}:ExactMatch")
    eng = _engine(model_dirs, "exact-match")
    bad = sampling_audit(eng, eng.encode("Why is the sky blue?"), draws=40)
    assert bad["verdict"] == "differs" and bad["p"] < 0.01, bad
    assert "acceptance rule changes the distribution" in bad["text"]


@pytest.mark.slow  # about half a minute: three sampled loops × 100 seeds (`pytest -m slow`)
def test_mlx_lms_rule_is_consistent_and_the_audit_has_the_power_to_say_so(model_dirs):
    eng = _engine(model_dirs, "mlx-lm")
    good = sampling_audit(eng, eng.encode("Why is the sky blue?"), draws=100)
    assert good["power_p"] < 0.01  # the test tells a wrong rule apart on this model at 100 draws
    assert good["verdict"] == "consistent", good


@pytest.mark.slow  # ~10 s; the audit it prints (and its negative control) is tested by default above
def test_check_engine_on_the_command_line(model_dirs, capsys):
    from specscope.profiler.cli.main import main

    m = str(model_dirs["draft"])
    rc = main(["check", m, "--engine", "mlx-lm", "--draft-model", m, "--draws", "30", "--quiet"])
    out = capsys.readouterr().out
    assert out.startswith("engine mlx-lm at temperature 0.25, top-p 0.9, k = 2, 30 draws: ")
    assert rc == (1 if "differ from plain decoding" in out else 0)
    assert "differ from plain decoding" not in out  # mlx-lm's rule is exact
    assert main(["check", m, "--engine", "mlx-lm", "--draft-model", m, "--temp", "0"]) == 2
    assert "give --temp above 0" in capsys.readouterr().err
