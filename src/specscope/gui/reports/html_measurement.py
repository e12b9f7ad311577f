"""The report of a session that is not a run (``specscope roofline``, ``tune``, ``check``, …: its ``measure``).

Such a session has no cases, no verdict and no run configuration: the run's sections would all be empty or "?", and
"still being measured" would be false of a finished measurement. Its report says what it measured and how, and
shows the sections that measurement fills (the verify cost and the cost surface; the tune), as the app's verdict
bar and page do."""

from __future__ import annotations

from specscope.profiler.analysis.verdict import MEASURED, measurement_headline

from .html_header import environment_html, machine_rows, when
from specscope.profiler.renderers.html_common import esc

# the measurement's own settings a report leaves out: engine defaults no page measurement changes
_QUIET = {"oracle_p", "oracle_draft_ms", "round_kinds", "engine_timeout_s", "mtp_hidden", "allow_oversize",
          "demo_variant", "num_draft_tokens", "tree_budget"}
_SECTION = {"roofline": "the Verify cost section below", "tune": "the Which k section below"}


def measurement_only(session) -> bool:
    """A page's measurement (``session["measure"]`` one of ``verdict.MEASURED``) with no cases of its own."""
    return session.data.get("measure") in MEASURED and not session.cases


def model_name(session) -> str | None:
    """The model's name: the session's model record, else the one the measurement itself recorded."""
    own = (session.data.get("model") or {}).get("name")
    if own:
        return own
    for key in ("roofline", "tune"):
        rec = session.data.get(key) or {}
        if isinstance(rec.get("model"), str) and rec["model"]:
            return rec["model"]
    return None


def header(session) -> str:
    env = session.data.get("environment") or {}
    measure = session.data["measure"]
    title = f"specscope report — {model_name(session) or 'model ?'} on {env.get('device_name') or '?'}"
    if env.get("chip"):
        title += f" ({env['chip']})"
    sub = f"{MEASURED[measure][0]} (specscope {measure}) · status {session.status}"
    out = [f"<h1>{esc(title)}</h1>", f'<p class="sub">{esc(sub)}</p>']
    if (session.data.get("measurement") or {}).get("demo"):  # which demo is not kept: its name says it
        out.append('<p class="note"><b>A built-in demo model:</b> every timing is a real measurement of its shape on '
                   "this machine, and none says what your model will do.</p>")
    if session.status != "complete":
        out.append(f'<p class="note error"><b>Session status: {esc(session.status)}.</b> Figures cover what was '
                   "measured before it stopped.</p>")
    out += [f'<p class="note error">{esc(e)}</p>' for e in (session.data.get("errors") or [])[:20]]
    return "".join(out)


def verdict(session, target: str) -> str:
    measure = session.data["measure"]
    there = (f"its figures are in {_SECTION[measure]}" if measure in _SECTION else
             f"the app's {MEASURED[measure][1]} page shows it (this report holds how and where it was measured)")
    text = measurement_headline(measure, session.status, there=there) or ""
    if target == "print":
        return f'<table width="100%" cellpadding="8" cellspacing="0"><tr><td class="verdict">{esc(text)}</td></tr></table>'
    return f'<p class="verdict">{esc(text)}</p>'


def settings_rows(session) -> list[tuple[str, str]]:
    """The measurement's settings as it was asked for (``session["measurement"]``): every one given, but the engine
    defaults no page measurement changes."""
    m = session.data.get("measurement") or {}
    rows = []
    for key, value in m.items():
        if (key in _QUIET or value is None or value is False or value == []
                or (key, value) in (("engine", "specscope"), ("drafter", "auto"))):
            continue
        shown = ", ".join(map(str, value)) if isinstance(value, list) else ("yes" if value is True else str(value))
        rows.append((key.replace("_", " "), esc(shown)))
    return rows


def environment(session, target: str) -> str:
    env = session.data.get("environment") or {}
    started = session.data.get("started_at")
    machine = machine_rows(env) + ([("Started / finished", esc(f"{when(started)} / {when(session.data.get('finished_at'))}"))]
                                   if started else [])
    return environment_html([("Measurement", [("Model", esc(model_name(session) or "?"))] + settings_rows(session)),
                             ("Machine", machine)], target)
