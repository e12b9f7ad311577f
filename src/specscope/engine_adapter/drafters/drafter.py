"""Drafters: where the ``k`` draft tokens of a speculative round come from.

Every drafter has the same small contract, so new ones slot in:

- ``begin(prompt, first_token)`` after the target's prefill;
- ``draft(last_token, k, lazy=False) -> Draft`` the next ``k`` guesses after
  ``last_token``; with ``lazy=True`` a drafter that computes on the device may
  return them unevaluated in ``Draft.array`` (``tokens`` None), so an end-to-end
  round chains them into the verify forward with one sync, as a production
  engine does;
- ``update(accepted, draft, emitted)`` once the target has verified them;
- ``hold_prefix(prompt)`` (optional): while held, a ``begin`` whose prompt extends ``prompt`` starts from a copy
  of this prefix's state instead of prefilling it again (the components timed apart begin many times at
  neighbouring points of one case).

A drafter that has a draft distribution fills ``Draft.probs`` (one row per
draft token) so speculative sampling at temperature can use it; the others
are point masses.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import NotRequired, TypedDict

import mlx.core as mx
from mlx_lm.models.cache import make_prompt_cache

from specscope.engine_adapter.mlx_types import values
from specscope.engine_adapter.cache.rollback import CacheSnapshot


class DrafterDescription(TypedDict):
    """What a drafter says of itself (``Drafter.describe``): its kind and whether it is a what-if, and each kind's own
    fields."""
    kind: str
    what_if: bool
    max_ngram: NotRequired[int]             # n-gram
    model: NotRequired[str]                 # draft model: its name
    hidden: NotRequired[str]                # MTP: the hidden-state source
    weights: NotRequired[str | None]        # MTP, DFlash: where the weights came from
    style: NotRequired[str | None]          # MTP: the naming
    mtp_layer: NotRequired[int]
    not_loaded: NotRequired[str]
    variant: NotRequired[str]               # DFlash
    block_size: NotRequired[int]
    target_layer_ids: NotRequired[list[int]]
    mask_token_id: NotRequired[int]
    drafts: NotRequired[str]
    p: NotRequired[float]                   # oracle
    draft_ms: NotRequired[float]
    label: NotRequired[str]


@dataclass
class Draft:
    tokens: list[int] | None
    probs: mx.array | None = None  # [k, vocab] draft distribution, if the drafter has one
    extra: dict = field(default_factory=dict)
    array: mx.array | None = None  # the same drafts, unevaluated, from a lazy draft

    def as_array(self) -> mx.array:
        if self.array is not None:
            return self.array
        assert self.tokens is not None  # a draft holds its tokens, its array, or both
        return mx.array(self.tokens, dtype=mx.uint32)

    @classmethod
    def of(cls, toks: mx.array, lazy: bool) -> "Draft":
        """Drafts made on the device: left unevaluated for a lazy (end-to-end) round, else read back now."""
        if lazy:
            return cls(None, array=toks)
        mx.eval(toks)
        return cls(values(toks))

    def materialize(self) -> None:
        """Fill ``tokens`` from ``array`` (after the sync that evaluated it)."""
        if self.tokens is None:
            self.tokens = values(self.array) if self.array is not None else []


class Drafter:
    kind = "base"
    what_if = False  # True for drafters that are not real drafters (the oracle)
    needs_hidden = False  # True: begin/update receive the target's hidden states (MTP)
    lazy_drafts = False  # True: draft(..., lazy=True) may return unevaluated drafts (device drafters)
    # True: near the end a round drafts every token left and its bonus is cut, as the drafter's reference loop does
    # (DFlash: a block of another size drafts other tokens, so the last rounds must match the reference's blocks)
    drafts_to_the_end = False
    # True: from a given prefix the first k drafts are the same whatever k is (chain drafters); False: they depend on
    # k (DFlash's block attends both ways), so an acceptance trace records each k apart
    chained = True
    # True: ``draft_tree`` gives a tree of candidates from per-position distributions (``--tree-budget``)
    drafts_trees = False
    # True: its tree candidates are drafted as its chain is (``position_candidates`` drafts and undoes a chain), so
    # the acceptance trace reads them before a round's drafts (the MTP head, a draft model)
    candidates_from_chain = False

    def begin(self, prompt: list[int], first_token: int, hidden=None) -> None:  # pragma: no cover - interface
        pass

    def draft(self, last_token: int, k: int, lazy: bool = False) -> Draft:  # pragma: no cover - interface
        raise NotImplementedError

    def update(self, accepted: int, draft: Draft, emitted: list[int], hidden=None) -> None:
        pass

    def draft_tree(self, last_token: int, depth: int, budget: int):
        """A tree (``cache.tree.Tree``) of at most ``budget`` drafted nodes and ``depth`` levels after ``last_token``,
        grown best first from the drafter's per-position distributions; ``update`` then takes the accepted path as
        a chain's accepted drafts (``hidden``: the verify's hidden states along it). A chain drafter (the MTP head, a
        draft model) leaves its own state for the path, wherever it left the chain it drafted."""
        raise NotImplementedError(f"the {self.kind} drafter does not draft trees")

    def position_candidates(self, last_token: int, depth: int, b: int) -> list[list[tuple[int, float]]] | None:
        """The top ``b`` candidates (token, probability) of each position 1..``depth`` after ``last_token``, the same
        whatever the parent, for a drafter whose trees are grown from such lists (DFlash; the MTP head and a draft
        model, their chain's steps, drafted and undone: the drafter is left as it was): what the acceptance trace
        records for trees. None: a drafter whose candidates depend on the parent (DFlash2) or that has none."""
        return None

    def hold_prefix(self, prompt: list[int], hidden=None):
        """A context manager: while it is held, ``begin`` from a prompt that extends ``prompt`` may start from a copy
        of this prefix's state. By default nothing is held (a drafter whose ``begin`` is cheap)."""
        return nullcontext()

    def describe(self) -> DrafterDescription:
        return {"kind": self.kind, "what_if": self.what_if}


class NgramDrafter(Drafter):
    """Prompt lookup: find the latest earlier occurrence of the trailing n-gram, propose what followed.

    Always proposes exactly ``k`` tokens (so every round verifies ``k+1``
    positions): a match shorter than ``k`` is extended by looking up again on
    the extended text; with no match at all, the last token is repeated.
    """

    kind = "ngram"

    def __init__(self, max_ngram: int = 3, min_ngram: int = 1):
        self.max_ngram, self.min_ngram = max_ngram, min_ngram
        self.context: list[int] = []

    def begin(self, prompt, first_token, hidden=None):
        self.context = list(prompt) + [first_token]

    def _lookup(self, seq: list[int]) -> int | None:
        for n in range(min(self.max_ngram, len(seq) - 1), self.min_ngram - 1, -1):
            tail = seq[-n:]
            for start in range(len(seq) - n - 1, -1, -1):
                if seq[start : start + n] == tail:
                    return seq[start + n]
        return None

    def draft(self, last_token, k, lazy=False):
        seq = list(self.context)
        out = []
        hits = 0
        for _ in range(k):
            nxt = self._lookup(seq)
            if nxt is None:
                nxt = seq[-1]
            else:
                hits += 1
            out.append(nxt)
            seq.append(nxt)
        return Draft(out, extra={"lookup_hits": hits})

    def update(self, accepted, draft, emitted, hidden=None):
        self.context.extend(emitted)

    def describe(self):
        return {**super().describe(), "max_ngram": self.max_ngram}


class DraftModelDrafter(Drafter):
    """A separate (smaller) model sharing the target's tokenizer, greedy.

    Its cache holds everything up to the tokens in ``pending``. Drafting feeds
    ``pending`` then each draft but the last; after verification the cache is
    restored to the last accepted draft from per-token checkpoints, which
    works for trimmable KV caches and for hybrid drafters alike.
    """

    kind = "draft"
    lazy_drafts = True
    drafts_trees = True  # top-b of each chain step (``tree_drafts.chain_tree``)
    candidates_from_chain = True  # its tree candidates are drafted as its chain is: read before a round's draft

    def __init__(self, model, name: str = ""):
        self.model = model
        self.name = name
        self.cache: list = []  # begin() makes it
        self.pending: list[int] = []
        self.checkpoints: list[CacheSnapshot] = []
        self.tree_chain: list[int] | None = None  # the chain a tree round drafted (None: a chain round)

    def begin(self, prompt, first_token, hidden=None):
        from specscope.engine_adapter.cache import context

        self.cache = make_prompt_cache(self.model)
        if len(prompt) > 0:  # from a copy of a stored long context, when the prompt starts with one (``context``)
            done = context.restore_prefix(self.model, self.cache, list(prompt))
            context.run_prefill(self.model, self.cache, list(prompt)[done:])
            mx.eval([c.state for c in self.cache])
        self.pending = [first_token]

    def draft(self, last_token, k, lazy=False):
        self.tree_chain = None
        out, _ = self._chain(last_token, k)
        if not out:
            return Draft([])
        return Draft.of(mx.concatenate(out), lazy)

    def _chain(self, last_token: int, k: int) -> tuple[list[mx.array], list[mx.array]]:
        """Feed ``pending`` and the greedy chain's drafts but the last (lazy): each draft [1] and its step's logits."""
        assert self.pending and self.pending[-1] == last_token
        self.checkpoints = []
        y = mx.array(self.pending)
        out, steps = [], []
        for i in range(k):
            logits = self.model(y[None], cache=self.cache)[0, -1]
            y = mx.argmax(logits, axis=-1, keepdims=True).astype(mx.uint32)
            mx.async_eval(y)  # as mlx-lm: this step computes while the next one (and the verify) is built
            out.append(y)
            steps.append(logits)
            # checkpoints[i]: the cache after feeding pending + d1..di
            self.checkpoints.append(CacheSnapshot(self.cache))
        return out, steps

    def draft_tree(self, last_token, depth, budget):
        """The greedy chain of ``depth`` drafts, each step's top ``budget`` kept: the tree grown from those lists
        (``tree_drafts``); ``update`` then keeps the cache for the accepted path's common prefix with the chain."""
        from specscope.engine_adapter.drafters.tree_drafts import chain_candidates, chain_tree

        out, steps = self._chain(last_token, depth)
        lists = chain_candidates(steps, out, budget)  # the one sync: the chain is evaluated with its lists
        self.tree_chain = values(mx.concatenate(out)) if out else []
        return chain_tree(last_token, depth, budget, lists)

    def position_candidates(self, last_token, depth, b):
        """A tree round's candidate lists from here, the drafter left as it was (the acceptance trace's tree)."""
        from specscope.engine_adapter.drafters.tree_drafts import chain_candidates

        snap, checkpoints = CacheSnapshot(self.cache), self.checkpoints
        out, steps = self._chain(last_token, depth)
        lists = chain_candidates(steps, out, b)
        snap.restore()
        self.checkpoints = checkpoints
        return lists

    def update(self, accepted, draft, emitted, hidden=None):
        if self.tree_chain is not None:
            self._update_tree(list(draft.tokens or []), emitted)
            return
        k = len(draft.tokens)
        if k == 0:
            self.pending = self.pending + emitted
            return
        keep = min(accepted, k - 1)
        if keep < k - 1:
            self.checkpoints[keep].restore()
        self.checkpoints = []
        self.pending = ([draft.tokens[-1]] if accepted == k else []) + [emitted[-1]]

    def _update_tree(self, path: list[int], emitted: list[int]) -> None:
        """After a tree round (``path``: the accepted path's tokens): the cache rolled back to the path's common prefix
        ``m`` with the drafted chain (at most the chain's fed drafts), the rest of the path and the bonus pending — a
        chain round that accepted ``m`` drafts, then fed the path's other tokens as the next draft's catch-up."""
        from specscope.engine_adapter.drafters.tree_drafts import common_prefix

        chain, self.tree_chain = self.tree_chain or [], None
        if not chain:
            self.pending = self.pending + list(emitted)
            return
        keep = min(common_prefix(path, chain), len(chain) - 1)
        if keep < len(chain) - 1:
            self.checkpoints[keep].restore()
        self.checkpoints = []
        self.pending = list(emitted[keep:])

    @contextmanager
    def hold_prefix(self, prompt, hidden=None):
        """The draft model's cache over ``prompt``, prefilled once and stored (``cache.context``) while held, so each
        ``begin`` that extends it prefills only the rest; removed on exit, so no later pass starts from it."""
        from specscope.engine_adapter.cache import context

        if len(prompt) < 1 or context.lookup(self.model, list(prompt)) is not None:
            yield
            return
        cache = make_prompt_cache(self.model)
        mx.eval(context.prefill(self.model, cache, list(prompt)))  # from a stored long context where one starts it
        entry = context.store(self.model, list(prompt), cache)
        try:
            yield
        finally:
            context.discard(self.model, entry)

    def describe(self):
        return {**super().describe(), "model": self.name}
