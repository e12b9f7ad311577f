"""The report's "By content" section: each content class its own summary (``analysis.by_content``), with the speedup
that class would get; ``specscope content`` puts several drafters' sessions side by side the same way."""

from __future__ import annotations

from specscope.profiler.analysis.by_content import content_table
from specscope.profiler.renderers.content import HEAD, cells
from specscope.profiler.renderers.html_common import esc
from specscope.profiler.renderers.html_common import table as _table


def by_content_section(session) -> str:
    classes = {c.get("content_class") for c in session.cases}
    if len(classes) < 2 or session.data.get("sweep"):
        return ""
    t = content_table([session], ["this run"])
    rows = [[esc(c) for c in cells(r)[:1] + cells(r)[2:]] for r in t["rows"]]
    differ = t["drafters"][0]["differ"]
    verdict = (f"Classes differ: {', '.join(f'{a} vs {b}' for a, b in differ)} (tokens-per-round intervals apart)."
               if differ else "No two classes differ: their tokens-per-round intervals overlap.")
    return ("<h2>By content</h2><p>Each content class is its own summary: its cases alone give its acceptance, "
            "tokens per round, the round model at that E with that class's components (the speedup the class would "
            f"get) and its measured speedup. {esc(verdict)}</p>"
            + _table([HEAD[0]] + HEAD[2:], rows, numeric_from=1, numeric_to=len(HEAD) - 2)
            + '<p class="muted">To put drafters side by side per class: <code>specscope content A.json B.json … '
            "-o by-content.html</code> (one session per drafter, one target and sampling regime).</p>")
