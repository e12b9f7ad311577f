"""DFlash2 as a drafter: DFlash's round (``drafters.dflash``) with DFlash2's forward, then the selector's walk.

A round: the drafter's forward over the block ``[last token, mask × k]`` (its context read as DFlash's), the target's
head on block positions 1..k, the top-K candidates per position, then the walk from the verified anchor (the last
token) over them (``dflash2_model.CandidateSelector``). The forward is parallel over the block; the walk is sequential,
one position after another, so an instrumented draft (``lazy=False``) times them apart, each to its own sync, in
``Draft.extra``: ``forward_ms`` (forward, head, candidates) and ``walk_ms``. An end-to-end round (``lazy=True``)
leaves both unevaluated, chained into the verify forward with one sync, as the reference loop does.

Greedy: the walk's argmax picks. At temperature the walk samples each pick from q = softmax(score / T) over its
position's candidates, and ``Draft.probs`` carries q on the vocabulary (zero outside the candidates): the verify's
rejection rule (``Sampling.verify``) must judge the drafts against the distribution they were drawn from, which is q,
not the drafter's softmax (the reference passes the candidate indices with q for the same reason). The selector's q
ignores top-p, as the reference's does: top-p shapes the target's distribution, and the rule stays exact for any q.
"""

from __future__ import annotations

import time

import mlx.core as mx

from specscope.engine_adapter.drafters.dflash import DFlashDrafter
from specscope.engine_adapter.drafters.dflash2_model import DFlash2Model
from specscope.engine_adapter.drafters.drafter import Draft
from specscope.engine_adapter.model.dflash2_format import DFlash2Spec
from specscope.errors import SpecscopeError


class DFlash2Drafter(DFlashDrafter):
    model: DFlash2Model
    spec: DFlash2Spec

    def block_states(self, last_token: int, k: int) -> tuple[mx.array, mx.array]:
        """One drafter forward over ``[last_token, mask × k]`` after reading the pending context: the normed hidden
        states of block positions 1..k [k, H] and their logits [k, vocab] (lazy)."""
        block = mx.array([last_token] + [self.spec.mask_token_id] * k, dtype=mx.uint32)
        feats = self.pending if self.pending is not None else mx.zeros((0, self.model.fc.weight.shape[1]))
        self.pending = None
        emb = self.embed(block[None])
        if self.spec.input_embedding_scale != 1.0:
            emb = emb * self.spec.input_embedding_scale
        h = self.model(emb, feats[None], self.cache)[0, 1:]
        return h, self.model.logits(self.head(h))

    def block_logits(self, last_token: int, k: int) -> mx.array:
        """The logits the selector reads, [k, vocab] (lazy): ``dflash_check`` compares these."""
        return self.block_states(last_token, k)[1]

    def position_candidates(self, last_token, depth, b):
        return None  # the selector ranks a node's children given its token: no one list a position

    def parent_candidates(self, last_token: int, depth: int):
        """The candidates a position and the selector's q given the previous candidate (``tree_drafts``)."""
        from specscope.engine_adapter.drafters.tree_drafts import dflash2_candidates

        return dflash2_candidates(self, last_token, depth)

    def draft_tree(self, last_token, depth, budget):
        from specscope.engine_adapter.drafters.tree_drafts import dflash2_tree

        return dflash2_tree(self, last_token, depth, budget)

    def _keys(self, k: int) -> list[mx.array] | None:
        if self.sampling is None or self.sampling.greedy:
            return None
        base = self.sampling.seed * 1_000_003 + 700_001 + self.draws * 4099  # distinct from DFlash's draft keys
        return [mx.random.key(base + i) for i in range(k)]

    def draft(self, last_token, k, lazy=False):
        if k == 0:
            return Draft([])
        if k > self.spec.max_draft_tokens:
            raise SpecscopeError(f"DFlash2 drafts at most block size − 1 = {self.spec.max_draft_tokens} tokens a "
                                 f"round (asked for {k})")
        temp = 0.0 if self.sampling is None or self.sampling.greedy else self.sampling.temp
        keys = self._keys(k)
        self.draws += 1
        selector = self.model.candidate_selector
        t0 = time.perf_counter()
        h, logits = self.block_states(last_token, k)
        parts = selector.candidates(h, logits)
        if not lazy:
            mx.eval(*parts)
        t1 = time.perf_counter()
        toks, q = selector.walk(last_token, parts, temp, keys)
        probs = None
        if q is not None:  # q on the vocabulary: zero outside each position's candidates
            probs = mx.put_along_axis(mx.zeros((k, logits.shape[-1]), dtype=mx.float32), parts[0], q, axis=-1)
        extra: dict = {"block": k + 1}
        if lazy:
            return Draft(None, probs=probs, array=toks, extra=extra)
        mx.eval(toks, *([probs] if probs is not None else []))
        extra.update(forward_ms=(t1 - t0) * 1e3, walk_ms=(time.perf_counter() - t1) * 1e3)
        return Draft(toks.tolist(), probs=probs, extra=extra)  # type: ignore[arg-type]  # a list of ints

    def describe(self):
        s = self.spec
        greedy = self.sampling is None or self.sampling.greedy
        return {**super().describe(), "drafts": "the selector's greedy walk" if greedy else
                f"sampled by the selector's walk from q over its top {s.selector_top_k} (rejection sampling against q)"}

