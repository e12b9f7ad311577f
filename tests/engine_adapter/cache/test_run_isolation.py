"""Two runs in one process never see each other's state.

The recorders that hooks on mlx-lm's classes read (the verify's capture, the hidden-state tap, the routers' record)
are the one piece of module state, in ``cache/active.py``: per thread, reset on exit. The stored long contexts are
held by their model object (``context.contexts_of``), not by the process. Real tiny demo models throughout.

Threads here take turns (events), so no two run MLX at the same moment: what is tested is that both recorders are
open at once, each receiving only its own thread's forwards.
"""

from __future__ import annotations

import ast
import gc
import threading
import weakref
from pathlib import Path

import mlx.core as mx
import pytest
from mlx_lm.models.cache import make_prompt_cache

from specscope.engine_adapter.cache import active, context
from specscope.engine_adapter.cache.capture import capturing, install_capture, linear_attention_modules
from specscope.engine_adapter.cache.hidden import install_tap, tapping
from specscope.engine_adapter.engine import Engine, EngineParams
from specscope.engine_adapter.measure.verify_curve import recording_routes
from specscope.engine_adapter.model.loader import load_model
from specscope.profiler.run.context import context_tokens


def _forward(model, n: int) -> None:
    """A forward over ``n`` positions into a fresh cache (graph built, nothing evaluated: hooks record at the call)."""
    model(mx.array([list(range(3, 3 + n))], dtype=mx.uint32), cache=make_prompt_cache(model))


def _at_once(open_here, forward_here, open_there, forward_there, read=lambda rec: rec):
    """A thread opens its recorder and records; then this thread records while the thread's is still open; then
    each reads its own recorder (``read``, in its own thread: MLX streams are per thread) and closes it.
    (what this thread read, what the thread read)"""
    recorded, done = threading.Event(), threading.Event()
    box: dict = {}

    def there():
        try:
            with open_there() as rec:
                forward_there()
                recorded.set()
                done.wait(120)
                box["read"] = read(rec)
        except BaseException as e:  # noqa: BLE001 - handed to the test's thread
            box["error"] = e
            recorded.set()

    t = threading.Thread(target=there)
    with open_here() as mine:
        t.start()
        assert recorded.wait(120)
        forward_here()
        done.set()
        t.join(120)
        here = read(mine)
    if "error" in box:
        raise box["error"]
    return here, box["read"]


def test_two_threads_capturing_at_once_each_keep_only_their_own_verify(hybrid):
    model = hybrid.model
    install_capture(model)
    layers = len(linear_attention_modules(model))
    mine, theirs = _at_once(capturing, lambda: _forward(model, 2), capturing, lambda: _forward(model, 3))
    assert [args[0].shape[1] for args, _ in mine.recurrences] == [2] * layers
    assert [args[0].shape[1] for args, _ in theirs.recurrences] == [3] * layers
    assert len(mine.order) == len(theirs.order) == layers
    assert active.CAPTURE.get() is None


def test_two_threads_tapping_at_once_each_keep_only_their_own_hidden_states(hybrid):
    model = hybrid.model
    install_tap(model)
    mine, theirs = _at_once(tapping, lambda: _forward(model, 2), tapping, lambda: _forward(model, 5))
    assert [h.shape[0] for h in mine.post] == [2]
    assert [h.shape[0] for h in theirs.post] == [5]
    assert active.TAP.get() is None


def test_two_threads_recording_routes_at_once_each_keep_only_their_own_calls(hybrid, model_dirs):
    """Two runs, two model objects (each run loads its own), one recording in each thread."""
    other = load_model(model_dirs["hybrid"]).model
    here, there = _at_once(lambda: recording_routes(hybrid.model), lambda: _forward(hybrid.model, 1),
                           lambda: recording_routes(other), lambda: _forward(other, 1), read=lambda distinct: distinct())
    assert len(here) == len(there) == 8  # every MoE layer of the demo, once each: its own forward only
    assert all(calls == [4] for calls in here.values()) and all(calls == [4] for calls in there.values())


def test_a_record_opened_inside_another_takes_the_inner_forwards_and_hands_back(hybrid):
    """Nested in one thread: the inner recorder gets the forwards inside it, once each, the outer the rest.
    (Capture and tap: the old module globals were already safe here, kept as a guard. Routes: the old code wrapped
    an expert bank twice when nested, so each of the inner forward's calls was recorded twice.)"""
    model = hybrid.model
    install_capture(model)
    install_tap(model)
    with capturing() as outer_cap, tapping() as outer_tap, recording_routes(model) as outer_routes:
        with capturing() as inner_cap, tapping() as inner_tap, recording_routes(model) as inner_routes:
            _forward(model, 2)
        _forward(model, 3)
        inner, outer = inner_routes(), outer_routes()
    assert {args[0].shape[1] for args, _ in inner_cap.recurrences} == {2}
    assert {args[0].shape[1] for args, _ in outer_cap.recurrences} == {3}
    assert [h.shape[0] for h in inner_tap.post] == [2] and [h.shape[0] for h in outer_tap.post] == [3]
    assert len(inner) == len(outer) == 8
    assert all(len(calls) == 1 for calls in inner.values()) and all(len(calls) == 1 for calls in outer.values())
    with recording_routes(model) as again:
        _forward(model, 1)
    assert all(calls == [4] for calls in again().values())  # the banks' own classes were given back: once per call


def test_a_recorder_left_by_an_exception_is_not_the_next_runs(hybrid):
    """A failed run's ``with`` block closes its recorders; the next run's forwards go to no one's but its own.
    (The old globals were restored in a ``finally`` too: a guard.)"""
    model = hybrid.model
    install_capture(model)
    install_tap(model)
    with pytest.raises(RuntimeError):
        with capturing() as cap, tapping() as tap:
            raise RuntimeError("the run failed")
    assert active.CAPTURE.get() is None and active.TAP.get() is None
    _forward(model, 3)
    assert cap.recurrences == [] and tap.post == []
    with capturing() as fresh:
        _forward(model, 2)
    assert fresh is not cap and {args[0].shape[1] for args, _ in fresh.recurrences} == {2}


# -- the stored long contexts ----------------------------------------------------------------------------------------

def test_one_run_forgetting_its_contexts_leaves_another_runs_stored_context():
    """Two runs open at once (nested): the first one's end (``forget_contexts``) took the second one's stored
    context too in the old process-wide store, whose next prefill then redid the whole context."""
    a = Engine.open(EngineParams(demo=True, drafter="ngram", num_draft_tokens=2))
    b = Engine.open(EngineParams(demo=True, drafter="ngram", num_draft_tokens=2))
    ctx = context_tokens(a.encode, 48, "code")
    prompt = ctx + a.encode("import os")
    a.prepare_context(ctx)
    first = b.prepare_context(ctx)
    assert not first["reused"]  # b's model is not a's: a's stored context is not served to b
    a.forget_contexts()
    assert context.find(a.target.model, prompt) is None
    assert context.find(b.target.model, prompt) is not None
    assert b.prepare_context(ctx)["reused"]
    b.forget_contexts()
    assert context.find(b.target.model, prompt) is None


def test_a_run_with_another_drafter_prefills_its_own_context():
    """One run (MTP) stores a context; the next (a draft model) in the same process gets nothing of it: its own
    prefill, its own drafter's. (Already so in the old store, keyed by model object: a guard.)"""
    a = Engine.open(EngineParams(demo=True, drafter="mtp", num_draft_tokens=2))
    ctx = context_tokens(a.encode, 48, "mixed")
    a.prepare_context(ctx)
    b = Engine.open(EngineParams(demo=True, drafter="draft", num_draft_tokens=2))
    facts = b.prepare_context(ctx)
    assert not facts["reused"] and facts["draft_prefill_ms"] is not None
    assert context.lookup(b.target.model, ctx).extra["facts"] is facts
    assert context.lookup(a.target.model, ctx).extra["facts"]["draft_prefill_ms"] is not None  # a's own, untouched


def test_a_run_that_never_forgot_its_contexts_leaves_nothing_alive_behind():
    """A run that ended by an exception before ``forget_contexts`` (or tune's, which stores and never forgets): its
    model and stored caches go when the run lets go of its engine. The old store kept every model that had an entry
    (and its caches) alive for the rest of the process."""
    e = Engine.open(EngineParams(demo=True, drafter="ngram", num_draft_tokens=2))
    ctx = context_tokens(e.encode, 32, "code")
    e.prepare_context(ctx)
    gone = weakref.ref(e.target.model)
    del e
    gc.collect()
    assert gone() is None


def test_the_engine_sets_no_module_global_and_keeps_its_recorders_in_one_module():
    """No ``global`` statement anywhere in the engine, and ``cache/active.py`` is the only module that makes a
    ContextVar: new state between calls goes on an object that is passed, or into that one documented module.
    (The old capture, hidden and verify_curve modules each rebound a global.)"""
    root = Path(context.__file__).resolve().parents[1]  # src/specscope/engine_adapter
    rebinding, makers = [], []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = str(path.relative_to(root))
        rebinding += [f"{where}:{n.lineno}" for n in ast.walk(tree) if isinstance(n, ast.Global)]
        makers += [where for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "ContextVar"]
    assert rebinding == []
    assert set(makers) == {str(Path("cache") / "active.py")}
