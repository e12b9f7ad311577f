"""``specscope trace SESSION -o OUT``: add the acceptance trace A(s) to every case of a saved session.

For each complete case, the session's own drafter (its model, draft model, MTP weights and sampling, from the
session's config) proposes K_max tokens from every position of the case's plain output, and A(s) counts how many
agree with it (``engine_adapter.measure.acceptance_trace``). That is measured in the worker (``run.trace_run``, a
``TraceConfig``): each case's trace arrives as a ``trace`` event, folded into the session (``Session.apply``) and
written to OUT as it comes (a stopped trace keeps the cases traced so far, and says so in the session's errors). The
cases gain ``trace`` (schema 2; see ``session``), and the command prints E(k) walked on the traces per case and per
content class beside what the case's own rounds measured at the session's k. The oracle what-if has no trace: its
acceptance is i.i.d. by construction.

A tree run's session (``run --tree-budget N``) is traced with the tree's candidates too (``tree``), and the command
adds the tree figures walked from them (``analysis.tree_trace``): E at every budget 1..b (the budget what-if), and at
the run's budget the acceptance by depth and the depth histogram, beside E from the cases' own full tree rounds.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from specscope.errors import SpecscopeError

from specscope.profiler.analysis import trace_walk, tree_trace
from specscope.profiler.analysis.rounds import full_round
from specscope.profiler.cli.records import TraceCaseFigures, TraceFigures, TraceTreeFigures
from specscope.profiler.session.records import Round


def add_parser(sub) -> None:
    from specscope.profiler.cli.common import add_download_arg
    from specscope.profiler.cli.progress import add_progress_args

    p = sub.add_parser("trace", help="add the acceptance trace A(s) to every case of a saved session (E(k) for every k)")
    p.add_argument("session", help="a session file saved by specscope")
    p.add_argument("-o", "--output", required=True, help="where to write the session with its traces")
    p.add_argument("--k-max", type=int, default=None, help="proposals per position (default: max(4, the session's k))")
    p.add_argument("--draws", type=int, default=8, help="under sampling: seeded accept/reject draws per position")
    p.add_argument("--force", action="store_true", help="overwrite OUT if it exists")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.add_argument("--model", metavar="MODEL", help="the session's model, where it is not at its recorded path")
    p.add_argument("--draft-model", metavar="MODEL", help="the session's draft model, where it is not at its recorded path")
    p.add_argument("--mtp-weights", metavar="DIR", help="the session's MTP weights, where they are not at their recorded path")
    add_progress_args(p)
    add_download_arg(p)
    p.set_defaults(func=cmd_trace)


def _measured_e(case: dict, k: int) -> float | None:
    """E at k from the case's own first-repeat rounds that drafted k (the same rounds a trace walk counts)."""
    rounds = [r for r in _first_repeat(case) if len(r["drafted"]) == k and not r.get("tree")]
    return 1.0 + sum(r["accepted"] for r in rounds) / len(rounds) if rounds else None


def _first_repeat(case: dict) -> list[Round]:
    """The case's measured rounds of its first repeat (end to end)."""
    return [r for r in case["spec"]["rounds"] if not r.get("repeat") and r.get("pass", "measured") in ("measured", None)]


def tree_figures(cases: list[dict], budget: int, k: int) -> TraceTreeFigures | None:
    """The tree traces of ``cases`` walked at every budget and at the run's ``budget`` (depth limit ``k``), beside
    E from the cases' own full tree rounds; None for a chain run or cases without tree traces."""
    traces = tree_trace.tree_traces(cases)
    if budget < 1 or not traces:
        return None
    depth = min(k, min(int(t["depth"]) for t in traces))
    curve = tree_trace.curve(traces, depth)
    at = tree_trace.at_budget(traces, budget, depth)
    paths = [r["accepted"] for c in cases for r in _first_repeat(c) if r.get("tree") and full_round(r, k)]
    return {"budget": budget, "depth": depth, "budgets": [x["budget"] for x in curve],
            "E": [x["tokens_per_round"] for x in curve], "E_at_budget": at["tokens_per_round"],
            "full_rounds": at["full_rounds"],
            "acceptance_by_depth": at["acceptance_by_depth"], "depth_histogram": at["depth_histogram"],
            "measured_E": 1.0 + sum(paths) / len(paths) if paths else None, "measured_rounds": len(paths)}


def trace_figures(session, plan, traced: list[str]) -> TraceFigures:
    """What ``trace`` prints, from the traces folded into ``session`` (the cases ``traced``, in order)."""
    index = {c["id"]: c for c in session.cases}
    cases = [index[i] for i in traced]
    figures: list[TraceCaseFigures] = []
    for c in cases:
        tr = c["trace"]
        figures.append({"case": c["id"], "content_class": c.get("content_class"), "positions": len(tr["A"]),
                        "estimate": tr["estimate"], "cost_ms": tr["cost_ms"]["total_ms"],
                        "E": [trace_walk.at_k(tr, j)["tokens_per_round"] for j in range(1, plan.k_max + 1)],
                        "measured_E_at_k": _measured_e(c, plan.k) if plan.k <= plan.k_max else None})
    classes = {cat: [x["tokens_per_round"] for x in curve] for cat, curve in trace_walk.by_class(cases, plan.k_max).items()}
    out: TraceFigures = {"drafter": plan.drafter, "k": plan.k, "k_max": plan.k_max, "cases": figures, "classes": classes}
    tree = tree_figures(cases, plan.tree_budget, plan.k)
    if tree is not None:
        out["tree"] = tree
    return out


def format_tree(t: TraceTreeFigures) -> list[str]:
    """The tree part of ``format_trace``: E by budget (the run's marked), and at the run's budget a_i and the
    depth histogram (to depth min(k, budget): a path holds at most the budget's nodes)."""
    f = lambda x: "—" if x is None else f"{x:.2f}"  # noqa: E731
    e = "  ".join(f"{b}: {f(x)}" + (" (this run)" if b == t["budget"] else "") for b, x in zip(t["budgets"], t["E"]))
    m = ("no full tree rounds measured" if t["measured_E"] is None
         else f"{f(t['measured_E'])} over {t['measured_rounds']} full tree rounds")
    deepest = min(t["depth"], t["budget"])
    return [f"tree traces: budget {t['budget']} (the session's), depth {t['depth']}; walked exactly (greedy)",
            f" E by budget      {e}",
            f" at budget {t['budget']:<6} E {f(t['E_at_budget'])} walked over {t['full_rounds']} full rounds; measured {m}",
            " reached depth i  " + " ".join(f(x) for x in t["acceptance_by_depth"][:deepest])
            + f"  (share of paths, i = 1..{deepest})",
            " accepted depth   " + "  ".join(f"{d}: {n}" for d, n in enumerate(t["depth_histogram"][:deepest + 1]))
            + "  (paths that ended at each depth)"]


def format_trace(res: TraceFigures) -> str:
    e = lambda xs: " ".join("—" if x is None else f"{x:.2f}" for x in xs)  # noqa: E731
    lines = [f"acceptance traces: {res['drafter']}, K_max {res['k_max']} (the session ran k = {res['k']})",
             f" case            positions  E(1..{res['k_max']}) walked        measured E at k={res['k']}   cost"]
    for c in res["cases"]:
        m = "—" if c["measured_E_at_k"] is None else f"{c['measured_E_at_k']:.2f}"
        lines.append(f" {c['case']:<15} {c['positions']:>9}  {e(c['E']):<24} {m:>18}   {c['cost_ms'] / 1000:.1f} s"
                     + ("  (estimate)" if c["estimate"] else ""))
    lines.append("")
    for cat, es in res["classes"].items():
        lines.append(f" {cat:<8} E(k) = {e(es)}")
    if "tree" in res:
        lines += [""] + format_tree(res["tree"])
    return "\n".join(lines)


def cmd_trace(a) -> int:
    from specscope.profiler.analysis.session_file import save_session
    from specscope.profiler.cli.common import check_output_path  # the same refusal of bad paths as report
    from specscope.profiler.cli.progress import PhaseProgress, progress_wanted
    from specscope.profiler.cli.worker_measure import incomplete_exit, run_in_worker
    from specscope.profiler.run.tool_configs import TraceConfig
    from specscope.profiler.run.trace_run import trace_plan
    from specscope.profiler.session.schema import SessionError
    from specscope.profiler.session.session import Session

    out = check_output_path(a.output, a.force)
    try:
        s = Session.load(a.session)
    except (SessionError, OSError) as exc:
        raise SpecscopeError(str(exc)) from None
    cfg = TraceConfig(session=str(Path(a.session).resolve()), k_max=a.k_max, draws=a.draws, model=a.model,
                      draft_model=a.draft_model, mtp_weights=a.mtp_weights)
    plan = trace_plan(s, cfg)  # refused here, before a worker starts
    traced: list[str] = []

    def fold(ev, _measurement) -> None:  # each case's trace into the session written to OUT, as it comes
        if ev["event"] == "trace":
            s.apply(ev)
            traced.append(ev["case"])
            save_session(s, out)

    say = PhaseProgress("trace", 2 + len(plan.cases), enabled=progress_wanted(a))

    def status(ev) -> None:
        if ev.get("notice"):
            print(f"specscope: {ev['message']}", file=sys.stderr)
        say(ev["message"])

    def keep_partial(why: str) -> None:  # what was traced stays in OUT, the session saying the trace did not finish
        s.mark_incomplete(f"trace {why}: {len(traced)} of {len(plan.cases)} cases traced")
        save_session(s, out)

    try:
        m = run_in_worker(cfg, status, on_event=fold)
    except SpecscopeError as exc:
        if traced:
            keep_partial(f"failed ({exc})")
        raise
    finally:
        say.close()
    if m.status != "complete":
        keep_partial(f"{m.status} ({'; '.join(m.data['errors'][-1:]) or 'no result'})")
        return incomplete_exit("trace", m, str(out))
    save_session(s, out)
    res = trace_figures(s, plan, traced)
    print(json.dumps(res, indent=1) if a.json else format_trace(res) + f"\n\nwrote {out}")
    return 0
