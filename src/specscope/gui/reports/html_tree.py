"""The report's tree section (a ``--tree-budget`` run): what each round verified and what it bought, the accepted
paths' depths, and, from the run's acceptance traces, tokens per round at every budget (``analysis.tree_trace``)."""

from __future__ import annotations

from specscope.profiler.analysis import tree_trace
from specscope.profiler.analysis.formatting import fmt as f
from specscope.profiler.analysis.tree_text import tree_acceptance_phrase, verify_width, what_if_notes, what_if_verdict
from specscope.profiler.analysis.tree_what_if import BudgetWhatIf, budget_what_if
from specscope.profiler.renderers.html_common import esc
from specscope.profiler.renderers.html_common import table as _table


def tree_section(session, s) -> str:
    t = s.get("tree")
    if not t:
        return ""
    rows = [
        ["Budget", str(t["budget"]), "drafted nodes a round may verify (--tree-budget), grown best first by path probability"],
        ["Nodes verified a round", f(t["nodes_per_round"], ".2f"), esc(f"one verify forward over {verify_width(s)}")],
        ["Tree depth", f(t["depth_per_round"], ".2f"), f"mean deepest level (the depth limit is k = {s['k']})"],
        ["Accepted path", f(t["accepted_per_round"], ".3f"), esc(tree_acceptance_phrase(s))],
        ["Tokens per round E", f(s["tokens_per_round"], ".3f"), "1 + the accepted path (the target's own token)"],
        ["Nodes per accepted token", f(t["nodes_per_accepted"], ".2f"), "nodes verified ÷ tokens accepted: the tree's waste"],
        ["Nodes per token emitted", f(t["nodes_per_token"], ".2f"), "nodes verified ÷ tokens the rounds emitted"],
        ["T_draft (tree)", f(s.get("t_draft_ms"), ".2f", " ms"), "the drafter's forward and building the tree on the host"],
    ]
    hist = t["depth_histogram"]
    last = max((j for j, n in enumerate(hist) if n), default=0)
    parts = [f"<h2>Tree (budget {t['budget']})</h2>", _table(["Figure", "Value", "What it is"], rows),
             "<h3>Accepted path depth</h3>",
             _table(["Depth"] + [str(j) for j in range(last + 1)], [["Rounds"] + [str(hist[j]) for j in range(last + 1)]]),
             f'<p class="muted">Over the {t["rounds"]} full tree rounds acceptance counts (drafted to depth k, first '
             "repeat); the share of paths reaching each depth is the acceptance table's a_i.</p>"]
    what_if = budget_what_if(session, s)
    traces = tree_trace.tree_traces(session.cases)
    if what_if is not None:
        parts += what_if_section(what_if)
    elif traces:
        curve = tree_trace.curve(traces, s["k"])
        parts += ["<h3>Tokens per round at every budget, from the trace</h3>",
                  _table(["Budget"] + [str(c["budget"]) for c in curve],
                         [["E (trace)"] + [f(c["tokens_per_round"], ".2f") for c in curve]]),
                  '<p class="muted">Exact under greedy decoding: the trace\'s candidates a position walked as tree '
                  "rounds of each budget. What each budget's wider verify costs is the Verify cost page's.</p>"]
    return "".join(parts)


def what_if_section(w: BudgetWhatIf) -> list[str]:
    """The budget what-if (``analysis.tree_what_if``): the round model at each budget timed, the run's marked."""
    def iv(x, spec):
        return f" ({format(x[0], spec)}–{format(x[1], spec)})" if x else ""

    rows = [[str(p["budget"]) + (" (this run)" if p["this_run"] else ""),
             f(p["tokens_per_round"], ".2f") + iv(p["tokens_per_round_ci95"], ".2f"),
             f(p["t_verify_ms"], ".2f"), f(p["timed_verify_ms"], ".2f"),
             (f(p["speedup"], ".3f", "×") + iv(p["speedup_ci95"], ".3f")) if p["speedup"] is not None
             else "— (no E: run --trace)" if p["tokens_per_round"] is None else "—",
             "its prediction" if p["this_run"] else ("best" if p["budget"] == w["best"] else "")]
            for p in w["points"]]
    return [f"<h3>Budget what-if: {esc(what_if_verdict(w))}</h3>",
            _table(["Budget", "E (95%)", "T_verify (ms)", "timed in the what-if loop (ms)", "Predicted speedup (95%)",
                    ""], rows),
            *(f'<p class="muted">{esc(n)}.</p>' for n in what_if_notes(w))]
