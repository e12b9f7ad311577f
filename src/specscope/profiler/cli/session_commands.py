"""Commands over saved sessions: ``report`` (render one), ``compare`` (two side by side), ``content`` (drafters side
by side per content class) and ``verdict`` (one setting's prediction judged over several runs)."""

from __future__ import annotations

import sys
from pathlib import Path

from specscope.errors import SpecscopeError

from specscope.profiler.cli.common import check_output_path
from specscope.profiler.cli.records import RunSetting


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
    if by_block := result.get("by_block"):
        print(f"by block: {by_block['line']}")
    return 0


STATE_WORDS = {"agrees": "agrees", "off": "off", "too_little_data": "too little data"}


def _setting(session) -> RunSetting:
    d = session.config.get("drafter")
    return {"model": (session.data.get("model") or {}).get("name"), "drafter": d.get("name") if isinstance(d, dict) else d,
            "k": session.k, "regime": session.regime, "dtype": session.config.get("dtype")}


def cmd_verdict(a) -> int:
    """The judged prediction over several runs of one setting: each run's error and its own interval, pooled by
    random effects (``analysis.over_runs``), so the spread between runs is in the interval and the verdict."""
    import json

    from specscope.profiler.analysis.formatting import pct
    from specscope.profiler.analysis.over_runs import pooled, run_error
    from specscope.profiler.analysis.records import RunError
    from specscope.profiler.analysis.summary import summarize
    from specscope.profiler.session.schema import SessionError
    from specscope.profiler.session.session import Session

    runs: list[RunError] = []
    flags: list[bool] = []  # each run's error corrected for its sequential stop
    lines: list[tuple[str, str]] = []
    settings: dict[str, RunSetting] = {}
    for path in a.sessions:
        try:
            s = Session.load(path)
        except SessionError as exc:
            raise SpecscopeError(str(exc)) from None
        summ = summarize(s)
        run, corrected = run_error(summ)  # a sequential stop's error with its stopping bias taken out
        if run is None:
            why = summ.get("prediction_unavailable") or "no interval (too few cases or rounds)"
            raise SpecscopeError(f"{path}: no judged prediction with an interval to pool ({why})")
        settings[path] = _setting(s)
        runs.append(run)
        flags.append(corrected)
        err, own = run["error"], run["interval"]
        state = (summ.get("prediction_verdict") or {}).get("state")
        lines.append((path, f"{pct(err, signed=True):>7}   {pct(own[0], signed=True) + '…' + pct(own[1], signed=True):<21}"
                            f"{STATE_WORDS.get(state or '', '—')}"
                            + ("  (corrected for the sequential stop)" if corrected else "")))
    first = next(iter(settings.values()))
    seen = {key: sorted({str(st.get(key)) for st in settings.values()}) for key in first}
    differ = [key for key, values in seen.items() if len(values) > 1]
    if differ and not a.force:
        detail = "; ".join(f"{key}: {', '.join(seen[key])}" for key in differ)
        raise SpecscopeError(f"the runs are not one setting ({detail}): pool runs of one model, drafter, k, sampling "
                             "and dtype, or pass --force")
    res = pooled(runs)
    if a.json:
        print(json.dumps({"setting": first, "sessions": [{"session": p, **r, "corrected_for_sequential_stop": c}
                                                         for p, r, c in zip(a.sessions, runs, flags)], **res},
                         indent=2))
        return 0
    iv = res["interval"]
    print(f"the judged prediction over {res['runs']} runs ({', '.join(f'{k} {v}' for k, v in first.items() if v)})")
    width = max(len("run"), *(len(p) for p, _ in lines))
    print(f"  {'run':<{width}} {'error':>7}   {'its own 95% interval':<21}its own verdict")
    print("\n".join(f"  {p:<{width}} {rest}" for p, rest in lines))
    print(f"pooled (random effects: the spread between runs is in the interval): error {pct(res['error'], signed=True)}"
          + (f", 95% interval {pct(iv[0], signed=True)}…{pct(iv[1], signed=True)}" if iv else ""))
    if res["heterogeneity_p"] is not None:
        print(f"between runs: {res['between_runs_sd'] * 100:.1f}% (standard deviation, estimated) beyond what the "
              f"runs' own intervals allow (Cochran's Q {res['q']:.1f} on {res['runs'] - 1} degrees of freedom, "
              f"p = {res['heterogeneity_p']:.2g}); {res['run_intervals_cover']} of {res['runs']} runs' own intervals "
              "hold the pooled error")
    print(f"verdict over runs: {res['verdict']['text']}")
    return 0


def cmd_content(a) -> int:
    from specscope.profiler.analysis.by_content import content_table
    from specscope.profiler.renderers.content import content_to_file, render_text
    from specscope.profiler.session.schema import SessionError
    from specscope.profiler.session.session import Session

    out = check_output_path(a.output, a.force) if a.output else None
    try:
        sessions = [Session.load(p) for p in a.sessions]
    except SessionError as exc:
        raise SpecscopeError(str(exc)) from None
    names = [Path(p).stem for p in a.sessions]
    if len(set(names)) != len(names):
        names = [str(p) for p in a.sessions]
    table = content_table(sessions, names)
    if out is None:
        print(render_text(table), end="")
        return 0
    content_to_file(table, out)
    print(f"wrote {out}")
    return 0


def add_parser(sub) -> None:
    """``report``, ``compare`` and ``verdict`` on the ``specscope`` argparse subparsers."""
    rep = sub.add_parser("report", help="render a saved session (format from the extension: .html .pdf .csv .json .trace.json)")
    rep.add_argument("session")
    rep.add_argument("-o", "--output", required=True)
    rep.add_argument("--force", action="store_true")
    rep.set_defaults(func=cmd_report)

    c = sub.add_parser("compare", help="compare two sessions side by side")
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("-o", "--output", required=True)
    c.add_argument("--force", action="store_true")
    c.add_argument("--timings-only", action="store_true",
                   help="compare timings even across sampling regimes (acceptance is left out)")
    c.set_defaults(func=cmd_compare)

    ct = sub.add_parser("content", help="drafters side by side per content class: acceptance, tokens per round and "
                                        "the speedup each class would get (one session per drafter)")
    ct.add_argument("sessions", nargs="+", metavar="SESSION", help="saved sessions of one target and sampling regime")
    ct.add_argument("-o", "--output", help="write the table (.txt .html .csv .json by the extension); none: print it")
    ct.add_argument("--force", action="store_true")
    ct.set_defaults(func=cmd_content)

    v = sub.add_parser("verdict", help="the judged prediction over several runs of one setting (the spread between "
                                       "runs in its interval)")
    v.add_argument("sessions", nargs="+", metavar="SESSION", help="saved sessions of one model, drafter, k and sampling")
    v.add_argument("--json", action="store_true", help="print the result as JSON")
    v.add_argument("--force", action="store_true", help="pool runs whose settings differ")
    v.set_defaults(func=cmd_verdict)
