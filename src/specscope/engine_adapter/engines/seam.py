"""The engine seam: how another engine's speculative loop reports what specscope needs.

An engine is a class registered under the entry-point group ``specscope.engines`` (a package's ``pyproject.toml``:
``[project.entry-points."specscope.engines"] my-engine = "my_package.module:MyEngine"``), or built in (``registry``).
specscope loads the target (and the draft model, when the run names one) with its own loader and hands the loaded
models to the engine; the engine decodes and yields the same plain records specscope's own generators yield
(``engine_adapter.decode.records``, defined once in ``specscope.events``):

- one ``PrefillRecord(event="prefill", n_prompt, token, ms)``: the prompt forward and the first token;
- one ``RoundRecord(event="round", …)`` per cycle: ``drafted`` (the tokens proposed; a rejected draft the engine does not expose is
  ``UNKNOWN_TOKEN``), ``accepted`` (how many drafts were kept), ``emitted`` (the tokens the cycle added: the accepted
  drafts and the target's own token), ``ms`` (the cycle's wall time, to the sync), and ``draft_ms``, ``verify_ms``,
  ``rollback_ms`` where the engine times them — ``None`` where it does not, which every surface shows as "not
  reported by this engine", never as a guess. ``kind`` is "end_to_end" for an uninstrumented cycle; ``extra`` is
  free (``{}`` will do).

The speed is the engine's own (its cycles' wall time, as it runs them); the plain baseline, the divergence auditor
(greedy parity with plain decoding from the same weights, position and logit margin at the first difference) and the
components timed apart are specscope's, on the same loaded weights. What the engine reports is declared in
``reports`` and recorded in the session.
"""

from __future__ import annotations

from types import UnionType
from typing import Any, Iterator, Literal, TypedDict, Union, get_args, get_origin, get_type_hints

from specscope.engine_adapter.decode.records import PrefillRecord, RoundRecord
from specscope.errors import SpecscopeError

UNKNOWN_TOKEN = -1  # a drafted token the engine does not expose (a rejected draft)
TIMINGS = ("ms", "draft_ms", "verify_ms", "rollback_ms")


class EngineDescription(TypedDict):
    """What an engine says of itself (``SpeculativeEngine.describe``): the timings it reports and those it does not."""
    name: str
    version: str
    reports: list[str]
    not_reported: list[str]


class SpeculativeEngine:
    """The seam. Subclass it (or match it), register it, and ``specscope run --engine NAME`` profiles it."""

    name = "engine"
    version = ""                       # the engine's own version, for the session
    reports: frozenset[str] = frozenset({"ms"})  # the timings it gives (TIMINGS); the rest are "not reported"
    needs_draft_model = True           # it drafts with the run's --draft-model
    greedy_only = False                # it cannot sample at temperature > 0
    demo_kind: str | None = None       # ``--demo``: the demo target it runs ("dense": the dense demo with the demo's
                                       # draft model), None: the usual (hybrid) demo

    def __init__(self, target, draft, params) -> None:
        """``target``, ``draft``: specscope's loaded models (``model.loader``; ``.model`` is the mlx-lm module);
        ``params``: the run's ``EngineParams`` (k, sampling, seed)."""
        self.target, self.draft, self.params = target, draft, params

    def speculative(self, prompt: list[int], max_tokens: int, sampling) -> Iterator[PrefillRecord | RoundRecord]:
        """Decode ``max_tokens`` tokens after ``prompt`` (the first from the prefill) with ``params.num_draft_tokens``
        drafts a cycle; ``sampling`` is the run's (``decode.sampling.Sampling``: temp, top_p, seed)."""
        raise NotImplementedError

    def forward_model(self) -> Any:
        """The MLX module the loop forwards as its target (the opened pass, ``engines.opened``, times its blocks while
        the loop runs), or a sentence: why it cannot be instrumented (its own copy of the model behind a process
        boundary, classes it patches, forwards that bypass the module's call)."""
        return f"engine {self.name} does not say which model object its loop forwards (SpeculativeEngine.forward_model)"

    def block_sites(self) -> list[tuple[Any, str]]:
        """Where the loop's forwards reach a block without calling it: ``(object, method name)`` pairs whose method
        takes a block module as its first argument (an engine's own fused forward that reads a block's weights);
        the opened pass times the block there too, while it runs. None by default."""
        return []

    def describe(self) -> EngineDescription:
        return {"name": self.name, "version": self.version, "reports": sorted(self.reports),
                "not_reported": sorted(set(TIMINGS) - set(self.reports))}


_RECORDS: dict[str, type] = {"prefill": PrefillRecord, "round": RoundRecord}


def _fits(value: Any, tp: Any) -> bool:
    """Whether ``value`` (from JSON-like Python) has the record field's type: the forms the records use (int, float,
    str, None, Literal, unions, ``list[...]``, ``dict[str, ...]``, Any)."""
    origin = get_origin(tp)
    if tp is Any:
        return True
    if tp is None or tp is type(None):
        return value is None
    if origin is Literal:
        return value in get_args(tp)
    if origin in (Union, UnionType):
        return any(_fits(value, a) for a in get_args(tp))
    if origin is list:
        (item,) = get_args(tp) or (Any,)
        return isinstance(value, list) and all(_fits(v, item) for v in value)
    if origin is dict:
        return isinstance(value, dict)
    if tp is float:  # an int is a float's value (JSON says 3 for 3.0); a bool is neither
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, tp)


def check_record(rec: Any, name: str) -> None:
    """An engine's record as the seam reads it: a prefill or a round with every field of its record
    (``specscope.events``) and each of the field's type; anything else is a clear error naming the engine and the
    field (the worker reports it as an ``error`` event), never a record dropped or a traceback later."""
    if not isinstance(rec, dict):
        raise SpecscopeError(f"engine {name} yielded a {type(rec).__name__}, not a record (a dict with \"event\": "
                             "\"prefill\" or \"round\")")
    kind = rec.get("event")
    record = _RECORDS.get(kind) if isinstance(kind, str) else None
    if record is None:
        raise SpecscopeError(f"engine {name} yielded a record whose event is {kind!r}: the seam takes \"prefill\" and "
                             "\"round\" (engine_adapter.engines.seam)")
    for field, tp in get_type_hints(record).items():
        if field not in rec and field in getattr(record, "__optional_keys__", ()):  # NotRequired (a tree round's shape): may be absent
            continue
        if field not in rec:
            raise SpecscopeError(f"engine {name}: its {kind} record has no field {field!r} ({record.__name__} in "
                                 "specscope.events)")
        if not _fits(rec[field], tp):
            raise SpecscopeError(f"engine {name}: its {kind} record's field {field!r} is {rec[field]!r} "
                                 f"({type(rec[field]).__name__}), not {_type_name(tp)}")


def _type_name(tp: Any) -> str:
    return tp.__name__ if isinstance(tp, type) and not get_args(tp) else str(tp).replace("typing.", "")


def checked(records: Iterator, name: str) -> Iterator[PrefillRecord | RoundRecord]:
    """``records`` (an engine's loop), each checked as the seam reads it (``check_record``)."""
    for rec in records:
        check_record(rec, name)
        yield rec


def watched(records: Iterator, timeout_s: float, name: str) -> Iterator:
    """``records`` (an engine's loop) with a watchdog: when the next record takes longer than ``timeout_s``, the process
    says so on stderr and ends at once (exit code 3) — another engine's loop may hang inside native code, where no
    exception can reach it. The run's parent keeps every event already received and marks the session incomplete
    with this message (``profiler.run.pump``)."""
    import os
    import sys
    import threading

    def expire() -> None:
        sys.stderr.write(f"specscope: engine {name} produced nothing for {timeout_s:g} s: stopped (a hang, or "
                         "--engine-timeout too short for this model)\n")
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(3)

    it = iter(records)
    while True:
        timer = threading.Timer(timeout_s, expire)
        timer.daemon = True
        timer.start()
        try:
            rec = next(it)
        except StopIteration:
            return
        finally:
            timer.cancel()
        yield rec
