"""The oracle what-if drafter: separates "how good is the drafter" from "how expensive is verify".

It drafts the plain run's own continuation, replacing each draft token by a
wrong one with probability ``1 − p`` (seeded), and charges a chosen draft
cost as a busy wait. Verification, rollback and bookkeeping are the real
ones, so a sweep over ``p`` measures the real speculative path at any
acceptance. It is not a drafter anyone can deploy; everything labels it a
what-if.
"""

from __future__ import annotations

import time

import numpy as np

from specscope.engine_adapter.clock import ms_since
from specscope.engine_adapter.drafters.drafter import Draft, Drafter


class OracleDrafter(Drafter):
    kind = "oracle"
    what_if = True

    def __init__(self, plain_tokens: list[int], p: float, draft_ms: float = 0.0, seed: int = 0, vocab_size: int = 0):
        self.plain = list(plain_tokens)
        self.p = float(p)
        self.draft_ms = float(draft_ms)
        self.vocab = int(vocab_size) or (max(self.plain, default=0) + 2)
        self.rng = np.random.default_rng(seed)
        self.pos = 0

    def begin(self, prompt, first_token, hidden=None):
        self.pos = 1  # the first token came from the prefill

    def draft(self, last_token, k, lazy=False):
        t0 = time.perf_counter()
        out = []
        for i in range(k):
            j = self.pos + i
            true = self.plain[j] if j < len(self.plain) else last_token
            if self.rng.random() >= self.p:
                true = (true + 1 + int(self.rng.integers(self.vocab - 1))) % self.vocab
            out.append(int(true))
        while ms_since(t0) < self.draft_ms:
            pass  # a busy wait, like a drafter that keeps the machine busy
        return Draft(out)

    def update(self, accepted, draft, emitted, hidden=None):
        self.pos += len(emitted)

    def describe(self):
        return {**super().describe(), "p": self.p, "draft_ms": self.draft_ms, "label": "oracle what-if"}
