"""``specscope run`` and ``specscope sweep``: the protocol run headless, its summary (or per-context figures) printed."""

from __future__ import annotations

import json
import sys

from specscope.drafter_kinds import DRAFTER_NAMES
from specscope.profiler.cli.common import check_output_path, fail
from specscope.profiler.cli.preflight import show_preflight
from specscope.profiler.cli.progress import add_progress_args
from specscope.profiler.cli.run_args import add_run_args, config_from_args
from specscope.profiler.run.config import RunConfig


def cmd_run(a) -> int:
    from specscope.profiler.cli.progress import Progress, progress_wanted
    from specscope.profiler.run.runner import SessionSaveError, run_worker
    from specscope.profiler.analysis.summary import summarize
    from specscope.profiler.analysis.summary_text import format_summary

    cfg = config_from_args(a)
    if cfg.suite:
        from specscope.profiler.run.suite import load_suite

        load_suite(cfg.suite)  # fail fast on a bad suite, before loading a model
    out = check_output_path(a.output, a.force) if a.output else None
    progress = Progress(enabled=progress_wanted(a))

    def on_event(ev, session):
        progress.update(ev, session)
        show_preflight(ev)  # warns and fails, before anything is measured

    try:
        res = run_worker(cfg, on_event=on_event, autosave=str(out) if out else None)
    except SessionSaveError as exc:  # measured, but not written where asked: show the numbers anyway
        progress.close()
        print(format_summary(exc.result.session))
        return fail(str(exc), 2)
    progress.close()
    s = res.session
    if s.data["errors"] and s.status == "failed":
        msg = s.data["errors"][-1]
        if out:
            print(f"specscope: partial session saved to {out}", file=sys.stderr)
        if s.data.get("internal_errors"):  # a specscope bug: show the worker's traceback so it can be reported
            if res.stderr.strip():
                print(res.stderr.rstrip(), file=sys.stderr)
            msg = f"internal error (a bug in specscope; the traceback is above): {msg}"
        return fail(msg, 2 if res.returncode == 2 else 1)
    if getattr(a, "roofline", False) and s.status == "complete" and not (cfg.ranks or cfg.hosts or cfg.hostfile):
        _add_roofline(a, cfg, s, out)
    if a.json:
        print(json.dumps(summarize(s), indent=1, ensure_ascii=False))
    else:
        print(format_summary(s))
    if out:
        print(f"\nsession saved to {out}", file=sys.stderr)
    if s.status != "complete":
        print(f"specscope: run {s.status}: {'; '.join(s.data['errors'][-1:])}", file=sys.stderr)
        # 130 for a run the user stopped; a run that a fault ended (a rank, a killed worker) is a failure: 1
        return 130 if s.status == "incomplete" and "stopped by the user" in s.data["errors"] else 1
    return 0


def cmd_sweep(a) -> int:
    """``specscope sweep --context 0,1k,4k,16k``: the protocol at each context (``profiler.analysis.sweep``)."""
    from specscope.profiler.cli.progress import Progress, progress_wanted
    from specscope.profiler.run.runner import SessionSaveError, run_worker
    from specscope.profiler.analysis.sweep import format_sweep, sweep_figures

    cfg = config_from_args(a)
    out = check_output_path(a.output, a.force) if a.output else None
    progress = Progress(enabled=progress_wanted(a))

    def on_event(ev, session):
        progress.update(ev, session)
        show_preflight(ev)

    try:
        res = run_worker(cfg, on_event=on_event, autosave=str(out) if out else None)
    except SessionSaveError as exc:
        progress.close()
        print(format_sweep(sweep_figures(exc.result.session)))
        return fail(str(exc), 2)
    progress.close()
    s = res.session
    if s.data["errors"] and s.status == "failed":
        if out:
            print(f"specscope: partial session saved to {out}", file=sys.stderr)
        return fail(s.data["errors"][-1], 2 if res.returncode == 2 else 1)
    rows = sweep_figures(s)
    if a.json:
        print(json.dumps(finite_rows({"contexts": (s.data.get("sweep") or {}).get("contexts"),
                                      "order": (s.data.get("sweep") or {}).get("order"), "points": rows}),
                         indent=1, ensure_ascii=False))
    else:
        print(format_sweep(rows, s))
    if out:
        print(f"\nsession saved to {out}", file=sys.stderr)
    if s.status != "complete":
        print(f"specscope: sweep {s.status}: {'; '.join(s.data['errors'][-1:])}", file=sys.stderr)
        return 130 if s.status == "incomplete" and "stopped by the user" in s.data["errors"] else 1
    return 0


def finite_rows(x):
    from specscope.profiler.session.file_io import finite_json

    return finite_json(x)


def _add_roofline(a, cfg, session, out) -> None:
    """``run --roofline``: the verify curve, machine probes and draft steps for the run's model, drafter and k,
    measured apart from the run and kept in the session (saved again, atomically)."""
    from specscope.profiler.run.measure_config import RooflineConfig
    from specscope.profiler.run.runner import run_worker
    from specscope.profiler.analysis.session_file import save_session

    drafter = (session.config.get("drafter") or {}).get("name") or cfg.drafter
    rl = RooflineConfig.beside_run(cfg, drafter if drafter in DRAFTER_NAMES else "auto")
    say = (lambda m: print(f"specscope: {m}", file=sys.stderr)) if not a.quiet else (lambda m: None)
    say("measuring the verify cost curve apart from the run (--roofline)")
    # measured in a worker of its own, as `specscope roofline` is, and its result kept with the run
    res = run_worker(rl, on_event=lambda ev, _s: say(ev["message"]) if ev["event"] == "status" else None)
    measured = res.session
    if measured.status != "complete" or "roofline" not in measured.data:
        why = "; ".join(measured.data["errors"][-1:]) or measured.status
        print(f"specscope: --roofline: the verify cost curve was not measured ({why}); the run is kept without it",
              file=sys.stderr)
        return
    session.data["roofline"] = measured.data["roofline"]
    if out:
        save_session(session, out)


def add_parser(sub) -> None:
    """``specscope run`` and ``specscope sweep`` on the ``specscope`` argparse subparsers."""
    r = sub.add_parser("run", help="run the protocol headless and print the summary")
    add_run_args(r)
    r.add_argument("-o", "--output", help="write the session JSON here (autosaved while running)")
    r.add_argument("--force", action="store_true", help="overwrite --output if it exists")
    r.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_progress_args(r)
    r.add_argument("--roofline", action="store_true",
                   help="after the run, measure the verify cost curve and draft steps apart (as `specscope roofline`) "
                        "and keep it in the session: the summary then holds a prediction beside the ledger")
    r.set_defaults(func=cmd_run)

    sw = sub.add_parser("sweep", help="the protocol at several contexts: how verify cost, acceptance and the speedup "
                                      "change as the conversation grows")
    add_run_args(sw)
    sw.add_argument("--passes", type=int, default=RunConfig.sweep_passes,
                    help="visits of every context, each pass in the reverse order of the one before (default 2: "
                         "0,1k,4k,16k then 16k,4k,1k,0), so drift cannot pass for a context effect")
    sw.add_argument("-o", "--output", help="write the session JSON here (autosaved while running)")
    sw.add_argument("--force", action="store_true", help="overwrite --output if it exists")
    sw.add_argument("--json", action="store_true", help="print the per-context figures as JSON at the end")
    add_progress_args(sw)
    sw.set_defaults(func=cmd_sweep)
