"""The report's pre-flight section: the machine before the run (``engine_adapter.preflight``), each check with its
status, evidence and fix, and the dtype each part of the model ran in as loaded."""

from __future__ import annotations

from specscope.profiler.renderers.html_common import esc, table

_CLASS = {"pass": "good", "warn": "warn", "fail": "bad", "not checked": "muted"}


def preflight_section(session) -> str:
    pf = session.data.get("preflight") or {}
    head = "<h2>Pre-flight: the machine before the run</h2>"
    if not pf.get("checks"):
        return head + '<p class="muted">No pre-flight in this session (recorded before specscope had one).</p>'
    st, c = pf.get("status", "?"), pf.get("counts") or {}
    counts = ", ".join(f"{c.get(k, 0)} {k}" for k in ("pass", "warn", "fail", "not checked"))
    if st == "fail":
        note = ('<p class="note error"><b>The pre-flight failed and the run went on anyway (--ignore-preflight).</b> '
                "What failed below may be what these numbers measure: the machine, not the method.</p>"
                if pf.get("ignored") else '<p class="note error"><b>The pre-flight failed:</b> the run stopped before '
                "measuring anything.</p>")
    elif st == "warn":
        note = ('<p class="note"><b>Pre-flight warnings.</b> The run went on; read the numbers with what is flagged '
                "below in mind.</p>")
    else:
        note = ""
    rows = [[f'<span class="{_CLASS.get(ch.get("status"), "")}">{esc(ch.get("status", "?"))}</span>', esc(ch.get("name")),
             esc(ch.get("evidence")), esc(ch.get("fix") or "")] for ch in pf["checks"]]
    parts = pf.get("parts") or []
    dtypes = "; ".join(f"{p.get('part')}: {p.get('dtype') or '?'} ({p.get('how')})" for p in parts)
    source = (f" From readings recorded in {esc(pf['readings_from'])}, not the measuring machine's."
              if pf.get("readings_from") else "")
    return (head + f"<p>{esc(pf.get('system') or '?')}: <b>{esc(st)}</b> ({esc(counts)}). Taken before the weights "
            f"loaded; a check whose probe could not run says “not checked”.{source}</p>" + note
            + table(["Status", "Check", "Evidence", "Fix"], rows, numeric_from=99)
            + (f'<p class="muted">Dtypes as loaded — {esc(dtypes)}.</p>' if dtypes else ""))
