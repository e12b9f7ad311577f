"""The content table (``specscope content A.json B.json … -o by-content.html``): drafters side by side per content
class, as text, HTML, CSV or JSON by the output's extension. Renders what ``analysis.by_content`` computed; Qt-free,
no scripts, all text escaped (HTML) and redacted (HTML, CSV, text)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from specscope.errors import SpecscopeError
from specscope.profiler.analysis.formatting import ci, fmt, pct
from specscope.profiler.analysis.records import ContentRow, ContentTable
from specscope.profiler.session.file_io import atomic_write, finite_json

from .html_common import SCREEN_CSS, esc, table

HEAD = ["Class", "Drafter", "k", "Cases", "Acceptance p (95% CI)", "Tokens per round E (95% CI)", "Predicted speedup",
        "The seed's division", "Measured speedup (95% CI)", "Verdict"]
VERDICT_WORDS = {"agrees": "agrees", "off": "off", "too_little_data": "too little data", None: "—"}
CSV_FIELDS = list(ContentRow.__annotations__)


def _range(iv, spec: str) -> str:
    return f"{iv[0]:{spec}}–{iv[1]:{spec}}" if iv and iv[0] is not None else "—"


def cells(r: ContentRow) -> list[str]:
    """One row's cells, as every text format prints them."""
    return [r["content_class"], r["drafter_label"] if r["drafter_label"] == r["drafter"] else
            f"{r['drafter']}: {r['drafter_label']}", str(r["k"]), str(r["cases"]),
            f"{pct(r['p'])} ({ci(r['p_ci95'])})", f"{fmt(r['tokens_per_round'], '.2f')} "
            f"({_range(r['tokens_per_round_ci95'], '.2f')})", fmt(r["predicted_speedup"], ".3f", "×"),
            fmt(r["division_speedup"], ".3f", "×"),
            f"{fmt(r['measured_speedup'], '.3f', '×')} ({_range(r['measured_speedup_ci95'], '.3f')})",
            VERDICT_WORDS.get(r["verdict"], str(r["verdict"]))]


def differ_lines(t: ContentTable) -> list[str]:
    """Per drafter: which classes differ (tokens-per-round intervals apart), or that none do."""
    out = []
    for d in t["drafters"]:
        pairs = ", ".join(f"{a} vs {b}" for a, b in d["differ"])
        out.append(f"{d['drafter']} ({d['drafter_label']}): " + (f"classes differ: {pairs}" if pairs else
                   "no two classes differ (their tokens-per-round intervals overlap)"))
    return out


def render_text(t: ContentTable) -> str:
    rows = [HEAD] + [cells(r) for r in t["rows"]]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEAD))]
    lines = [f"by content — {t['model'] or '?'}, {t['regime']}", ""]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines + [""] + differ_lines(t) + [""] + t["notes"]) + "\n"


def render_html(t: ContentTable) -> str:
    title = f"specscope by content — {t['model'] or '?'}"
    parts = [f"<h1>{esc(title)}</h1>",
             f"<p>{esc(len(t['drafters']))} drafter(s), {esc(t['regime'])}; classes {esc(', '.join(t['classes']))}.</p>"]
    for cls in t["classes"]:
        rows = [[esc(c) for c in cells(r)[1:]] for r in t["rows"] if r["content_class"] == cls]
        parts.append(f"<h2>{esc(cls)}</h2>" + table(HEAD[1:], rows, numeric_from=1, numeric_to=len(HEAD) - 2))
    parts.append("<h2>Do the classes differ?</h2><ul>" + "".join(f"<li>{esc(x)}</li>" for x in differ_lines(t))
                 + "</ul>")
    parts += [f'<p class="note">{esc(n)}</p>' for n in t["notes"]]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><style>{SCREEN_CSS}</style></head><body><main>{''.join(parts)}</main></body>"
            "</html>\n")


def render_csv(t: ContentTable) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
    w.writeheader()
    for r in t["rows"]:
        w.writerow({k: (" ".join(f"{x:.6g}" for x in v) if isinstance(v, list) else ("" if v is None else v))
                    for k, v in r.items()})
    return buf.getvalue()


def render_json(t: ContentTable) -> str:
    return json.dumps(finite_json(t), ensure_ascii=False, indent=1) + "\n"


RENDERERS = {".txt": render_text, ".html": render_html, ".htm": render_html, ".csv": render_csv, ".json": render_json}


def content_to_file(t: ContentTable, out_path) -> None:
    """Write the table in the format the extension names (atomically)."""
    from specscope.profiler.renderers import redact

    out = Path(out_path)
    render = RENDERERS.get(out.suffix.lower())
    if render is None:
        raise SpecscopeError(f"cannot tell the format from {out.name!r}; use {', '.join(sorted(RENDERERS))}")
    text = render(t)
    try:
        atomic_write(out, text if render is render_json else redact(text))
    except OSError as exc:
        raise SpecscopeError(f"could not write {out}: {exc.strerror or exc}") from None
