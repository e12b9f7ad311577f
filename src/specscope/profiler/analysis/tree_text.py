"""How a tree run's figures read (``--tree-budget``): the verify's width, acceptance as the accepted path, the tree
lines of the summary. A chain run's summary reads as it always did (every helper here gives the chain's words when
the summary has no ``tree``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from specscope.profiler.analysis.formatting import fmt

if TYPE_CHECKING:
    from specscope.profiler.analysis.tree_what_if import BudgetWhatIf


def is_tree(s: Mapping[str, Any]) -> bool:
    return bool(s.get("tree"))


def verify_width(s: Mapping[str, Any]) -> str:
    """What one verify runs: "16 positions" (a chain of k = 15), "a tree of 8 nodes (9 positions)"."""
    t = s.get("tree")
    if not t:
        return f"{s['k'] + 1} positions"
    n = t.get("nodes_per_round")
    nodes = t.get("budget") if n is None else (int(n) if float(n).is_integer() else round(n, 1))
    width = f"{nodes + 1}" if isinstance(nodes, int) else f"{fmt(n + 1 if n is not None else None, '.1f')}"
    return f"a tree of {nodes} nodes ({width} positions)"


def round_priced(s: Mapping[str, Any]) -> str:
    """The round the prediction prices: "rounds of k = 15 drafts", "tree rounds of budget 8 to depth 15"."""
    t = s.get("tree")
    return f"tree rounds of budget {t.get('budget')} to depth {s['k']}" if t else f"rounds of k = {s['k']} drafts"


def tree_acceptance_phrase(s: Mapping[str, Any]) -> str:
    """A tree run's acceptance: the accepted path per round with its interval, never without regime and sample."""
    t = s["tree"]
    E, iv = s.get("tokens_per_round"), s.get("tokens_per_round_ci95")
    if E is None:
        return "acceptance: no full tree rounds measured"
    ci = f" (95% CI {iv[0] - 1:.2f}–{iv[1] - 1:.2f})" if iv else ""
    text = (f"accepted path {E - 1:.2f} tokens per round{ci}, {s['regime']}, {t['rounds']} tree rounds of budget "
            f"{t['budget']}")
    if s.get("low_sample"):
        text += " — few rounds: treat as noise"
    return text


def tree_lines(s: Mapping[str, Any]) -> list[str]:
    """The summary's tree lines: what each round verified and what it bought, and the accepted depths."""
    t = s.get("tree")
    if not t:
        return []
    waste = t.get("nodes_per_accepted")
    hist = t.get("depth_histogram") or []
    last = max((j for j, n in enumerate(hist) if n), default=0)
    return [
        f"  tree              budget {t['budget']}: {fmt(t['nodes_per_round'], '.1f')} nodes verified a round "
        f"(depth {fmt(t['depth_per_round'], '.1f')} on average), accepted path {fmt(t['accepted_per_round'], '.2f')}; "
        f"{fmt(waste, '.2f')} nodes verified per accepted token, {fmt(t['nodes_per_token'], '.2f')} per token emitted"
        f"; T_draft {fmt(s.get('t_draft_ms'), '.2f')} ms (the drafter's forward and building the tree)",
        "  accepted depth    " + "   ".join(f"{j}: {hist[j]}" for j in range(last + 1)) + "  (rounds whose path "
        "ended at each depth)",
    ]


def budget_e_text(cases, s: Mapping[str, Any]) -> str | None:
    """E by budget from a tree run's traces (``tree_trace``, exact under greedy), for a run that timed no other
    budget's verify (recorded before the what-if was): the figure is E only, said so. None without traces."""
    from specscope.profiler.analysis import tree_trace

    traces = tree_trace.tree_traces(cases)
    if not s.get("tree") or not traces:
        return None
    try:
        curve = tree_trace.curve(traces, s["k"])
    except ValueError:
        return None
    budget = s["tree"].get("budget")
    cells = ", ".join(f"{c['budget']}: {fmt(c['tokens_per_round'], '.2f')}" + (" (this run)" if c["budget"] == budget else "")
                      for c in curve)
    return (f"Tree budget what-if, from the trace (exact under greedy): tokens per round E by budget — {cells}. "
            f"Only E: what a verify of another budget costs was not timed in this run (it times budget {budget}).")


def _iv(iv, spec: str = ".3f") -> str:
    return f" ({format(iv[0], spec)}–{format(iv[1], spec)})" if iv else ""


def what_if_rows(w: "BudgetWhatIf") -> list[str]:
    """One line a budget: E (its interval), T_verify, the predicted speedup (its interval), the run's marked."""
    rows = []
    for p in w["points"]:
        e = fmt(p["tokens_per_round"], ".2f") + _iv(p["tokens_per_round_ci95"], ".2f")
        sp = (fmt(p["speedup"], ".3f", "×") + _iv(p["speedup_ci95"])) if p["speedup"] is not None else (
            "— (no E at this budget: record the run with --trace)" if p["tokens_per_round"] is None else "—")
        mark = "  ← this run: its prediction" if p["this_run"] else ("  ← best" if p["budget"] == w["best"] else "")
        rows.append(f"budget {p['budget']:>2}: E {e}, T_verify {fmt(p['t_verify_ms'], '.2f')} ms → {sp}{mark}")
    return rows


def what_if_verdict(w: "BudgetWhatIf") -> str:
    """The what-if's answer: the best budget by the point figures, those it does not tell apart, the run's."""
    from specscope.profiler.analysis.tree_what_if import CLOSE

    if w["best"] is None:
        return "no budget could be priced"
    best = next(p for p in w["points"] if p["budget"] == w["best"])
    text = f"best predicted: budget {w['best']} ({fmt(best['speedup'], '.3f', '×')})"
    if w["best"] == w["budget"]:
        text += ", the run's own"
    if w["close"]:
        text += (f"; within {CLOSE:.0%} of it (not told apart by this what-if): budget"
                 f"{'s' if len(w['close']) > 1 else ''} {', '.join(map(str, w['close']))}")
    return text


def what_if_notes(w: "BudgetWhatIf") -> list[str]:
    """Where every figure came from, and what was assumed."""
    from specscope.profiler.analysis.tree_what_if import SOURCES

    src = SOURCES.get(w["e_source"] or "", "E at other budgets unknown: no trace and no tree rounds")
    own, pred = w["own_verify_ms"], w["prediction_verify_ms"]
    scale = (f"; T_verify(B) timed beside the run at every budget and put on the prediction's scale (× "
             f"{fmt(pred, '.2f')} ÷ {fmt(own, '.2f')} ms, the what-if loop's own time at budget {w['budget']})"
             if own else "")
    cost = f"; timing the budgets' verifies cost {w['cost_s']:.1f} s" if w["cost_s"] is not None else ""
    return [f"{src}{scale}{cost}",
            f"{w['assumed']}; the speedup's interval is E's only (the times as measured)"]


def budget_what_if_lines(session, s: Mapping[str, Any]) -> list[str]:
    """The summary's budget lines: the priced what-if (``tree_what_if``), or E by budget where the run timed no other
    budget's verify, or nothing (a chain run, a tree run with neither)."""
    from specscope.profiler.analysis.tree_what_if import budget_what_if

    w = budget_what_if(session, s)
    if w is None:
        e_only = budget_e_text(session.cases, s)
        return [f"  budgets           {e_only}"] if e_only else []
    pad = " " * 20
    return ([f"  budget what-if    the one round model at each budget ({what_if_verdict(w)}):"]
            + [pad + r for r in what_if_rows(w)] + [pad + n for n in what_if_notes(w)])


def budget_what_if_text(session, s: Mapping[str, Any], w: "BudgetWhatIf | None" = None) -> str | None:
    """The same what-if as one block of text (the Division page; ``w``: the what-if already computed), or None."""
    from specscope.profiler.analysis.tree_what_if import budget_what_if

    w = w if w is not None else budget_what_if(session, s)
    if w is None:
        return budget_e_text(session.cases, s)
    return "\n".join([f"Tree budget what-if: {what_if_verdict(w)}.", *what_if_rows(w), *what_if_notes(w)])
