"""The checkpoint's own multi-token-prediction head as a drafter (the head, its namings and its weights:
``mtp_head``). ``k > 1`` chains the head on its own output hidden state.

Hidden-state source (``hidden``): ``post-norm`` (default, as vLLM and llama.cpp) feeds the
trunk's final-norm output; ``pre-norm`` its input. Chained steps feed what vLLM feeds: the head's
normed output for the Qwen namings, its pre-norm output for the DeepSeek naming (whose
``shared_head.norm`` belongs to the logits), and the pre-norm output in ``pre-norm`` mode.

Cache bookkeeping: the MTP cache holds one entry per (h_j, t_{j+1}) pair of
*verified* positions. Chained draft steps add provisional entries that are
dropped once the target has verified the round; the verified pairs are fed
in one catch-up forward at the start of the next draft (and timed as draft).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import TypedDict

import mlx.core as mx
from mlx_lm.models.cache import KVCache

from specscope.engine_adapter.clock import ms_since
from specscope.engine_adapter.drafters.drafter import Draft, Drafter
from specscope.engine_adapter.drafters.mtp_head import MTPHead, build_mtp_head
from specscope.engine_adapter.cache.hidden import trunk_parts


class HeadPrefill(TypedDict):
    """The MTP head's own prefill of a long context (``MTPDrafter.prefill_context``): its time and its cache's bytes."""
    ms: float
    bytes: int


class MTPDrafter(Drafter):
    kind = "mtp"
    needs_hidden = True
    lazy_drafts = True
    drafts_trees = True  # top-b of each chained step (``tree_drafts.chain_tree``)
    candidates_from_chain = True  # its tree candidates are drafted as its chain is: read before a round's draft

    def __init__(self, target, head: MTPHead, hidden: str = "post-norm", source: str = ""):
        self.model = target.model
        self.head = head
        self.hidden_mode = hidden
        self.source = source
        self.embed, self.lm_head = trunk_parts(self.model)["embed"], trunk_parts(self.model)["head"]
        self.cache = KVCache()  # begin() starts a fresh one
        self.pending_hidden: mx.array | None = None
        self.pending_tokens: list[int] = []
        self.after_catchup = 0
        self.drafted = False

    def _logits(self, x_normed):
        return self.lm_head(x_normed)

    @property
    def context_key(self):
        """Where this head's own context caches are stored (``context``): in the trunk's store, under this mode and
        these weights."""
        from specscope.engine_adapter.cache import context

        return context.Part(self.model, ("mtp", self.hidden_mode, self.source))

    def prefill_context(self, tokens: list[int], hidden: dict, step: int = 512) -> HeadPrefill:
        """The head's own prefill of a long context, once (``context.prefill_context`` gave the trunk's hidden
        states of every context position): pairs (h_j, t_{j+1}) for j < C-1 go into its KV cache, which is stored
        with h_{C-1} (its pair's t_C is the case's first prompt token). Timed to the sync."""
        from specscope.engine_adapter.cache import context

        t0 = time.perf_counter()
        self.cache = KVCache()
        h = hidden[self.hidden_mode]
        for i in range(0, len(tokens) - 1, step):
            j = min(i + step, len(tokens) - 1)
            self._step(mx.array(tokens[i + 1:j + 1], dtype=mx.uint32), h[i:j])
            mx.eval(self.cache.state)
        ms = ms_since(t0)
        entry = context.store(self.context_key, tokens, [self.cache])
        self.cache = KVCache()
        return {"ms": ms, "bytes": context.nbytes(entry.saved)}

    @contextmanager
    def hold_prefix(self, prompt, hidden=None):
        """The head's own cache over ``prompt`` (``prefill_context``, from the trunk's ``hidden`` of those positions),
        stored while held so each ``begin`` that extends it reads only the rest; removed on exit. Nothing is held
        where a stored long context already starts ``prompt`` (``begin`` starts from that copy)."""
        from specscope.engine_adapter.cache import context

        tokens = list(prompt)
        if hidden is None or len(tokens) < 2 or context.find(self.context_key, tokens) is not None \
                or context.lookup(self.context_key, tokens) is not None:
            yield
            return
        self.prefill_context(tokens, {self.hidden_mode: hidden[:len(tokens)]})
        entry = context.lookup(self.context_key, tokens)
        try:
            yield
        finally:
            if entry is not None:
                context.discard(self.context_key, entry)

    def begin(self, prompt, first_token, hidden=None):
        if hidden is None:
            raise RuntimeError("the MTP drafter needs the trunk's hidden states")
        self.cache = KVCache()
        from specscope.engine_adapter.cache import context

        entry = context.find(self.context_key, list(prompt))  # a long context this head has prefilled once
        if entry is not None:
            done = len(entry.tokens)
            if hidden.shape[0] < len(prompt):
                raise RuntimeError(f"the trunk's hidden states cover {hidden.shape[0]} of {len(prompt)} positions")
            context.thaw([self.cache], entry.saved)
            hidden = hidden[done - 1:]  # position C-1 onward: its pair is (h_{C-1}, t_C)
            prompt = list(prompt[done - 1:])
        tokens = list(prompt[1:]) + [first_token]  # t_{j+1} for each prompt position j
        # The head's own prefill: all prompt pairs but the last go into its cache now, so the
        # first round's draft time holds one catch-up position like every later round.
        if len(tokens) > 1:
            self._step(mx.array(tokens[:-1], dtype=mx.uint32), hidden[:-1])
            mx.eval(self.cache.state)
        self.pending_hidden = hidden[-1:]
        self.pending_tokens = tokens[-1:]

    def _step(self, tokens: mx.array, hidden: mx.array):
        pre, post = self.head(self.embed(tokens)[None], hidden[None], self.cache)
        chain = post if self.hidden_mode == "post-norm" and self.head.chain_normed else pre
        return chain[0], post[0]

    def draft(self, last_token, k, lazy=False):
        out, _ = self._chain(k)
        return Draft.of(mx.concatenate(out), lazy) if out else Draft([])

    def _chain(self, k: int) -> tuple[list[mx.array], list[mx.array]]:
        """The catch-up, then ``k`` greedy drafts chained on the head's own output (lazy): each [1] and its logits."""
        self.drafted = k > 0
        if k == 0:
            return [], []
        assert self.pending_hidden is not None, "begin() comes first"
        chain_h, normed = self._step(mx.array(self.pending_tokens, dtype=mx.uint32), self.pending_hidden)
        self.after_catchup = self.cache.offset
        logits = self._logits(normed[-1:])
        y = mx.argmax(logits, axis=-1).astype(mx.uint32)
        out, steps = [y], [logits]
        h = chain_h[-1:]
        for _ in range(k - 1):
            h, normed = self._step(y, h)
            logits = self._logits(normed)
            y = mx.argmax(logits, axis=-1).astype(mx.uint32)
            out.append(y)
            steps.append(logits)
        return out, steps

    def draft_tree(self, last_token, depth, budget):
        """The chain of ``depth`` drafts, each step's top ``budget`` kept: the tree grown from those lists
        (``tree_drafts``). ``update`` is a chain round's: the provisional entries dropped, the accepted path's
        (h_j, t_j+1) pairs fed at the next draft — whichever branch the path took, the head's cache holds verified
        pairs only."""
        from specscope.engine_adapter.drafters.tree_drafts import chain_candidates, chain_tree

        out, steps = self._chain(depth)
        return chain_tree(last_token, depth, budget, chain_candidates(steps, out, budget))

    def position_candidates(self, last_token, depth, b):
        """A tree round's candidate lists from here, the head left as it was (the acceptance trace's tree)."""
        from specscope.engine_adapter.drafters.tree_drafts import chain_candidates

        offset, after, drafted = self.cache.offset, self.after_catchup, self.drafted
        out, steps = self._chain(depth)
        lists = chain_candidates(steps, out, b)
        if self.cache.offset > offset:
            self.cache.trim(self.cache.offset - offset)
        self.after_catchup, self.drafted = after, drafted
        return lists

    def update(self, accepted, draft, emitted, hidden=None):
        new_hidden = hidden[: accepted + 1]
        if self.drafted:
            extra = self.cache.offset - self.after_catchup
            if extra > 0:
                self.cache.trim(extra)  # drop provisional chained entries
            self.pending_hidden, self.pending_tokens = new_hidden, list(emitted)
        else:  # nothing was fed this round: keep accumulating verified pairs
            assert self.pending_hidden is not None, "begin() comes first"
            self.pending_hidden = mx.concatenate([self.pending_hidden, new_hidden], axis=0)
            self.pending_tokens += list(emitted)

    def describe(self):
        info = self.head.info
        out = {**super().describe(), "hidden": self.hidden_mode, "weights": self.source, "style": info.style or self.head.style}
        if info.layer is not None:
            out["mtp_layer"] = info.layer
        if info.skipped:
            out["not_loaded"] = f"{info.skipped} (the trunk's are used)"
        return out


def load_mtp_head(target, weights_path: str | None = None) -> MTPHead:
    """The head, built and cast to the run's --dtype (as the target's). An engine loads it once and makes every drafter
    from it (``begin`` gives each its own cache), as a production engine does: loading it per pass and per components
    call cost ~25 ms each, 3-4% of both on the demo."""
    from specscope.engine_adapter.model.loader import cast_floating

    head = build_mtp_head(target, weights_path)
    cast_floating(head, getattr(target, "compute_dtype", None))
    return head


def load_mtp_drafter(target, weights_path: str | None = None, hidden: str = "post-norm",
                     head: MTPHead | None = None) -> MTPDrafter:
    """A drafter on ``head`` (one loaded by ``load_mtp_head`` from the same ``weights_path``), or on a head of its own."""
    return MTPDrafter(target, head if head is not None else load_mtp_head(target, weights_path), hidden=hidden,
                      source=str(weights_path or target.path))
