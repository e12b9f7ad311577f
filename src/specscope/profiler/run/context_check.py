"""Refusing a long context before any weights load: beyond the model's window (its ``config.json``) or beyond what
this machine's memory can hold for the KV caches, with the numbers. Imported by the protocol only (it may look up
where the demo lives, which the app must not import). No MLX at module level.
"""

from __future__ import annotations

import os
from pathlib import Path

from specscope.engine_adapter.model.config_json import ModelConfig, TextConfig, read_config
from specscope.errors import SpecscopeError
from specscope.profiler.run.records import ContextCheck, MemoryNeeded

PREFILL_CHUNK = 2048  # engine_adapter.cache.context.PREFILL_STEP: the prefill's attention scores are chunk x context
MEMORY_SHARE = 0.8    # refuse what would need more than this share of the machine's memory


def _model_dir(cfg) -> Path | None:
    if cfg.demo:
        try:
            from specscope.engine_adapter.model.demo_model import DEMO_FORMAT_VERSION, specscope_home, trained_demo_path, use_random_demo

            trained = None if use_random_demo() else trained_demo_path("hybrid")
            if trained is not None:
                return Path(trained)
            p = specscope_home() / f"demo-hybrid-v{DEMO_FORMAT_VERSION}"
            return p if p.is_dir() else None
        except Exception:  # pragma: no cover - the demo is built later; the engine checks again
            return None
    try:
        from specscope.model_ref import resolve_model

        return Path(resolve_model(cfg.model).path)
    except Exception:
        return None  # the loader says why, with its own message


def read_model_config(path: Path | None) -> ModelConfig | None:
    return None if path is None else read_config(path)


def kv_bytes_per_token(config: ModelConfig) -> int:
    """Bytes the KV caches add per context token: 2 (K and V) x kv_heads x head_dim x 2 bytes per full-attention
    layer (a Gated DeltaNet layer's state does not grow)."""
    t: TextConfig = config.get("text_config") or config
    layers = int(t.get("num_hidden_layers") or 0)
    interval = t.get("full_attention_interval")
    full = layers // int(interval) if interval else layers
    heads = int(t.get("num_attention_heads") or 1)
    kv = int(t.get("num_key_value_heads") or heads)
    head_dim = int(t.get("head_dim") or (int(t.get("hidden_size") or 0) // heads))
    return 2 * full * kv * head_dim * 2


def _weights_bytes(path: Path | None) -> int:
    if path is None:
        return 0
    return sum(f.stat().st_size for f in path.glob("*.safetensors"))


def machine_memory() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not a POSIX machine
        return 0


def memory_needed(config: ModelConfig, contexts: list[int], weights: int = 0) -> MemoryNeeded:
    """What holding every context of a run needs: the stored caches (each point kept for its revisit), one case's
    copy of the largest, the prefill's attention scores (chunk x context x heads, float32) and the weights."""
    t: TextConfig = config.get("text_config") or config
    per = kv_bytes_per_token(config)
    big = max(contexts or [0])
    heads = int(t.get("num_attention_heads") or 1)
    stored = per * sum(contexts) * 2  # the target's and a drafter's of the same order, kept
    scores = min(PREFILL_CHUNK, big) * big * heads * 4
    total = stored + per * big + scores + weights
    return {"kv_bytes_per_token": per, "stored_bytes": stored, "scores_bytes": scores, "weights_bytes": weights,
            "total_bytes": total}


def precheck(cfg, contexts: list[int], memory: int | None = None) -> ContextCheck:
    """Refuse, before the weights load, a context beyond the model's window or this machine's memory."""
    path = _model_dir(cfg)
    config = read_model_config(path)
    if config is None:
        return {}
    assert path is not None  # the config was read from it
    t: TextConfig = config.get("text_config") or config
    window = int(t.get("max_position_embeddings") or 0)
    need = max(contexts) + cfg.max_tokens + cfg.num_draft_tokens + 1
    if window and need > window:
        raise SpecscopeError(
            f"--context {max(contexts):,} + --max-tokens {cfg.max_tokens} (+ a prompt) needs {need:,}+ positions; "
            f"the model's window is {window:,} tokens (max_position_embeddings in {path / 'config.json'})")
    mem = memory_needed(config, contexts, _weights_bytes(path))
    have = machine_memory() if memory is None else memory
    if have and mem["total_bytes"] > MEMORY_SHARE * have:
        raise SpecscopeError(
            f"--context {', '.join(f'{c:,}' for c in contexts)} needs about {mem['total_bytes'] / 2**30:.1f} GiB "
            f"(KV caches {mem['kv_bytes_per_token']:,} bytes per token, kept for every context: "
            f"{mem['stored_bytes'] / 2**30:.1f} GiB; the prefill's attention scores {mem['scores_bytes'] / 2**30:.1f} GiB; "
            f"weights {mem['weights_bytes'] / 2**30:.1f} GiB); this machine has {have / 2**30:.1f} GiB "
            f"(refused above {MEMORY_SHARE:.0%})")
    return {"window": window, **mem}
