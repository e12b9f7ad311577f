"""Long context for a run or a sweep: which tokens, how many, and whether this model and machine can hold them.

``--context N`` puts N tokens of a long document before every case's prompt: the shipped documents
(``assets/context/``: ``code``, ``english``, ``chinese``, each real text with no 64-token passage twice, none of
it in the demo's training corpus; ``mixed``, the default, takes a third of each), or ``--context-file FILE``. A
sweep's smaller contexts are prefixes of its largest. The checks here run before any weights load: a context
beyond the model's window (read from its ``config.json``) or beyond what this machine's memory can hold for the
KV caches is refused with the numbers. No MLX here.
"""

from __future__ import annotations

import json
import os
import re
from importlib import resources
from pathlib import Path

from specscope.errors import SpecscopeError

KINDS = ("mixed", "code", "english", "chinese")
MIXED_ORDER = ("english", "code", "chinese")  # a pasted manual, then code, then Chinese notes
PREFILL_CHUNK = 2048  # engine_adapter.context.PREFILL_STEP: the prefill's attention scores are chunk x context
MEMORY_SHARE = 0.8    # refuse what would need more than this share of the machine's memory


def parse_size(text) -> int:
    """``4096``, ``4k`` (= 4096), ``1.5k``, ``1m`` (= 1,048,576)."""
    if isinstance(text, int):
        n = text
    else:
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*", str(text))
        if not m:
            raise SpecscopeError(f"not a context size: {text!r} (write tokens, e.g. 4096 or 4k)")
        n = int(round(float(m.group(1)) * {"": 1, "k": 1024, "m": 1024 * 1024}[m.group(2).lower()]))
    if n < 0:
        raise SpecscopeError(f"a context size must be >= 0 (got {n})")
    return n


def parse_contexts(text: str) -> list[int]:
    """A sweep's ``--context 0,1k,4k,16k``: distinct sizes, in the order given."""
    sizes = [parse_size(x) for x in str(text).split(",") if x.strip()]
    if not sizes:
        raise SpecscopeError("--context needs at least one size, e.g. 0,1k,4k,16k")
    if len(set(sizes)) != len(sizes):
        raise SpecscopeError(f"--context lists a size twice: {text}")
    return sizes


def document(kind: str) -> str:
    if kind not in KINDS[1:]:
        raise SpecscopeError(f"unknown context kind {kind!r}; choose one of {', '.join(KINDS)}")
    return (resources.files("specscope.assets") / "context" / f"{kind}.txt").read_text(encoding="utf-8")


def _encode(encode, text: str) -> list[int]:
    """Encoded in pieces at paragraph breaks (tokenizers warn past their declared length; the pieces join at a
    paragraph break, where a byte-level BPE splits anyway)."""
    out, piece = [], []
    size = 0
    for para in text.split("\n\n"):
        piece.append(para)
        size += len(para)
        if size > 3000:
            out += encode("\n\n".join(piece) + "\n\n")
            piece, size = [], 0
    if piece:
        out += encode("\n\n".join(piece))
    return out


def context_tokens(encode, n: int, kind: str = "mixed", file: str | None = None) -> list[int]:
    """The first ``n`` tokens of the context (``encode``: the model's tokenizer)."""
    if n <= 0:
        return []
    if file:
        p = Path(file).expanduser()
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SpecscopeError(f"cannot read --context-file {p}: {getattr(exc, 'strerror', None) or exc}") from None
        toks = _encode(encode, text)
        if len(toks) < n:
            raise SpecscopeError(f"--context-file {p} has {len(toks):,} tokens with this model's tokenizer; "
                                 f"--context asks for {n:,}")
        return toks[:n]
    if kind == "mixed":
        out = []
        for i, part in enumerate(MIXED_ORDER):
            want = n // 3 + (1 if i < n % 3 else 0)
            out += context_tokens(encode, want, part)
        return out
    toks = _encode(encode, document(kind))
    if len(toks) < n:
        raise SpecscopeError(f"the shipped {kind} context has {len(toks):,} tokens with this model's tokenizer; "
                             f"--context asks for {n:,} (pass a longer --context-file)")
    return toks[:n]


# -- refusing before the weights load ------------------------------------------------------------------------------
def _model_dir(cfg) -> Path | None:
    if cfg.demo:
        try:
            from specscope.engine_adapter.demo_model import DEMO_FORMAT_VERSION, specscope_home, trained_demo_path, use_random_demo

            if not use_random_demo() and trained_demo_path("hybrid") is not None:
                return Path(trained_demo_path("hybrid"))
            p = specscope_home() / f"demo-hybrid-v{DEMO_FORMAT_VERSION}"
            return p if p.is_dir() else None
        except Exception:  # pragma: no cover - the demo is built later; the engine checks again
            return None
    try:
        from specscope.model_ref import resolve_model

        return Path(resolve_model(cfg.model).path)
    except Exception:
        return None  # the loader says why, with its own message


def read_model_config(path: Path | None) -> dict | None:
    if path is None:
        return None
    try:
        d = json.loads((path / "config.json").read_text())
    except (OSError, ValueError):
        return None
    return d if isinstance(d, dict) else None


def kv_bytes_per_token(config: dict) -> int:
    """Bytes the KV caches add per context token: 2 (K and V) x kv_heads x head_dim x 2 bytes per full-attention
    layer (a Gated DeltaNet layer's state does not grow)."""
    t = config.get("text_config") or config
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


def memory_needed(config: dict, contexts: list[int], weights: int = 0) -> dict:
    """What holding every context of a run needs: the stored caches (each point kept for its revisit), one case's
    copy of the largest, the prefill's attention scores (chunk x context x heads, float32) and the weights."""
    t = config.get("text_config") or config
    per = kv_bytes_per_token(config)
    big = max(contexts or [0])
    heads = int(t.get("num_attention_heads") or 1)
    stored = per * sum(contexts) * 2  # the target's and a drafter's of the same order, kept
    scores = min(PREFILL_CHUNK, big) * big * heads * 4
    total = stored + per * big + scores + weights
    return {"kv_bytes_per_token": per, "stored_bytes": stored, "scores_bytes": scores, "weights_bytes": weights,
            "total_bytes": total}


def precheck(cfg, contexts: list[int], memory: int | None = None) -> dict:
    """Refuse, before the weights load, a context beyond the model's window or this machine's memory."""
    path = _model_dir(cfg)
    config = read_model_config(path)
    if config is None:
        return {}
    t = config.get("text_config") or config
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
