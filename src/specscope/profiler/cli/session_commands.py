"""Commands over saved sessions: ``report`` (render one) and ``compare`` (two side by side)."""

from __future__ import annotations

import sys
from pathlib import Path

from specscope.errors import SpecscopeError

from specscope.profiler.cli.common import check_output_path


def cmd_report(a) -> int:
    from specscope.profiler.renderers import render_to_file, side_tables
    from specscope.profiler.session.schema import SessionError
    from specscope.profiler.session.session import Session

    out = check_output_path(a.output, a.force)
    try:
        s = Session.load(a.session)
    except SessionError as exc:
        raise SpecscopeError(str(exc)) from None
    for warning in render_to_file(s, out):
        print(f"specscope: warning: {warning}", file=sys.stderr)
    print(f"wrote {out}")
    for side in side_tables(s, out):
        print(f"wrote {side}")
    return 0


def cmd_compare(a) -> int:
    from specscope.profiler.renderers.compare_html import compare_to_file
    from specscope.profiler.session.schema import SessionError
    from specscope.profiler.session.session import Session

    out = check_output_path(a.output, a.force)
    try:
        sa, sb = Session.load(a.a), Session.load(a.b)
    except SessionError as exc:
        raise SpecscopeError(str(exc)) from None
    result = compare_to_file(sa, sb, out, names=(Path(a.a).stem, Path(a.b).stem), timings_only=a.timings_only)
    print(f"wrote {out}")
    print(result["headline"])
    if why := result.get("why"):
        print(f"why: {why['answer']}")
    return 0
