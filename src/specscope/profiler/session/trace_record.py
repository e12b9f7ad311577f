"""The acceptance trace record a session holds per case (and tune per prompt): k_max, A(s) for every start position
of the target's own continuation, and under sampling M seeded ``draws`` of it. How a trace is walked into rounds is
``profiler.analysis.trace_walk``; this module only says whether a record is well formed."""

from __future__ import annotations


class TraceError(ValueError):
    """A trace record that cannot be walked, with a message that says why."""


def check(trace: dict) -> None:
    """Raise ``TraceError`` unless ``trace`` is a well-formed trace record."""
    if not isinstance(trace, dict):
        raise TraceError("an acceptance trace must be a JSON object")
    k_max = trace.get("k_max")
    if not isinstance(k_max, int) or k_max < 1:
        raise TraceError("an acceptance trace needs k_max, a positive integer")
    series = [trace.get("A")] + list(trace.get("draws") or [])
    for a in series:
        if not isinstance(a, list) or not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= k_max for x in a):
            raise TraceError(f"an acceptance trace's A(s) must be integers between 0 and k_max ({k_max})")
        if len(a) != len(trace["A"]):
            raise TraceError("every draw of an acceptance trace must have one entry per position")
    tree = trace.get("tree")
    if tree is not None:
        if not isinstance(tree, dict) or not all(isinstance(tree.get(x), int) and tree[x] >= 1 for x in ("b", "depth")):
            raise TraceError("a tree trace needs b and depth, positive integers")
        lists = tree.get("q") if tree.get("kind") == "per_parent" else tree.get("top_p")
        if len(tree.get("rank") or []) != len(trace["A"]) or len(lists or []) != len(trace["A"]):
            raise TraceError("a tree trace must have candidates and ranks for every position of A(s)")
