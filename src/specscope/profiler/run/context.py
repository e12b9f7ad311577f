"""Long context for a run or a sweep: which tokens, how many, and whether this model and machine can hold them.

``--context N`` puts N tokens of a long document before every case's prompt: the shipped documents
(``assets/context/``: ``code``, ``english``, ``chinese``, each real text with no 64-token passage twice, none of
it in the demo's training corpus; ``mixed``, the default, takes a third of each), or ``--context-file FILE``. A
sweep's smaller contexts are prefixes of its largest. The refusals before the weights load: ``context_check``.
No MLX here.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse
from importlib import resources
from pathlib import Path

from specscope.errors import SpecscopeError

KINDS = ("mixed", "code", "english", "chinese")
MIXED_ORDER = ("english", "code", "chinese")  # a pasted manual, then code, then Chinese notes


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


def add_context_args(ap: "argparse.ArgumentParser", context_help: str) -> None:
    """--context, --context-kind, --context-file: the same choice for run, sweep and roofline."""
    ap.add_argument("--context", default="0", metavar="N", help=context_help)
    ap.add_argument("--context-kind", choices=["mixed", "code", "english", "chinese"], default="mixed",
                    help="which shipped document is the context (mixed: a third each of English, code and Chinese)")
    ap.add_argument("--context-file", metavar="FILE", help="your own text as the context (UTF-8), instead of a shipped one")
