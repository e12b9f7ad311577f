"""How a tree run's figures read (``--tree-budget``): the verify's width, acceptance as the accepted path, the tree
lines of the summary. A chain run's summary reads as it always did (every helper here gives the chain's words when
the summary has no ``tree``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specscope.profiler.analysis.formatting import fmt


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


def budget_what_if_text(cases, s: Mapping[str, Any]) -> str | None:
    """A tree run's budget what-if from its traces (``tree_trace``, exact under greedy): tokens per round at every
    budget the trace holds. Pricing another budget needs that verify's time (the verify cost over nodes), which this
    run did not time: the figure is E only, said so. None for a run without tree traces."""
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
