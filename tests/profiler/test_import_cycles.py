"""The core's modules import each other in one direction only: no cycle among ``specscope.profiler``'s children.

A cycle hidden by an import inside a function is still a cycle (grimp sees those imports too); the shared pieces
live in their own modules (``pump``, ``cli_common``, ``engine_cli``, ``bench_common``, ``summary_core``, ``rounds``).
"""

import pytest

grimp = pytest.importorskip("grimp")

PARENT = "specscope.profiler"


def _child(module: str) -> str:
    return ".".join(module.split(".")[:3])


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_among_the_profiler_modules():
    graph = grimp.build_graph("specscope", cache_dir=None)
    edges: dict[str, set[str]] = {}
    for m in graph.find_descendants(PARENT):
        for imported in graph.find_modules_directly_imported_by(m):
            if imported.startswith(PARENT + ".") and _child(imported) != _child(m):
                edges.setdefault(_child(m), set()).add(_child(imported))
    assert _cycles(edges) == []


def test_the_check_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
