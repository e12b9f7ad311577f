"""Qt-free HTML pieces shared by the HTML, PDF and comparison reports: escaping and stylesheets."""

from __future__ import annotations

import html as _html

from specscope.profiler.analysis.formatting import DASH
from . import redact


def esc(x) -> str:
    """Every piece of text that goes into a report goes through here: redacted, then escaped."""
    if x is None:
        return DASH
    return _html.escape(redact(str(x)), quote=True)


# -- table builders (the HTML and PDF reports) ---------------------------------------------------------

def kv_table(rows) -> str:
    body = "".join(f'<tr><th align="left">{esc(k)}</th><td>{v}</td></tr>' for k, v in rows if v not in (None, ""))
    return f'<table class="kv" cellspacing="0" cellpadding="4">{body}</table>'


def table(head, rows, cls="full", numeric_from=1, row_classes=None, numeric_to=None) -> str:
    """``head``: header strings (already safe); ``rows``: lists of safe cell HTML.
    Columns ``numeric_from`` … ``numeric_to - 1`` are right-aligned numbers."""
    end = len(head) if numeric_to is None else numeric_to

    def isnum(i):
        return numeric_from <= i < end

    hs = "".join(f'<th class="{"n" if isnum(i) else ""}" align="{"right" if isnum(i) else "left"}">{h}</th>'
                 for i, h in enumerate(head))
    out = [f'<table class="{cls}" width="100%" cellspacing="0" cellpadding="4" border="1"><tr>{hs}</tr>']
    for j, r in enumerate(rows):
        rc = (row_classes or {}).get(j, "")
        cells = "".join(f'<td class="{"n" if isnum(i) else ""}" align="{"right" if isnum(i) else "left"}">{c}</td>'
                        for i, c in enumerate(r))
        out.append(f'<tr class="{rc}">{cells}</tr>')
    out.append("</table>")
    return "".join(out)



# Screen stylesheet (the browser report). The print version (Qt's rich-text
# engine, which understands a CSS subset) is in ``PRINT_CSS``.
SCREEN_CSS = """
:root { --ink:#1d2530; --muted:#5b6675; --line:#d8dde4; --bg:#ffffff; --soft:#f4f6f9;
        --good:#1a7f37; --bad:#c0392b; --accent:#2f6fb3; --warn:#9a6700; }
* { box-sizing: border-box; }
body { font-family: -apple-system, BlinkMacSystemFont, "Segoe UI", "Helvetica Neue", Arial,
       "PingFang SC", "Noto Sans CJK SC", "WenQuanYi Micro Hei", sans-serif;
       color: var(--ink); background: var(--bg); margin: 0; line-height: 1.45; font-size: 15px; }
main { max-width: 1040px; margin: 0 auto; padding: 28px 28px 60px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 36px 0 10px; padding-bottom: 4px; border-bottom: 2px solid var(--line); }
h3 { font-size: 15px; margin: 18px 0 6px; }
p { margin: 6px 0; }
.sub { color: var(--muted); margin: 0 0 14px; }
.note { background: #fff8e1; border-left: 4px solid #e0a800; padding: 8px 12px; margin: 10px 0; }
.note.whatif { background: #eef4fb; border-left-color: var(--accent); }
.note.error { background: #fdecea; border-left-color: var(--bad); }
.verdict { font-size: 19px; font-weight: 600; padding: 14px 16px; margin: 16px 0; border-radius: 6px;
           background: var(--soft); border-left: 6px solid var(--muted); }
.verdict.win { border-left-color: var(--good); }
.verdict.lose { border-left-color: var(--bad); }
.formula { font-family: "SF Mono", Menlo, Consolas, "DejaVu Sans Mono", monospace; font-size: 13.5px;
           background: var(--soft); padding: 8px 12px; border-radius: 4px; overflow-x: auto; }
table { border-collapse: collapse; margin: 8px 0 12px; font-size: 13.5px; }
table.full { width: 100%; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: var(--soft); font-weight: 600; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.ruler td { background: #fafbfc; }
tr.total td { font-weight: 600; }
table.kv { width: 100%; }
table.kv th { width: 38%; font-size: 12.5px; }
table.kv td { font-size: 12.5px; word-break: break-word; }
.envgrid { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: 0 18px; align-items: start; }
.envgrid h3 { margin-top: 6px; }
.good { color: var(--good); font-weight: 600; }
.bad { color: var(--bad); font-weight: 600; }
.warn { color: var(--warn); }
.muted { color: var(--muted); }
figure { margin: 10px 0 16px; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); border-radius: 4px; }
figcaption { color: var(--muted); font-size: 13px; margin-top: 4px; }
.unavailable { border: 1px dashed var(--line); color: var(--muted); padding: 24px; text-align: center; }
.grid2 { display: grid; grid-template-columns: 1fr 1fr; gap: 16px; }
@media (max-width: 800px) { .grid2 { grid-template-columns: 1fr; } }
dl.audit dt { font-weight: 600; margin-top: 10px; }
dl.audit dd { margin: 2px 0 0 18px; }
.case { margin: 18px 0 26px; }
.case .prompt { background: var(--soft); padding: 6px 10px; border-radius: 4px; white-space: pre-wrap;
                font-size: 13.5px; }
table.outputs { table-layout: fixed; width: 100%; }
table.outputs td { white-space: pre-wrap; word-break: break-word; font-size: 13px;
                   font-family: "SF Mono", Menlo, Consolas, "DejaVu Sans Mono", "WenQuanYi Micro Hei Mono", monospace; }
mark { background: #ffe0a3; }
.scroll { overflow-x: auto; }
table.cases { font-size: 12.5px; }
table.cases th, table.cases td { padding: 3px 5px; }
table.cases td:first-child { white-space: nowrap; }
footer { margin-top: 40px; color: var(--muted); font-size: 12.5px; }
@media print { main { max-width: none; padding: 0; } h2 { break-after: avoid; } figure, tr { break-inside: avoid; } }
"""

PRINT_CSS = """
body { font-family: "DejaVu Sans", "WenQuanYi Micro Hei", sans-serif; font-size: 9pt; color: #1d2530; }
h1 { font-size: 17pt; margin-bottom: 2pt; }
h2 { font-size: 13pt; margin-top: 20pt; margin-bottom: 6pt; color: #1d2530; }
h3 { font-size: 10pt; margin-top: 12pt; margin-bottom: 4pt; }
p { margin-top: 2pt; margin-bottom: 2pt; }
.sub { color: #5b6675; }
.note { background-color: #fff8e1; }
.whatif { background-color: #eef4fb; }
.error { background-color: #fdecea; }
.verdict { font-size: 11pt; font-weight: bold; background-color: #f4f6f9; }
.formula { font-family: "DejaVu Sans Mono", monospace; font-size: 8.5pt; background-color: #f4f6f9; }
th { background-color: #eef1f5; font-weight: bold; text-align: left; }
td.n, th.n { text-align: right; }
tr.total td { font-weight: bold; }
.good { color: #1a7f37; font-weight: bold; }
.bad { color: #c0392b; font-weight: bold; }
.warn { color: #9a6700; }
.muted { color: #5b6675; }
.prompt { background-color: #f4f6f9; white-space: pre-wrap; }
td.out { white-space: pre-wrap; font-family: "DejaVu Sans Mono", "WenQuanYi Micro Hei Mono", monospace; font-size: 7.5pt; }
figcaption { color: #5b6675; font-size: 8pt; }
mark { background-color: #ffe0a3; }
table.cases { font-size: 7pt; }
dt { font-weight: bold; margin-top: 6pt; }
dd { margin-left: 12pt; }
.pagebreak { page-break-before: always; }
"""
