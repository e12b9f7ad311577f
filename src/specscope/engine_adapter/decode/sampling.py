"""Sampling regimes and the speculative accept/reject rule.

Greedy: argmax of log-probabilities (as mlx-lm), accept the longest prefix of
drafts equal to the target's argmax. Temperature (with optional top-p): the
standard speculative-sampling rule — accept draft ``d`` with probability
``min(1, p(d)/q(d))``; on rejection sample from ``normalize(max(0, p - q))``;
after all ``k`` accepted sample the bonus from ``p``. With no draft
distribution (n-gram, oracle) ``q`` is a point mass on ``d``. The output
distribution then equals plain sampling's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

import mlx.core as mx
import numpy as np

from specscope.engine_adapter.mlx_types import values


class SamplingRecord(TypedDict):
    """A sampling regime as the session keeps it (``Sampling.to_dict``)."""
    temp: float
    top_p: float
    seed: int
    regime: str


@dataclass(frozen=True)
class Sampling:
    temp: float = 0.0
    top_p: float = 1.0
    seed: int = 0

    @property
    def greedy(self) -> bool:
        return self.temp <= 0.0

    @property
    def regime(self) -> str:
        if self.greedy:
            return "greedy"
        s = f"temperature {self.temp:g}"
        if 0 < self.top_p < 1:
            s += f", top-p {self.top_p:g}"
        return s

    def to_dict(self) -> SamplingRecord:
        return {"temp": self.temp, "top_p": self.top_p, "seed": self.seed, "regime": self.regime}

    # -- distributions ---------------------------------------------------
    def probs(self, logits: mx.array) -> mx.array:
        """Target distribution over the vocabulary (rows of ``logits``), temperature and top-p applied."""
        p = mx.softmax(logits.astype(mx.float32) / self.temp, axis=-1)
        if 0 < self.top_p < 1:
            order = mx.argsort(-p, axis=-1)
            sorted_p = mx.take_along_axis(p, order, axis=-1)
            cum = mx.cumsum(sorted_p, axis=-1)
            keep_sorted = (cum - sorted_p) < self.top_p  # keep until the mass reaches top_p
            keep = mx.put_along_axis(mx.zeros_like(keep_sorted), order, keep_sorted, axis=-1)
            p = mx.where(keep, p, 0.0)
            p = p / p.sum(axis=-1, keepdims=True)
        return p

    def sample(self, logits_row: mx.array, index: int) -> mx.array:
        """One token from one row of logits (lazy)."""
        if self.greedy:
            lp = logits_row - mx.logsumexp(logits_row, axis=-1, keepdims=True)
            return mx.argmax(lp, axis=-1).astype(mx.uint32)
        p = self.probs(logits_row)
        # One key per position, derived from the seed: reproducible, independent of batching.
        step_key = mx.random.key(self.seed * 1_000_003 + index)
        return mx.random.categorical(mx.log(p), key=step_key).astype(mx.uint32)

    # -- speculative verification ---------------------------------------
    def verify(self, logits: mx.array, draft, position: int) -> tuple[int, int, dict]:
        """Accepted count and the bonus token for one verify forward over ``k+1`` positions.

        ``logits`` may be lazy, and so may the drafts (``draft.tokens`` None, from a lazy draft):
        then the drafts, the verify forward and (greedy) the target's argmax are evaluated in one
        sync, as mlx-lm's speculative loop does (``mx.eval(tokens, draft_tokens)``).
        """
        if self.greedy:
            lp = logits - mx.logsumexp(logits, axis=-1, keepdims=True)  # as mlx-lm: argmax of log-probabilities
            t = mx.argmax(lp, axis=-1)
            if draft.tokens is None:
                mx.eval(draft.array, t)
                draft.materialize()
            d = draft.tokens
            k = len(d)
            picks = values(t)
            n = 0
            while n < k and picks[n] == d[n]:
                n += 1
            return n, int(picks[n]), {}
        if draft.tokens is None:
            mx.eval(draft.array, logits, *([] if draft.probs is None else [draft.probs]))
            draft.materialize()
        d = draft.tokens
        k = len(d)
        p = np.array(self.probs(logits), dtype=np.float64)  # [k+1, V]
        q = None if draft.probs is None else np.array(draft.probs, dtype=np.float64)
        rng = np.random.default_rng([self.seed, position])
        for i in range(k):
            qi = q[i, d[i]] if q is not None else 1.0
            if qi > 0 and rng.random() < min(1.0, p[i, d[i]] / qi):
                continue
            if q is not None:
                resid = np.maximum(p[i] - q[i], 0.0)
            else:
                resid = p[i].copy()
                resid[d[i]] = 0.0
            total = resid.sum()
            resid = resid / total if total > 0 else p[i]
            return i, int(rng.choice(resid.size, p=resid)), {}
        return k, int(rng.choice(p.shape[1], p=p[k] / p[k].sum())), {}
