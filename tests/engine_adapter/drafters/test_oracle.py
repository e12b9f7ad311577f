"""The oracle what-if drafter on a real (tiny) model: acceptance is the chosen P, the draft cost is charged,
and the output is still exactly plain decoding (greedy)."""

from __future__ import annotations

import math

import pytest

from specscope.engine_adapter.decode.decoding import plain_generate, speculative_generate
from specscope.engine_adapter.drafters.oracle import OracleDrafter
from specscope.engine_adapter.decode.records import tokens_of

N = 160  # tokens per run: about 80 rounds at P = 0.6, k = 2


@pytest.fixture(scope="module")
def target(draft):
    return draft  # the small demo model keeps this fast


@pytest.fixture(scope="module")
def prompt(target):
    return target.encode("Explain why a verification pass over several tokens can cost as much as decoding.")


@pytest.fixture(scope="module")
def plain(target, prompt):
    return tokens_of(list(plain_generate(target.model, prompt, N)))


def _run(target, prompt, plain, p, k, draft_ms=0.0, seed=0, n=N):
    drafter = OracleDrafter(plain, p=p, draft_ms=draft_ms, seed=seed, vocab_size=target.vocab_size)
    ev = list(speculative_generate(target.model, prompt, drafter, k, n))
    return ev, [r for r in ev[1:] if len(r["drafted"]) == k]


@pytest.mark.parametrize("p", [0.3, 0.6, 0.9])
def test_acceptance_is_p_and_output_is_plain(target, prompt, plain, p):
    k = 2
    ev, full = _run(target, prompt, plain, p, k)
    assert tokens_of(ev) == plain  # wrong drafts are rejected, right ones accepted: greedy output unchanged
    n = len(full)
    first = sum(1 for r in full if r["accepted"] >= 1)  # each round's first draft is right with probability p
    both = sum(1 for r in full if r["accepted"] == 2)
    se = math.sqrt(p * (1 - p) / n)
    assert abs(first / n - p) < 4 * se, (first, n, p)
    # the second draft is right with probability p too, independently: a_2 / a_1 ≈ p
    se2 = math.sqrt(p * (1 - p) / max(first, 1))
    assert abs(both / max(first, 1) - p) < 4 * se2 + 1e-9, (both, first, p)


@pytest.mark.parametrize("p", [0.0, 1.0])
def test_extremes(target, prompt, plain, p):
    ev, full = _run(target, prompt, plain, p, 3, n=32)
    assert tokens_of(ev) == plain[:32]
    assert full and all(r["accepted"] == (3 if p == 1.0 else 0) for r in full), [r["accepted"] for r in full]


def test_draft_cost_is_charged_and_counted_as_draft_time(target, prompt, plain):
    cost = 15.0
    _, charged = _run(target, prompt, plain, 0.6, 2, draft_ms=cost, n=40)
    assert charged and all(r["draft_ms"] >= cost for r in charged), [round(r["draft_ms"], 2) for r in charged]
    assert all(r["ms"] >= r["draft_ms"] + r["verify_ms"] for r in charged)
    _, free = _run(target, prompt, plain, 0.6, 2, draft_ms=0.0, n=40)
    assert sorted(r["draft_ms"] for r in free)[len(free) // 2] < cost / 3  # the oracle itself costs next to nothing


def test_oracle_is_labelled_a_what_if():
    d = OracleDrafter([1, 2, 3], p=0.75, draft_ms=2.0)
    assert d.what_if and d.describe() == {"kind": "oracle", "what_if": True, "p": 0.75, "draft_ms": 2.0,
                                          "label": "oracle what-if"}
