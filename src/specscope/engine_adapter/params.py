"""What the engine is asked to load and how it decodes: plain settings, no MLX.

The one definition of these fields and their defaults: ``engine.Engine.open`` takes them, and the run
configuration (``profiler.run.config.RunConfig``, which the app imports, hence no MLX here) is built on them.
"""

from __future__ import annotations

from dataclasses import dataclass

COMPUTE_DTYPES = ("float32", "float16", "bfloat16")


@dataclass
class EngineParams:
    model: str | None = None
    demo: bool = False
    # which built-in demo ``demo`` loads: "trained" (shipped), "random" (synthetic, built into the cache), or None for
    # the default (SPECSCOPE_DEMO=random, else the trained one)
    demo_variant: str | None = None
    drafter: str = "auto"
    draft_model: str | None = None
    mtp_weights: str | None = None
    mtp_hidden: str = "post-norm"
    oracle_p: float = 0.75
    oracle_draft_ms: float = 0.0
    num_draft_tokens: int = 2
    # a tree of at most this many drafted nodes a round, grown best first from the drafter's per-position
    # distributions and verified in one forward (decode.tree_decoding; DFlash, DFlash2, MTP, draft model), at most
    # ``num_draft_tokens`` deep; 0: a chain of ``num_draft_tokens``
    tree_budget: int = 0
    temp: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    # "paired": each speculative phase runs the case twice, one end-to-end pass (one sync per round, as a production
    # engine runs: the measured speed) and one instrumented pass (draft, verify, rollback timed apart: the ledger),
    # in alternating order, on the same drafts; "alternate": the two kinds round by round in one pass (older
    # sessions); "instrumented" or "end_to_end": one pass of that kind.
    round_kinds: str = "paired"
    allow_oversize: bool = False
    # the arithmetic's dtype: None keeps the checkpoint's; "float32" (or "float16", "bfloat16") casts every floating
    # parameter (norms, embeddings, quantization scales and biases; 4-bit weights stay 4-bit) of the target and the
    # drafter. MLX's CPU backend has no native bfloat16: its bf16 quantized matmuls run about 10x slower than float32
    # (``COMPUTE_DTYPES``; labelled in the session wherever it is set)
    dtype: str | None = None
    # whose speculative loop runs: "specscope" (its own engine) or another engine behind the seam
    # (``engine_adapter.engines``: built in, or registered under the entry-point group "specscope.engines")
    engine: str = "specscope"
    engine_timeout_s: float = 300.0  # another engine that yields nothing for this long is stopped and reported
