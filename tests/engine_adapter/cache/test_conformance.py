"""Conformance matrix: every mlx-lm family either profiles correctly or is refused before it runs.

Tiny random models of each family (tests/engine_adapter/families.py, mlx-lm's own classes, on disk,
loaded through specscope's loader). For each one:
- logit-level rollback exactness: verify k+1 positions, roll back to every accepted count, and the
  next logits equal a fresh cache fed the same accepted tokens (prompt long enough to wrap windows);
- greedy speculative output equals plain with acceptance forced to every position in turn;
- the model's outputs are diverse (a model stuck on one token would hide rollback errors);
- or, for a family with no rollback strategy, a clear refusal naming the layer type.

The documentation's "Supported models" table (docs/models.md) is generated from these results:
    SPECSCOPE_UPDATE_README=1 pytest tests/engine_adapter/cache/test_conformance.py
rewrites it; a normal run fails if the table and the results disagree.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from mlx_lm.models.cache import _BaseCache, make_prompt_cache

from families import FAMILIES, UNBUILDABLE, family_dir
from specscope.engine_adapter.measure.doctor import REFUSED, check_prompt, cheap_report, rollback_exactness
from specscope.engine_adapter.decode.decoding import plain_generate, speculative_generate
from specscope.engine_adapter.drafters.drafter import Draft, Drafter
from specscope.engine_adapter.model.loader import load_model
from specscope.engine_adapter.decode.records import tokens_of
from specscope.engine_adapter.cache.rollback import VerifyRollback
from specscope.engine_adapter.cache.rollback_plan import UnsupportedModel

PAGE = Path(__file__).resolve().parents[3] / "docs" / "models.md"  # the "Supported models" page
PROMPT = "Explain why a verification pass over several tokens can cost as much as decoding."
N_TOKENS = 20
K = 3
RESULTS: dict[str, dict] = {}


class CyclingDrafter(Drafter):
    """Drafts the plain continuation, wrong at draft index ``round % (k+1)``: every acceptance count occurs."""

    kind = "cycling"

    def __init__(self, plain: list[int], vocab: int):
        self.plain, self.vocab, self.pos, self.round = plain, vocab, 1, 0

    def draft(self, last_token, k):
        toks = [self.plain[min(self.pos + i, len(self.plain) - 1)] for i in range(k)]
        wrong = self.round % (k + 1)
        if wrong < k:
            toks[wrong] = (toks[wrong] + 1) % self.vocab
        return Draft(toks)

    def update(self, accepted, draft, emitted, hidden=None):
        self.pos += len(emitted)
        self.round += 1


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_profiles_correctly_or_is_refused(family, families_root):
    lm = load_model(family_dir(family, families_root))
    model = lm.model
    rep = cheap_report(model)
    how = sorted({f"{r['cache']}: {r['method']}" for r in rep["rollback"]["layers"]})
    row = {"class": rep["class"], "rollback": rep["rollback"]["mode"], "how": how,
           "windows": rep["sliding_windows"], "model_type": lm.checkpoint.model_type}
    RESULTS[family] = row
    if rep["class"] == REFUSED:
        with pytest.raises(UnsupportedModel, match=r"layer \d+ \(\w+\)"):
            VerifyRollback(model, make_prompt_cache(model))
        row["note"] = rep["reasons"][0]
        return
    prompt = lm.encode(PROMPT)
    long_prompt, _ = check_prompt(prompt, rep["sliding_windows"])
    if rep["sliding_windows"]:
        assert len(long_prompt) > max(rep["sliding_windows"]), "the check must wrap the sliding window"
    exact = rollback_exactness(model, long_prompt, ks=(1, K), vocab_size=lm.vocab_size or None)
    row["max_error"] = exact["max_relative_error"]
    assert exact["exact"], [r for r in exact["rows"] if not r["exact"]]

    plain = tokens_of(list(plain_generate(model, long_prompt, N_TOKENS)))
    assert len(set(plain)) >= 5, f"{family}: output collapsed onto {len(set(plain))} tokens; rollback errors would hide"
    rounds = list(speculative_generate(model, long_prompt, CyclingDrafter(plain, lm.vocab_size), K, N_TOKENS))
    accepted = {r["accepted"] for r in rounds[1:] if len(r["drafted"]) == K}
    assert set(range(K + 1)) <= accepted, accepted  # every acceptance count was exercised
    spec = tokens_of(rounds)
    row["greedy_match"] = sum(a == b for a, b in zip(spec, plain)) / len(plain)
    assert spec == plain


def _table(results: dict) -> str:
    lines = ["| family (`model_type`) | status | rollback per cache kind | sliding window | conformance |",
             "|---|---|---|---|---|"]
    for fam in sorted(results):
        r = results[fam]
        win = ", ".join(map(str, r["windows"])) if r["windows"] else "—"
        if r["class"] == REFUSED:
            result = f"refused before running: {r.get('note', '')}"
        else:
            result = f"rollback exact (max rel. logit error {r['max_error']:.1g}), greedy spec = plain"
            if r["rollback"] == "replay":
                result += "; replay costs one extra forward per partial round"
        lines.append(f"| {fam} (`{r['model_type']}`) | {r['class']} | {'; '.join(r['how'])} | {win} | {result} |")
    for fam, why in sorted(UNBUILDABLE.items()):
        lines.append(f"| {fam} | not tested | — | — | {why} |")
    return "\n".join(lines)


BEGIN, END = "<!-- conformance:begin -->", "<!-- conformance:end -->"


def test_readme_table_matches_the_conformance_results():
    if len(RESULTS) != len(FAMILIES):
        pytest.skip("run the whole conformance matrix to compare the table in docs/models.md")
    table = _table(RESULTS)
    text = PAGE.read_text(encoding="utf-8")
    block = f"{BEGIN}\n{table}\n{END}"
    if os.environ.get("SPECSCOPE_UPDATE_README"):
        text = re.sub(re.escape(BEGIN) + r".*?" + re.escape(END), block, text, flags=re.S) if BEGIN in text else text
        PAGE.write_text(text, encoding="utf-8")
    got = re.search(re.escape(BEGIN) + r"\n(.*?)\n" + re.escape(END), text, flags=re.S)
    assert got, "docs/models.md has no conformance table markers"
    # numbers vary with the machine; compare everything but the error figures
    strip = lambda s: re.sub(r"error [0-9.e+-]+", "error x", s)  # noqa: E731
    assert strip(got.group(1)) == strip(table), "docs/models.md 'Supported models' table is stale: rerun with SPECSCOPE_UPDATE_README=1"



class OpaqueCache(_BaseCache):
    """A cache kind no rollback strategy knows (stands in for a future mlx-lm cache class)."""

    def update_and_fetch(self, keys, values):  # pragma: no cover - never reached: refused first
        raise AssertionError("a refused model must not run")


def test_unknown_cache_kind_is_refused_before_the_run(families_root, monkeypatch):
    from specscope.errors import SpecscopeError
    from specscope.profiler.run.config import RunConfig
    from specscope.profiler.run.protocol import run_protocol

    path = family_dir("llama_tied", families_root)
    from mlx_lm.models.llama import Model

    monkeypatch.setattr(Model, "make_cache", lambda self: [OpaqueCache() for _ in self.layers], raising=False)
    events = []
    cfg = RunConfig(model=str(path), drafter="ngram", cases=1, max_tokens=4, warmup=0, breakdown=False)
    with pytest.raises(SpecscopeError, match=r"layer 0 \(TransformerBlock\) uses a OpaqueCache cache.*refusing"):
        run_protocol(cfg, events.append)
    assert not [e for e in events if e["event"] not in ("status",)], events  # nothing measured, nothing reported


@pytest.mark.parametrize("family, cls", [("mamba2", "supported with caveats"), ("gpt_oss", "supported with caveats"),
                                         ("qwen3_next", "supported")])
def test_check_command_on_conformance_models(family, cls, families_root, capsys):
    import json

    from specscope.profiler.cli.main import main

    rc = main(["check", str(family_dir(family, families_root)), "--json", "--max-k", "2"])
    rep = json.loads(capsys.readouterr().out)
    assert rc == 0 and rep["class"] == cls
    assert rep["exactness"]["exact"] and len(rep["exactness"]["rows"]) == 2 + 3  # k=1: n=0..1, k=2: n=0..2
    assert rep["model"]["model_type"] == FAMILIES[family].get("model_type", family)


def test_check_command_on_the_demo(capsys):
    from specscope.profiler.cli.main import main

    rc = main(["check", "--demo", "--max-k", "1"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "compatibility     supported" in out and "rollback check    exact" in out and "MTP head          yes, loads" in out
