"""``specscope trace``, measured: ``trace_data(cfg)`` reopens what a saved session measured (its model and its own
drafter, ``session_models.reopen_params``) and records the acceptance trace A(s) of every complete case
(``engine_adapter.measure.acceptance_trace``), each as a ``trace`` event, in the worker (``measurement``).
``trace_plan`` is what can be refused before a worker starts."""

from __future__ import annotations

from dataclasses import dataclass

from specscope.errors import SpecscopeError

from specscope.profiler.run.session_models import reopen_params, session_drafter
from specscope.profiler.run.tool_configs import TraceConfig
from specscope.profiler.session.records import Case


@dataclass
class TracePlan:
    drafter: str
    k: int            # the session's own k
    k_max: int
    cases: list[Case]  # the complete cases with a plain output to trace
    tree_budget: int = 0  # a tree run's budget (``--tree-budget``): its trace holds the tree's candidates too


def trace_plan(session, cfg: TraceConfig) -> TracePlan:
    """What ``trace`` will record for ``session``, or a clear refusal (no engine is opened)."""
    cfg.validate()
    drafter = session_drafter(session.config)
    if not drafter:
        raise SpecscopeError("the session does not say which drafter it ran")
    if drafter == "oracle":
        raise SpecscopeError("the oracle what-if has no acceptance trace: its draws are i.i.d., so E(k) = 1 + Σ p^i")
    k = int(session.config.get("num_draft_tokens") or 2)
    cases = [c for c in session.cases if c.get("complete") and len(c["plain"]["tokens"]) >= 2 and c.get("prompt_tokens")]
    if not cases:
        raise SpecscopeError("the session has no complete case with a plain output to trace")
    return TracePlan(drafter, k, max(4, k) if cfg.k_max is None else cfg.k_max, cases,
                     int(session.config.get("tree_budget") or 0))


def trace_data(cfg: TraceConfig, say=lambda m, *a, **k: None, partial=None) -> None:
    """Each case's trace goes to ``partial({"case", "trace"})`` as it is recorded; nothing is returned."""
    from specscope.engine_adapter.engine import Engine
    from specscope.engine_adapter.measure.acceptance_trace import TREE_B, record_trace

    from specscope.profiler.session.schema import SessionError
    from specscope.profiler.session.session import Session

    try:
        session = Session.load(cfg.session)
    except (SessionError, OSError) as exc:
        raise SpecscopeError(str(exc)) from None
    plan = trace_plan(session, cfg)
    assert partial is not None  # the worker gives every measurement its own
    params = reopen_params(session.data, model=cfg.model, draft_model=cfg.draft_model, mtp_weights=cfg.mtp_weights,
                           say=lambda m: say(m, notice=True))  # a demo rebuilt: said even without a progress bar
    eng = Engine.open(params, status=say)
    for c in plan.cases:
        say(f"tracing {c['id']} ({len(c['plain']['tokens'])} tokens)")
        d = eng.make_drafter(c["plain"]["tokens"])
        tr = record_trace(eng.target.model, c["prompt_tokens"], c["plain"]["tokens"], d, plan.k_max,
                          sampling=eng.sampling, draws=cfg.draws, name=plan.drafter, target_forward=d.needs_hidden,
                          tree_b=max(TREE_B, plan.tree_budget) if plan.tree_budget > 0 else 0, tree_depth=plan.k)
        partial({"case": c["id"], "trace": tr})

