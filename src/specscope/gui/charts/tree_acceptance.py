"""A tree run's acceptance on the Live page's acceptance chart (``--tree-budget``): the accepted path by depth.

A tree round accepts a path of 0..k nodes, so what a chain's "acceptance over drafted tokens" would count (k drafts a
round) is not what a tree drafted (its budget of nodes, spread over depths). The chart shows instead the share of
rounds whose accepted path reached each depth d = 1..k (the summary's depth histogram, full rounds of the first
repeat: the same rounds as the tiles), with a 95% Wilson interval per depth (the round as the unit: each round either
reached depth d or not). Pure Python: the reports and the export use it too.
"""

from __future__ import annotations

from specscope.profiler.analysis import stats
from specscope.profiler.session.records import Summary

from .records import TreeAcceptance


def tree_acceptance(summary: Summary) -> TreeAcceptance | None:
    """The accepted path by depth from a tree run's summary; None for a chain run (or before a tree round counts)."""
    tree = summary.get("tree")
    if not tree or not tree["rounds"]:
        return None
    hist = list(tree["depth_histogram"])
    n = sum(hist)
    k = len(hist) - 1
    if n <= 0 or k < 1:
        return None
    deepest = min(k, tree["budget"] or k)  # a path of B nodes at most: no depth past the budget to show
    y: list[float] = []
    lo: list[float] = []
    hi: list[float] = []
    for d in range(1, deepest + 1):
        reached = sum(hist[d:])
        a, b = stats.wilson_interval(reached, n)
        y.append(100.0 * reached / n)
        lo.append(100.0 * a)
        hi.append(100.0 * b)
    return {"budget": tree["budget"], "k": k, "rounds": n, "depths": list(range(1, deepest + 1)), "y": y, "lo": lo, "hi": hi,
            "histogram": hist}
