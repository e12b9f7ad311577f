"""Long context: a context prefilled once, its caches kept, and every later prefill that starts with it started
from a copy.

A run with ``--context N`` puts N tokens of a long document before each case's prompt. Prefilling N tokens costs
far more than decoding a case (the random demo prefills about 40 tokens/s on a 2-core CPU), so the context is
prefilled once per model (the target, a draft model, the MTP head's own KV cache) and *stored*: frozen references
to each cache's arrays and offsets (``freeze``). Any later ``decoding.prefill`` of a fresh cache whose tokens start
with a stored context (a case's plain run, its speculative run, the breakdown, the components, the divergence
check, the acceptance trace, the verify curve) first restores that copy (``thaw``) and prefills only the rest. The
copy is exact: a full-attention KV cache gets the stored keys and values (positions past the offset are never
read; the first write after a restore copies the buffer, never the stored one), a Gated DeltaNet ``ArraysCache``
its conv window and recurrent state (replaced, never written in place). So the context prefill is timed once, on
its own, and never enters a prefill, decode, verify or draft figure of a case.

Several contexts may be stored at once (a sweep revisits its points); a prefill takes the longest one that is a
proper prefix of its tokens. The stored contexts are the model's own (``contexts_of``: a ``ContextStore`` held by
the model object, which every prefill is handed already), not the process's: a run sees only the contexts of the
models it loaded, forgetting them (``clear(model)``) leaves every other model's alone, and they go with the model.
A drafter's own caches over the target's positions (an MTP head's) are kept in the target's store under their
own name (``Part``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Hashable, Sequence, TypedDict

import mlx.core as mx
from mlx_lm.models.cache import ArraysCache, CacheList, ChunkedKVCache, KVCache, RotatingKVCache

from specscope.errors import SpecscopeError
from specscope.engine_adapter.clock import ms_since

PREFILL_STEP = 2048


class ContextPrefill(TypedDict):
    """A context prefilled once into a model's cache (``prefill_context``): its time to the sync, its tokens, the
    stored cache's bytes, and the trunk's hidden states when asked for (else None)."""
    ms: float
    tokens: int
    bytes: int
    hidden: dict[str, Any] | None   # {"post-norm", "pre-norm"} arrays, and "layers": {index: outputs} when tapped


def _frozen(a):
    return None if a is None else mx.stop_gradient(a)


def freeze(cache: Sequence) -> list:
    """Frozen copies of a cache list's contents (references later in-place writes cannot change)."""
    out: list[tuple[Any, ...]] = []
    for c in cache:
        if isinstance(c, (RotatingKVCache, ChunkedKVCache)):
            out.append(("rotating", _frozen(c.keys), _frozen(c.values), c.offset, getattr(c, "_idx", None),
                        getattr(c, "start_position", None)))
        elif isinstance(c, KVCache):
            out.append(("kv", _frozen(c.keys), _frozen(c.values), c.offset))
        elif isinstance(c, ArraysCache):
            out.append(("arrays", list(c.cache)))
        elif isinstance(c, CacheList):
            out.append(("list", freeze(c.caches)))
        else:
            raise SpecscopeError(f"cannot keep a long context in a {type(c).__name__} cache")
    return out


def thaw(cache: Sequence, saved: list) -> None:
    """Put ``saved`` (from ``freeze``) into ``cache`` (fresh caches of the same kinds)."""
    for c, s in zip(cache, saved):
        kind = s[0]
        if kind == "kv":  # new references each time: the cache's in-place writes replace these, never the stored ones
            c.keys, c.values, c.offset = _frozen(s[1]), _frozen(s[2]), s[3]
        elif kind == "rotating":
            c.keys, c.values, c.offset = _frozen(s[1]), _frozen(s[2]), s[3]
            if s[4] is not None:
                c._idx = s[4]
            if s[5] is not None:
                c.start_position = s[5]
        elif kind == "arrays":
            c.cache = list(s[1])
        else:
            thaw(c.caches, s[1])


def is_fresh(cache: Sequence) -> bool:
    for c in cache:
        if isinstance(c, CacheList):
            if not is_fresh(c.caches):
                return False
        elif isinstance(c, ArraysCache):
            if any(x is not None for x in c.cache):
                return False
        elif getattr(c, "offset", 0):
            return False
    return True


def _arrays(x):
    if isinstance(x, mx.array):
        yield x
    elif isinstance(x, (list, tuple)):
        for y in x:
            yield from _arrays(y)


def nbytes(saved) -> int:
    """Bytes held by a frozen cache (each array once)."""
    seen, total = set(), 0

    def walk(x):
        nonlocal total
        if isinstance(x, mx.array):
            if id(x) not in seen:
                seen.add(id(x))
                total += x.nbytes
        elif isinstance(x, (list, tuple)):
            for y in x:
                walk(y)

    walk(saved)
    return total


@dataclass
class Stored:
    tokens: list[int]
    saved: list
    extra: dict = field(default_factory=dict)


class ContextStore:
    """The long contexts stored for one model: per part ("": the model's own caches; a ``Part``'s name: a drafter's
    caches over the model's positions), the entries in the order they were stored."""

    def __init__(self) -> None:
        self._entries: dict[Hashable, list[Stored]] = {}

    def entries(self, part: Hashable = "") -> list[Stored]:
        return list(self._entries.get(part, []))

    def put(self, entry: Stored, part: Hashable = "") -> None:
        """Keep ``entry``, in place of an entry with the same tokens."""
        self._entries[part] = [e for e in self._entries.get(part, []) if e.tokens != entry.tokens] + [entry]

    def discard(self, entry: Stored, part: Hashable = "") -> None:
        kept = [e for e in self._entries.get(part, []) if e is not entry]
        if kept:
            self._entries[part] = kept
        else:
            self._entries.pop(part, None)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        """How many entries are stored, all parts together."""
        return sum(len(v) for v in self._entries.values())


_ATTRIBUTE = "specscope_contexts"  # where a model object holds its ContextStore


def contexts_of(model) -> ContextStore:
    """The ``ContextStore`` that ``model`` (the model object itself) holds, made on first use."""
    found = getattr(model, _ATTRIBUTE, None)
    if found is None:
        found = ContextStore()
        setattr(model, _ATTRIBUTE, found)  # a plain attribute: not an array, so never one of the model's parameters
    return found


@dataclass(frozen=True)
class Part:
    """Contexts kept in ``model``'s store under their own ``name`` (an MTP head's: ("mtp", hidden mode, weights))."""
    model: Any = field(compare=False, hash=False)
    name: tuple = ()


def _place(owner) -> tuple[ContextStore, Hashable]:
    """The store and the part an owner (a model, or a ``Part`` of one) keeps its contexts in."""
    if isinstance(owner, Part):
        return contexts_of(owner.model), owner.name
    return contexts_of(owner), ""


def _stored(owner) -> list[Stored]:
    """``owner``'s entries, read without giving a model a store it does not have."""
    model, part = (owner.model, owner.name) if isinstance(owner, Part) else (owner, "")
    found = getattr(model, _ATTRIBUTE, None)
    return found.entries(part) if found is not None else []


def frozen(tokens: list[int], cache: list, **extra) -> Stored:
    """A context kept apart from the store (``restore_entry`` starts a cache from it; no other prefill does)."""
    mx.eval([c.state for c in cache])
    entry = Stored(list(tokens), freeze(cache), extra)
    mx.eval([a for a in _arrays(entry.saved)])
    return entry


def store(owner, tokens: list[int], cache: list, **extra) -> Stored:
    """Keep a frozen copy of ``cache`` over ``tokens`` in ``owner``'s store (a model, or a ``Part`` of one)."""
    entry = frozen(tokens, cache, **extra)
    where, part = _place(owner)
    where.put(entry, part)
    return entry


def find(owner, tokens: list[int]) -> Stored | None:
    """The longest stored context of ``owner`` that is a proper prefix of ``tokens``."""
    best = None
    for e in _stored(owner):
        n = len(e.tokens)
        if n < len(tokens) and (best is None or n > len(best.tokens)) and tokens[:n] == e.tokens:
            best = e
    return best


def lookup(owner, tokens: list[int]) -> Stored | None:
    """The stored context of ``owner`` with exactly these tokens."""
    for e in _stored(owner):
        if e.tokens == tokens:
            return e
    return None


def discard(owner, entry: Stored) -> None:
    """Remove one stored context of ``owner`` (the entry ``store`` returned); the others stay."""
    where, part = _place(owner)
    where.discard(entry, part)


def clear(model) -> None:
    """Forget every context stored for ``model`` (its parts included); other models' stay."""
    found = getattr(model, _ATTRIBUTE, None)
    if found is not None:
        found.clear()


def restore_prefix(owner, cache: list, tokens: list[int]) -> int:
    """Start a fresh ``cache`` from a stored context of ``owner`` that ``tokens`` begins with; how many tokens it
    covers (0: none, prefill everything). An open hidden-state tap (``hidden.tapping``) receives the stored
    context's hidden states first, so a drafter that reads them (MTP) sees every position, as after a full prefill."""
    e = find(owner, tokens)
    return restore_entry(e, cache, tokens) if e is not None else 0


def restore_entry(entry: Stored, cache: list, tokens: list[int]) -> int:
    """Start a fresh ``cache`` from ``entry`` when ``tokens`` extend its tokens (a proper prefix), feeding its hidden
    states to an open tap as ``restore_prefix`` does; how many tokens it covers (0: none)."""
    n = len(entry.tokens)
    if not (n < len(tokens) and list(tokens[:n]) == entry.tokens) or not is_fresh(cache):
        return 0
    thaw(cache, entry.saved)
    if entry.extra.get("hidden"):
        from specscope.engine_adapter.cache.hidden import feed

        feed(entry.extra["hidden"]["pre-norm"], entry.extra["hidden"]["post-norm"], entry.extra["hidden"].get("layers"))
    return n


def prefill(model, cache, tokens: list[int], step: int = PREFILL_STEP, start: Stored | None = None) -> mx.array:
    """``tokens`` into a fresh ``cache``: from ``start`` (an entry kept apart, ``prefill_entry``) or a stored long
    context where one begins them, the rest through the model; the (lazy) logits of the last token."""
    done = restore_entry(start, cache, list(tokens)) if start is not None else 0
    done = done or restore_prefix(model, cache, list(tokens))
    return run_prefill(model, cache, list(tokens)[done:], step)


def run_prefill(model, cache, tokens: list[int], step: int = PREFILL_STEP) -> mx.array:
    """All tokens through the model in chunks; the (lazy) logits of the last one."""
    y = mx.array(tokens, dtype=mx.uint32)
    while y.size > 1:
        n = min(step, y.size - 1)
        model(y[:n][None], cache=cache)
        mx.eval([c.state for c in cache])
        y = y[n:]
    return model(y[None], cache=cache)[0, -1]


def _prefilled(model, tokens: list[int], with_hidden: bool):
    """A fresh cache of ``model`` over ``tokens``, the hidden states asked for, and the time to the sync (ms)."""
    from mlx_lm.models.cache import make_prompt_cache

    from specscope.engine_adapter.cache.hidden import install_tap, tapping

    if not tokens:
        raise ValueError("an empty context")
    if with_hidden:
        install_tap(model)
    cache = make_prompt_cache(model)
    t0 = time.perf_counter()
    with tapping(with_hidden) as tap:
        logits = run_prefill(model, cache, tokens)
        mx.eval(logits, [c.state for c in cache])
        hidden: dict[str, Any] | None = {"post-norm": tap.hidden("post-norm"), "pre-norm": tap.hidden("pre-norm")} if tap else None
        if tap is not None and hidden is not None and tap.layers:  # tapped decoder layers (a DFlash drafter's): kept per layer, fed to later taps too
            hidden["layers"] = {i: tap.hidden((i,)) for i in sorted(tap.layers)}
        if hidden:
            mx.eval(hidden)
    ms = ms_since(t0)
    return cache, hidden, ms


def prefill_context(model, tokens: list[int], with_hidden: bool = False) -> ContextPrefill:
    """Prefill ``tokens`` into a fresh cache of ``model`` once, store it, and time it (ms, to the sync).

    ``with_hidden``: also keep the trunk's hidden states of every context position (for an MTP head's own
    context prefill, ``mtp.MTPDrafter.prefill_context``), returned under "hidden" ({"pre-norm", "post-norm"}, and
    "layers": {index: outputs} for the decoder layers a tap is installed on, a DFlash drafter's target layers)."""
    cache, hidden, ms = _prefilled(model, tokens, with_hidden)
    entry = store(model, tokens, cache, hidden=hidden)  # kept: a later tap sees the context's positions too
    return {"ms": ms, "tokens": len(tokens), "bytes": nbytes(entry.saved), "hidden": hidden}


def prefill_entry(model, tokens: list[int], with_hidden: bool = False) -> Stored:
    """``tokens`` prefilled into a fresh cache of ``model`` and kept apart from the store (``frozen``), with the
    trunk's hidden states when asked for: only a prefill handed this entry (``restore_entry``) starts from it."""
    cache, hidden, _ = _prefilled(model, tokens, with_hidden)
    return frozen(tokens, cache, hidden=hidden)
