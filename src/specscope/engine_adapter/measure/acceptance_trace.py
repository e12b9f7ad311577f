"""Recording an acceptance trace A(s) with the engine's real drafters (walked by ``profiler.analysis.trace_walk``).

For the target's own continuation c_0..c_{N-1} of a prompt (c_0 from the prefill), A(s) for s = 0..N-2 is
how many of the drafter's next K_max proposals, chained from the true prefix prompt + c_0..c_s, agree with
c_{s+1}, c_{s+2}, … (at most N − 1 − s of them can be checked).

How, greedy (exact):
- the target runs once over the prompt (its prefill) and once over c_0..c_{N-2} — one verify-like forward
  over the whole continuation — which gives the hidden states the MTP head reads at every position, and
  checks that the target's argmax at every position is the continuation's next token;
- the drafter is the engine's own class (``NgramDrafter``, ``DraftModelDrafter``, ``MTPDrafter``), driven
  exactly as ``speculative_generate`` drives it: ``begin`` after the prefill, then at every s ``draft(c_s,
  K)`` and ``update(0, draft, [c_{s+1}], hidden)`` — a round that accepted nothing and emitted the target's
  own next token, which leaves the drafter holding exactly the true prefix up to c_{s+1} (the draft model
  restores its per-token checkpoint, the MTP head drops its provisional entries). So the trace cannot drift
  from what the rounds do: the proposals are the same calls on the same prefix.
  Cost: N − 1 drafts of K_max (n-gram: lookups; draft model and MTP head: K_max small forwards each), plus,
  for the MTP head (which reads hidden states) or when asked, the target's prefill and one forward over N − 1
  positions. ``cost_ms`` records each part. The continuation handed in is the plain run's output, i.e. the
  target's own; the forward, when it runs, checks that (``target_agrees``).

Under sampling (temperature > 0) acceptance is random: at every s the engine's verify forward over
[c_s, d_1..d_K] runs on the real cache (rolled back to c_s after it, as a round accepting nothing is), and the
accept/reject rule is drawn ``draws`` times with seeded draws (target rows from that forward; the drafters
are point masses unless they give a distribution). The trace then holds those draws and says it is an
estimate (the continuation is one sampled output, and rounds under sampling need not follow it).
Cost: one verify forward per position.
"""

from __future__ import annotations

import time
from typing import Any

import mlx.core as mx
import numpy as np
from mlx_lm.models.cache import make_prompt_cache

from specscope.engine_adapter.clock import ms_since
from specscope.engine_adapter.decode.decoding import prefill
from specscope.engine_adapter.drafters.drafter import Drafter
from specscope.engine_adapter.cache.hidden import install_tap, tapping
from specscope.engine_adapter.mlx_types import values
from specscope.engine_adapter.cache.capture import capturing, install_capture, is_hybrid
from specscope.engine_adapter.cache.rollback import VerifyRollback
from specscope.engine_adapter.decode.sampling import Sampling

from specscope.events import TreeTrace

from .records import AcceptanceTrace

TREE_B = 16  # candidates a position a tree run's trace keeps: every budget up to 16 (or the run's, if larger)


def _agree(draft: list[int], truth: list[int]) -> int:
    n = 0
    while n < len(draft) and n < len(truth) and draft[n] == truth[n]:
        n += 1
    return n


def record_trace(model, prompt: list[int], continuation: list[int], drafter: Drafter, k_max: int,
                 sampling: Sampling | None = None, draws: int = 8, name: str | None = None,
                 target_forward: bool = True, tree_b: int = 0, tree_depth: int | None = None) -> AcceptanceTrace:
    """The acceptance trace of ``drafter`` along ``continuation`` (the target's own output for ``prompt``).

    Returns a JSON-able record: ``A`` (N − 1 entries), ``k_max``, ``drafter``, ``tokens``, ``regime``,
    ``estimate`` (and ``draws`` under sampling), ``cost_ms`` and ``target_agrees`` (greedy: the share of
    positions where the one forward's argmax is the continuation's next token; 1.0 on every CPU run).
    ``tree_b`` > 0 (greedy, a drafter that grows trees) adds ``tree``: at every s, what a tree round from there is
    grown from — DFlash: the top ``tree_b`` probabilities of each block position 1..``tree_depth`` (``top_p``); the MTP
    head and a draft model: the same of each step of their greedy chain from s;
    DFlash2: the selector's q over each position's K candidates given the previous position's candidate (``q``) —
    and where the continuation's token is among each position's candidates (``rank``; -1: not among them), from
    which ``analysis.tree_trace`` walks a tree run at any budget (DFlash: up to ``tree_b``).
    ``target_forward=False`` skips the target's forward for a drafter that needs no hidden states (the oracle,
    whose proposals come from the continuation itself); ``target_agrees`` is then None."""
    sampling = sampling or Sampling()
    c = [int(t) for t in continuation]
    if len(c) < 2:
        raise ValueError("an acceptance trace needs a continuation of at least 2 tokens")
    if k_max < 1:
        raise ValueError("k_max must be at least 1")
    if not prompt:
        raise ValueError("empty prompt")
    if not sampling.greedy:
        return _record_sampled(model, prompt, c, drafter, k_max, sampling, draws, name)
    needs_hidden = drafter.needs_hidden
    mode = getattr(drafter, "hidden_mode", "post-norm")
    if needs_hidden:
        install_tap(model)
    cost: dict[str, float] = {}
    if not target_forward and not needs_hidden:
        return _walk_drafter(prompt, c, drafter, k_max, None, None, sampling, name, cost, None,
                             (tree_b, tree_depth or k_max))
    t0 = time.perf_counter()
    cache = make_prompt_cache(model)
    with tapping(needs_hidden) as tap:
        first = mx.argmax(prefill(model, cache, list(prompt)), axis=-1)
        mx.eval(first)
    prompt_hidden = tap.hidden(mode) if tap else None
    with tapping(needs_hidden) as tap:
        logits = model(mx.array(c[:-1], dtype=mx.uint32)[None], cache=cache)[0]
        target = mx.argmax(logits, axis=-1)
        mx.eval(target, *([tap.hidden(mode)] if tap else []))
    hidden = tap.hidden(mode) if tap else None
    cost["target_ms"] = ms_since(t0)
    agrees = int(first.item() == c[0]) + sum(int(a == b) for a, b in zip(values(target), c[1:]))
    return _walk_drafter(prompt, c, drafter, k_max, prompt_hidden, hidden, sampling, name, cost, agrees / len(c),
                         (tree_b, tree_depth or k_max))


def _drafted(drafter, last: int, k: int, sized: dict):
    if k not in sized:
        sized[k] = drafter.draft(last, k)
        sized[k].materialize()
    return sized[k]


def _ranks(cands: list[list[tuple[int, float]]], truth: list[int]) -> list[int]:
    """Each position's rank of the continuation's token among its candidates (-1: not among them)."""
    out = []
    for lst, t in zip(cands, truth):
        toks = [int(x) for x, _ in lst]
        out.append(toks.index(t) if t in toks else -1)
    return out


def _exact(x: float) -> float:
    return float(f"{x:.9g}")  # a float32 exactly (its ties and order as the engine's)


def _tree_entry(drafter, last: int, depth: int, b: int, truth: list[int]):
    """What a tree round from this prefix is grown from, and where the continuation's tokens are among it:
    ("per_position", top-b probabilities a position, ranks) for DFlash, the MTP head and a draft model (their chain's
    top-b a step); ("per_parent", the selector's q rows a
    position given the previous candidate, the index of each token among the position's candidates) for DFlash2;
    None for a drafter that gives neither."""
    cands = drafter.position_candidates(last, depth, b)
    if cands is not None:
        return "per_position", [[_exact(p) for _, p in lst] for lst in cands], _ranks(cands, truth)
    if not hasattr(drafter, "parent_candidates"):
        return None
    C, Q = drafter.parent_candidates(last, depth)
    idx = [list(int(x) for x in row) for row in C]
    ranks = [row.index(t) if t in row else -1 for row, t in zip(idx, truth)]
    return "per_parent", [[[_exact(x) for x in r] for r in q.tolist()] for q in Q], ranks


def _add_tree_entry(top_p: list, ranks: list[list[int]], drafter, c: list[int], s: int, b: int, tree_depth: int):
    """The tree's candidates from prefix ``s`` appended (``top_p`` and ``ranks``); None for a drafter that has none."""
    depth = min(tree_depth, len(c) - 1 - s)
    entry = _tree_entry(drafter, c[s], depth, b, c[s + 1 : s + 1 + depth])
    if entry is None:
        return None
    _, probs, rank = entry
    top_p.append(probs)
    ranks.append(rank)
    return top_p


def _walk_drafter(prompt, c, drafter, k_max, prompt_hidden, hidden, sampling, name, cost, agrees,
                  tree: tuple[int, int] = (0, 0)) -> AcceptanceTrace:
    """Drive the drafter along the continuation as rounds that accept nothing would: A(s) at every s."""
    t1 = time.perf_counter()
    drafter.begin(list(prompt), c[0], hidden=prompt_hidden)
    A = []
    tree_b, tree_depth = tree
    top_p: list[Any] | None = [] if tree_b > 0 and drafter.drafts_trees else None
    ranks: list[list[int]] = []
    by_k: dict[str, list[int]] | None = None if drafter.chained else {str(k): [] for k in range(1, k_max + 1)}
    # a chain drafter's tree candidates are drafted as its chain is (it leaves itself as it was): read before the drafts
    first = drafter.candidates_from_chain
    for s in range(len(c) - 1):
        k = min(k_max, len(c) - 1 - s)
        if top_p is not None and first:
            top_p = _add_tree_entry(top_p, ranks, drafter, c, s, tree_b, tree_depth)
        sized: dict = {}  # greedy drafts from one prefix, by block size: each size drafted once (the k of the round too)
        if by_k is not None:  # drafts that depend on k (DFlash's block): every k's own proposals from this prefix
            for j in range(1, k_max + 1):
                dj = _drafted(drafter, c[s], min(j, k), sized)
                by_k[str(j)].append(_agree(dj.tokens, c[s + 1 : s + 1 + min(j, k)]))
        d = _drafted(drafter, c[s], k, sized)
        A.append(_agree(d.tokens, c[s + 1 : s + 1 + k]))
        if top_p is not None and not first:  # the tree's candidates from this prefix (after the drafts: the context is read)
            top_p = _add_tree_entry(top_p, ranks, drafter, c, s, tree_b, tree_depth)
        drafter.update(0, d, [c[s + 1]], hidden=hidden[s : s + 1] if hidden is not None else None)
    cost["draft_ms"] = ms_since(t1)
    cost["total_ms"] = cost.get("target_ms", 0.0) + cost["draft_ms"]
    out: AcceptanceTrace = {"drafter": name or drafter.kind, "k_max": k_max, "A": A, "tokens": len(c), "regime": sampling.regime,
           "estimate": False, "target_agrees": agrees, "cost_ms": cost,
           "method": "exact: the drafter's own proposals from every true prefix, compared with the target's output"}
    if drafter.drafts_to_the_end:  # its last rounds draft one more (``trace_walk.walk``)
        out["to_the_end"] = True
    if top_p is not None:
        tt: TreeTrace = {"b": tree_b, "depth": tree_depth, "rank": ranks, "to_the_end": drafter.drafts_to_the_end}
        if hasattr(drafter, "parent_candidates"):
            tt.update({"kind": "per_parent", "q": top_p})
        else:
            tt.update({"kind": "per_position", "top_p": top_p})
        out["tree"] = tt
    if by_k is not None:
        out.update({"A_by_k": by_k, "chained": False,
                    "method": "exact: at every k, the drafter's own proposals for a block of that k from every true prefix "
                              "(its drafts depend on k), compared with the target's output"})
    return out


def _record_sampled(model, prompt, c, drafter, k_max, sampling: Sampling, draws: int, name) -> AcceptanceTrace:
    """Under sampling: ``draws`` seeded accept/reject draws per position (see the module docstring)."""
    if draws < 1:
        raise ValueError("draws must be at least 1")
    needs_hidden = drafter.needs_hidden
    mode = getattr(drafter, "hidden_mode", "post-norm")
    if is_hybrid(model):
        install_capture(model)
    if needs_hidden:
        install_tap(model)
    t0 = time.perf_counter()
    cache = make_prompt_cache(model)
    rollback = VerifyRollback(model, cache)
    with tapping(needs_hidden) as tap:
        mx.eval(prefill(model, cache, list(prompt)))
    drafter.begin(list(prompt), c[0], hidden=tap.hidden(mode) if tap else None)
    per_draw: list[list[int]] = [[] for _ in range(draws)]
    for s in range(len(c) - 1):
        k = min(k_max, len(c) - 1 - s)
        d = drafter.draft(c[s], k)
        d.materialize()
        inputs = mx.array([c[s]] + d.tokens, dtype=mx.uint32)
        rollback.before_verify()
        with capturing() as cap, tapping(needs_hidden) as tap:
            logits = model(inputs[None], cache=cache)[0]
            p = np.array(sampling.probs(logits), dtype=np.float64)
        q = None if d.probs is None else np.array(d.probs, dtype=np.float64)
        rollback.record(cap, k + 1, inputs)
        mx.eval(rollback.rollback(0))
        for m in range(draws):
            rng = np.random.default_rng([sampling.seed, 104729, m, s])
            n = 0
            for i, tok in enumerate(d.tokens):
                qi = q[i, tok] if q is not None else 1.0
                if not (qi > 0 and rng.random() < min(1.0, p[i, tok] / qi)):
                    break
                n += 1
            per_draw[m].append(n)
        drafter.update(0, d, [c[s + 1]], hidden=tap.hidden(mode)[:1] if tap else None)
    total = ms_since(t0)
    mean = [int(round(float(np.mean([dr[s] for dr in per_draw])))) for s in range(len(c) - 1)]
    return {"drafter": name or drafter.kind, "k_max": k_max, "A": mean, "draws": per_draw, "tokens": len(c),
            "regime": sampling.regime, "estimate": True, "cost_ms": {"total_ms": total},
            "method": (f"an estimate: {draws} seeded accept/reject draws per position against the target's "
                       "distributions along one sampled continuation")}


def engine_trace(engine, prompt: list[int], plain_tokens: list[int], k_max: int | None = None) -> AcceptanceTrace | None:
    """The trace of a ``run``'s own drafter along a case's plain output, for a ``trace`` event (``session``
    keeps it as ``case["trace"]``). ``k_max`` defaults to max(4, k). None for the oracle, which stays analytic
    (its draws are i.i.d.: E(k) = 1 + Σ p^i needs no trace)."""
    drafter = engine.make_drafter(plain_tokens)
    if drafter.what_if:
        return None
    k_max = k_max or max(4, engine.params.num_draft_tokens)
    budget = engine.params.tree_budget  # a tree run's trace: the candidates a position too (any budget up to b)
    return record_trace(engine.target.model, prompt, plain_tokens, drafter, k_max, sampling=engine.sampling,
                        name=engine.drafter_name, target_forward=drafter.needs_hidden,
                        tree_b=max(TREE_B, budget) if budget > 0 else 0, tree_depth=engine.params.num_draft_tokens)
