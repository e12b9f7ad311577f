"""JSON: the session itself, schema-versioned.

``Session.from_dict(json.loads(render(s))) == s``: the file carries the raw
measurements plus the derived ``summary`` and ``case_stats`` (for readers that
do not run specscope); loading recomputes the derived numbers from the raw ones.
"""

from __future__ import annotations

from specscope.profiler.analysis.session_file import session_json


def render(session) -> str:
    return session_json(session) + "\n"
