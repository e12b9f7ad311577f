"""``specscope trace SESSION -o OUT``: add the acceptance trace A(s) to every case of a saved session.

For each complete case, the session's own drafter (its model, draft model, MTP weights and sampling, from the
session's config) proposes K_max tokens from every position of the case's plain output, and A(s) counts how many
agree with it (``engine_adapter.measure.acceptance_trace``). The cases gain ``trace`` (schema 2; see ``session``), and the
command prints E(k) walked on the traces per case and per content class beside what the case's own rounds
measured at the session's k. The oracle what-if has no trace: its acceptance is i.i.d. by construction.
"""

from __future__ import annotations

import json
import sys

from specscope.errors import SpecscopeError

from specscope.profiler.analysis import trace_walk
from specscope.profiler.cli.records import TraceCaseFigures, TraceFigures


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
    rounds = [r for r in case["spec"]["rounds"] if len(r["drafted"]) == k and not r.get("repeat")
              and r.get("pass", "measured") in ("measured", None)]
    return 1.0 + sum(r["accepted"] for r in rounds) / len(rounds) if rounds else None


def trace_session(session, k_max: int | None = None, draws: int = 8, say=lambda m: None, models: dict | None = None,
                  tell=lambda m: None) -> TraceFigures:
    """Record the traces into ``session`` (in place); return the figures ``trace`` prints. ``models``: the user's
    ``model``/``draft_model``/``mtp_weights`` in place of the session's (``run.session_models``); ``tell``: what the
    user must hear even without a progress bar (a demo rebuilt)."""
    from specscope.engine_adapter.measure.acceptance_trace import record_trace
    from specscope.engine_adapter.engine import Engine

    from specscope.profiler.run.session_models import reopen_params, session_drafter

    cfg = session.config
    drafter = session_drafter(cfg)
    if not drafter:
        raise SpecscopeError("the session does not say which drafter it ran")
    if drafter == "oracle":
        raise SpecscopeError("the oracle what-if has no acceptance trace: its draws are i.i.d., so E(k) = 1 + Σ p^i")
    k = int(cfg.get("num_draft_tokens") or 2)
    k_max = max(4, k) if k_max is None else k_max
    if not 1 <= k_max <= 16:
        raise SpecscopeError("--k-max must be between 1 and 16")
    if draws < 1:
        raise SpecscopeError("--draws must be at least 1")
    cases = [c for c in session.cases if c.get("complete") and len(c["plain"]["tokens"]) >= 2 and c.get("prompt_tokens")]
    if not cases:
        raise SpecscopeError("the session has no complete case with a plain output to trace")
    params = reopen_params(session.data, say=tell, **(models or {}))
    eng = Engine.open(params, status=say)
    figures: list[TraceCaseFigures] = []
    for c in cases:
        say(f"tracing {c['id']} ({len(c['plain']['tokens'])} tokens)")
        d = eng.make_drafter(c["plain"]["tokens"])
        tr = record_trace(eng.target.model, c["prompt_tokens"], c["plain"]["tokens"], d, k_max, sampling=eng.sampling,
                          draws=draws, name=drafter, target_forward=d.needs_hidden)
        session.apply({"event": "trace", "case": c["id"], "trace": tr})
        figures.append({"case": c["id"], "content_class": c.get("content_class"), "positions": len(tr["A"]),
                             "estimate": tr["estimate"], "cost_ms": tr["cost_ms"]["total_ms"],
                             "E": [trace_walk.at_k(tr, j)["tokens_per_round"] for j in range(1, k_max + 1)],
                             "measured_E_at_k": _measured_e(c, k) if k <= k_max else None})
    classes = {cat: [x["tokens_per_round"] for x in curve] for cat, curve in trace_walk.by_class(cases, k_max).items()}
    return {"drafter": drafter, "k": k, "k_max": k_max, "cases": figures, "classes": classes}


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
    return "\n".join(lines)


def cmd_trace(a) -> int:
    from specscope.profiler.cli.common import check_output_path  # the same refusal of bad paths as report
    from specscope.profiler.session.schema import SessionError
    from specscope.profiler.session.session import Session
    from specscope.profiler.analysis.session_file import save_session

    out = check_output_path(a.output, a.force)
    try:
        s = Session.load(a.session)
    except (SessionError, OSError) as exc:
        raise SpecscopeError(str(exc)) from None
    from specscope.profiler.cli.progress import PhaseProgress, progress_wanted

    say = PhaseProgress("trace", 2 + sum(1 for c in s.cases if c.get("complete")), enabled=progress_wanted(a))
    try:
        res = trace_session(s, a.k_max, a.draws, say=say, tell=lambda m: print(f"specscope: {m}", file=sys.stderr),
                            models={"model": a.model, "draft_model": a.draft_model, "mtp_weights": a.mtp_weights})
    finally:
        say.close()
    save_session(s, out)
    print(json.dumps(res, indent=1) if a.json else format_trace(res) + f"\n\nwrote {out}")
    return 0
