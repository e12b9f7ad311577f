"""A session file: the Session's data with the figures derived from it written beside (for readers that do not
recompute them; on load they are dropped and recomputed).

The Session is data and never computes its own figures; this module, above both, joins them.
"""

from __future__ import annotations

import os

from specscope.profiler.session.session import Session
from specscope.profiler.analysis.records import SessionFigures, SessionFile
from specscope.profiler.analysis.summary import session_case_stats, summarize
from specscope.profiler.analysis.sweep import sweep_figures


def figures(session: Session, live=None) -> SessionFigures:
    """The derived numbers written with the session; ``live`` (a ``summary.LiveSummary`` of this session) gives
    them without a recomputation (it equals one)."""
    out: SessionFigures
    if live is None:
        out = {"summary": summarize(session),
               "case_stats": {c["id"]: session_case_stats(session, c) for c in session.cases}}
    else:
        out = {"summary": live.summary(), "case_stats": {c["id"]: live.case_stats(c) for c in session.cases}}
    if session.data.get("sweep"):
        out["sweep_figures"] = sweep_figures(session)
    return out


def session_dict(session: Session) -> SessionFile:
    """The file's content as a dict: the data (a copy) and its figures."""
    return {**session.to_dict(), **figures(session)}


def session_json(session: Session, live=None, compact: bool = False) -> str:
    return session.to_json(figures(session, live), compact=compact)


def save_session(session: Session, path: str | os.PathLike, live=None, compact: bool = False) -> None:
    """Write the session file atomically (the data and its figures)."""
    session.save(path, figures(session, live), compact=compact)
