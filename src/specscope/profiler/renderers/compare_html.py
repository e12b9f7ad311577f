"""The two-session comparison page (``specscope compare A.json B.json -o diff.html``).

Renders what ``profiler.analysis.compare.compare`` computed: self-contained HTML, no
charts, no scripts, no URLs; all text escaped. Qt-free.
"""

from __future__ import annotations

import json
from pathlib import Path

from specscope.errors import SpecscopeError
from specscope.profiler.analysis.compare import compare
from specscope.profiler.analysis.records import Comparison
from specscope.profiler.session.file_io import atomic_write, finite_json

from .html_common import SCREEN_CSS, esc

EXTRA_CSS = """
td.win { color: var(--good); font-weight: 600; }
td.tie { color: var(--muted); }
.headline { font-size: 18px; font-weight: 600; padding: 12px 16px; background: var(--soft); border-left: 6px solid var(--accent);
            border-radius: 6px; margin: 14px 0; }
"""


def _val(x, unit):
    if x is None:
        return "—"
    if isinstance(x, str):  # a figure the measurement cannot vouch for, said in words ("below noise")
        return x
    if unit == "%":  # shares and relative errors are stored as fractions
        return f"{x * 100:.1f}%"
    nd = 3 if unit in ("×", "") else 2
    return f"{x:.{nd}f}" + (f" {unit}" if unit and unit != "×" else unit)


def _delta(row):
    d, unit = row["delta"], row.get("unit", "")
    if d is None:
        return "—"
    if unit == "%":
        return f"{d * 100:+.1f} pts"
    nd = 3 if unit in ("×", "") else 2
    s = f"{d:+.{nd}f}" + (f" {unit}" if unit and unit != "×" else unit)
    if row.get("relative") is not None:
        s += f" ({row['relative'] * 100:+.1f}%)"
    return s


def _better(b):
    return {"higher": "higher", "lower": "lower", "abs-lower": "closer to 0", None: "—"}.get(b, "—")


def _rows_table(rows, names, title_col="Figure", unit_default=None):
    head = (f'<tr><th align="left">{esc(title_col)}</th><th class="n" align="right">{esc(names[0])}</th>'
            f'<th class="n" align="right">{esc(names[1])}</th><th class="n" align="right">Δ ({esc(names[1])} − {esc(names[0])})</th>'
            '<th align="left">Better</th><th align="left">Winner</th></tr>')
    body = []
    for r in rows:
        unit = r.get("unit", unit_default if unit_default is not None else "")
        rr = dict(r, unit=unit)
        w = r.get("winner")
        if w is None:
            wcell, cls = "—", ""
        elif w == "tie":
            wcell, cls = ("no measurable difference" if r.get("judged") != "no interval" else "— (no interval)"), "tie"
        else:
            wcell, cls = f"{esc(w)} · {esc(r.get('by') or '')}", "win"
        body.append(
            f'<tr><td>{esc(r["label"])}</td><td class="n" align="right">{_val(r["a"], unit)}</td>'
            f'<td class="n" align="right">{_val(r["b"], unit)}</td><td class="n" align="right">{_delta(rr)}</td>'
            f'<td>{_better(r.get("better"))}</td><td class="{cls}">{wcell}</td></tr>'
        )
    return f'<table class="full" cellspacing="0" cellpadding="4" border="1">{head}{"".join(body)}</table>'


def render_comparison(result: Comparison) -> str:
    names = result["names"]
    sess = result["sessions"]
    keys = ["model", "device", "mlx", "engine", "drafter", "what_if", "k", "regime", "cases", "max_tokens", "status"]
    labels = {"model": "Model", "device": "Device", "mlx": "MLX", "engine": "Engine (speculative loop)", "drafter": "Drafter", "what_if": "What-if (oracle)",
              "k": "Draft tokens k", "regime": "Sampling regime", "cases": "Cases", "max_tokens": "New tokens per case",
              "status": "Status"}
    def cell(v):
        return ("yes" if v else "no") if isinstance(v, bool) else esc(v)

    env_rows = "".join(
        f'<tr><th align="left">{esc(labels[k])}</th><td>{cell(sess[names[0]].get(k))}</td><td>{cell(sess[names[1]].get(k))}</td></tr>'
        for k in keys
    )
    parts = [
        f"<h1>specscope comparison — {esc(names[0])} vs {esc(names[1])}</h1>",
        f'<p class="headline">{esc(result["headline"])}</p>',
    ]
    why = result.get("why")
    if why:
        parts.append(f'<p class="note why"><b>Why:</b> {esc(why["answer"])}.</p>')
        parts.append('<table cellspacing="0" cellpadding="4" border="1"><tr><th align="left">term of the round model</th>'
                     '<th>part of log(speedup ratio)</th><th>share</th></tr>'
                     + "".join(f'<tr><td>{esc(t["label"])}</td><td align="right">{t["log"]:+.3f}</td>'
                               f'<td align="right">{"—" if t["share"] is None else format(t["share"] * 100, "+.0f") + "%"}</td></tr>'
                               for t in why["terms"]) + "</table>")
    parts += _by_block_parts(result.get("by_block"), names)
    if not result["acceptance_compared"]:
        parts.append('<p class="note error"><b>Acceptance not compared.</b> The two sessions were measured in different '
                     "sampling regimes; only timings are compared below.</p>")
    parts += [f'<p class="note">{esc(n)}</p>' for n in result["notes"]]
    parts.append(f'<h2>Sessions</h2><table class="full" cellspacing="0" cellpadding="4" border="1">'
                 f'<tr><th></th><th align="left">{esc(names[0])}</th><th align="left">{esc(names[1])}</th></tr>{env_rows}</table>')
    parts.append("<h2>Summary figures</h2>" + _rows_table(result["figures"], names))
    if result["ratios"]:
        parts.append("<h2>Verify / decode ratio per block</h2>"
                     "<p>Lower is better: near 1 the weights are read once for all verified positions; near k+1 the work is repeated. "
                     "With different k the ratios cover different position counts.</p>"
                     + _rows_table(result["ratios"], names, "Block", unit_default="×"))
    if result["breakdown"]:
        parts.append("<h2>Breakdown (median over cases)</h2>" + _rows_table(result["breakdown"], names, "Pass: figure"))
    if result["acceptance_by_content_class"]:
        parts.append("<h2>Acceptance per content class</h2>" + _rows_table(result["acceptance_by_content_class"], names, "Content", unit_default=""))
    parts.append('<footer><p class="muted">Δ is the second session minus the first. Winner: the better value by the '
                 '"Better" rule; a winner only where the two 95% intervals separate.</p></footer>')
    title = f"specscope comparison — {names[0]} vs {names[1]}"
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{esc(title)}</title><style>{SCREEN_CSS}{EXTRA_CSS}</style></head><body><main>{''.join(parts)}</main></body></html>\n"
    )


def compare_to_file(a, b, out_path, names=("A", "B"), timings_only: bool = False) -> Comparison:
    """Write the comparison (HTML or JSON by the extension); returns it."""
    out = Path(out_path)
    name = out.name.lower()
    if not (name.endswith(".html") or name.endswith(".htm") or name.endswith(".json")):
        raise SpecscopeError(f"cannot tell the comparison format from {out.name!r}; use .html or .json")
    result = compare(a, b, names=names, timings_only=timings_only)
    if name.endswith(".json"):
        content = json.dumps(finite_json(result), ensure_ascii=False, indent=1) + "\n"
    else:
        content = render_comparison(result)
    try:
        atomic_write(out, content)
    except OSError as exc:
        raise SpecscopeError(f"could not write {out}: {exc.strerror or exc}") from None
    return result


def _by_block_parts(bb, names) -> list[str]:
    """Verify by block, engine against engine (``analysis.by_block``): the line and every block at every position
    count both sessions measured."""
    if not bb:
        return []
    out = [f'<p class="note why"><b>By block:</b> {esc(bb["line"])}.</p>']
    if bb.get("note"):
        out.append(f'<p class="note">{esc(bb["note"])}.</p>')
    if bb["rows"]:
        def ratio(r):
            if r["ratio"] is None:
                return "—"
            ci = r["ratio_ci95"]
            return f'{r["ratio"]:.2f}×' + (f' ({ci[0]:.2f}–{ci[1]:.2f})' if ci else "")

        out.append('<table cellspacing="0" cellpadding="4" border="1"><tr><th>positions</th><th align="left">block</th>'
                   f'<th>{esc(names[0])} ms</th><th>{esc(names[1])} ms</th><th>ratio (95%)</th><th>beyond noise</th></tr>'
                   + "".join(f'<tr><td align="right">{r["positions"]}</td><td>{esc(r["label"])}</td>'
                             f'<td align="right">{r["a_ms"]:.2f}</td><td align="right">{r["b_ms"]:.2f}</td>'
                             f'<td align="right">{ratio(r)}</td><td>{"yes" if r["beyond_noise"] else "no"}</td></tr>'
                             for r in bb["rows"]) + "</table>")
    return out
