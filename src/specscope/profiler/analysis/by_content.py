"""The seed's content table: several sessions (one drafter each, the same target and suite) side by side per content
class — acceptance and tokens per round with their intervals, and the speedup each class would get.

Each class's figures are that class's own summary: the session with only its cases, through ``summarize``, so the
round model, the intervals and the verdict are the ones every other surface uses (one model): the prediction at the
class's E and the class's components, not the run's E rescaled. Acceptance is comparable only within one sampling
regime and one target, so sessions that differ in either are refused.
"""

from __future__ import annotations

from itertools import combinations
from typing import Sequence

from specscope.errors import SpecscopeError

from specscope.profiler.analysis.records import ContentDrafter, ContentRow, ContentTable
from specscope.profiler.analysis.summary import summarize
from specscope.profiler.session.records import drafter_label
from specscope.profiler.session.session import Session

NOTES = [
    "Each class is its own summary: the session's cases of that class alone (acceptance, the round model with that "
    "class's E and components, the measured speedup, their 95% intervals, the verdict).",
    "Two classes of one drafter differ when their tokens-per-round intervals do not overlap.",
]


def class_session(session: Session, content_class: str) -> Session:
    """The session with only the cases of one content class (a shallow copy: the cases are shared, not changed)."""
    return Session({**session.data, "cases": [c for c in session.cases if c.get("content_class") == content_class]})


def _apart(a: list[float] | None, b: list[float] | None) -> bool:
    return bool(a and b) and (a[1] < b[0] or b[1] < a[0])  # type: ignore[index]


def content_table(sessions: Sequence[Session], names: Sequence[str]) -> ContentTable:
    """``sessions`` (one per drafter), named ``names``, side by side per content class."""
    if not sessions:
        raise SpecscopeError("by content needs at least one session")
    _check_comparable(sessions, names)
    classes = sorted({c.get("content_class") or "?" for s in sessions for c in s.cases})
    rows: list[ContentRow] = []
    drafters: list[ContentDrafter] = []
    for session, name in zip(sessions, names):
        label = drafter_label(session.config)
        mine: dict[str, ContentRow] = {}
        for cls in classes:
            sub = class_session(session, cls)
            if not sub.cases:
                continue
            s = summarize(sub)
            mine[cls] = {
                "drafter": name, "drafter_label": label, "content_class": cls, "k": s["k"],
                "cases": s["cases_measured"], "drafted": s["drafted"], "p": s["p"], "p_ci95": s.get("p_ci95"),
                "tokens_per_round": s["tokens_per_round"], "tokens_per_round_ci95": s.get("tokens_per_round_ci95"),
                "predicted_speedup": s["predicted_speedup"], "division_speedup": s.get("division_speedup"),
                "measured_speedup": s["measured_speedup"], "measured_speedup_ci95": s.get("measured_speedup_ci95"),
                "verdict": s["prediction_verdict"]["state"],
            }
        rows += mine.values()
        differ = [[a, b] for a, b in combinations(sorted(mine), 2)
                  if _apart(mine[a]["tokens_per_round_ci95"], mine[b]["tokens_per_round_ci95"])]
        drafters.append({"drafter": name, "drafter_label": label, "differ": differ, "regime": session.regime})
    model = (sessions[0].data.get("model") or {}).get("name")
    return {"model": model, "regime": sessions[0].regime, "classes": classes, "drafters": drafters, "rows": rows,
            "notes": list(NOTES)}


def _check_comparable(sessions: Sequence[Session], names: Sequence[str]) -> None:
    """One target, one sampling regime, sessions with cases and no sweep; refused with the reason otherwise."""
    first = sessions[0]
    for s, name in zip(sessions, names):
        if s.data.get("sweep") or not s.cases:
            raise SpecscopeError(f"{name}: by content reads a run's cases; this session has "
                                 f"{'a context sweep' if s.data.get('sweep') else 'no cases'}")
        if s.regime != first.regime:
            raise SpecscopeError(f"{name} was measured {s.regime}, {names[0]} {first.regime}: acceptance is comparable "
                                 "only within one sampling regime")
        target = (s.data.get("model") or {}).get("name")
        if target != (first.data.get("model") or {}).get("name"):
            raise SpecscopeError(f"{name} profiles {target}, {names[0]} {(first.data.get('model') or {}).get('name')}: "
                                 "the drafters must draft for one target")
