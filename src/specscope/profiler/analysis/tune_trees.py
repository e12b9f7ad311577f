"""``specscope tune`` over tree budgets (``--tree-budgets``): a drafter that drafts trees is tuned twice, as chains
over k (its own name) and as trees over budgets (``dflash+tree``), one table, one confirmation, one verdict rule.

A tree setting is (``<drafter>+tree``, budget B) at the depth limit K_max (the chain's k_max: for DFlash, the block's
drafts). Where a chain setting's second member is k, a tree setting's is B; the accepted path is at most K_max long
either way, so rollback and draft times are kept by accepted count 0..K_max as a chain's are.

- E(B): the acceptance trace's tree part walked at B (``tree_trace``: exact under greedy, as E(k) is for chains);
- T_verify(B), T_draft(B), the keep by accepted count and the bookkeeping: a tree round's parts timed apart at B
  (``measure.tree_components``: the drafter's own tree from the case's prefix, B + 1 nodes in one verify);
- confirmed B: end-to-end tree runs beside plain ones, their rounds checked against the trace's walk at B.

Pure Python (the analysis floor).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from specscope.drafter_kinds import DRAFTER_LABELS, TREE_DRAFTERS
from specscope.profiler.analysis import tree_trace
from specscope.profiler.analysis.trace_check import tree_run_mismatch as run_mismatch  # noqa: F401 (tune_trees' API)
from specscope.profiler.analysis.records import TraceFacts

TREE_SUFFIX = "+tree"


def tree_name(base: str) -> str:
    return base + TREE_SUFFIX


def is_tree(name: str) -> bool:
    return name.endswith(TREE_SUFFIX)


def base_of(name: str) -> str:
    """The drafter a setting's runs use (``dflash+tree`` -> ``dflash``)."""
    return name[: -len(TREE_SUFFIX)] if is_tree(name) else name


def label_of(name: str) -> str:
    base = DRAFTER_LABELS.get(base_of(name), base_of(name))
    return f"{base}, trees" if is_tree(name) else base


def setting_text(name: str, k: int) -> str:
    """How a person reads a setting: "k=5 with the DFlash drafter", "trees of budget 8 with the DFlash drafter"."""
    base = DRAFTER_LABELS.get(base_of(name), base_of(name))
    return f"trees of budget {k} with {base}" if is_tree(name) else f"k={k} with {base}"


def short_setting(name: str, k: int) -> str:
    """A setting in a table or a decision line: "the DFlash drafter k=5", "the DFlash drafter, tree budget 8"."""
    base = DRAFTER_LABELS.get(base_of(name), base_of(name))
    return f"{base}, tree budget {k}" if is_tree(name) else f"{base} k={k}"


def check_budgets(budgets: Sequence[int] | None, k_max: int) -> list[int]:
    """The budgets asked for, sorted and checked: each 1..64 nodes (a tree of B nodes needs B candidates a position
    at most, which the trace keeps up to 64)."""
    from specscope.errors import SpecscopeError

    out = sorted({int(b) for b in budgets or []})
    bad = [b for b in out if not 1 <= b <= 64]
    if bad:
        raise SpecscopeError(f"--tree-budgets: a budget is 1 to 64 nodes (got {bad[0]})")
    return out


def tree_drafters(names: Sequence[str]) -> list[str]:
    """Of the drafters tuned, those that draft trees."""
    return [n for n in names if n in TREE_DRAFTERS]


def tree_parts(traces: Sequence[Mapping[str, Any]] | None) -> list[dict]:
    return [t["tree"] for t in traces or [] if isinstance(t.get("tree"), dict)]


def walked(traces: Sequence[Mapping[str, Any]] | None, budget: int, depth: int) -> np.ndarray:
    """The accepted path lengths of a greedy tree run's full rounds at ``budget``, walked on the traces."""
    parts = tree_parts(traces)
    return np.asarray(tree_trace.at_budget(parts, budget, depth)["accepted"] or [0], dtype=float)


def round_points(trace: Mapping[str, Any], budget: int, depth: int, continuation: int) -> list[float]:
    """Where the full rounds of a greedy tree run at ``budget`` start on ``trace``'s case, as fractions of its
    continuation of ``continuation`` tokens: the round whose first verify input is the continuation's token s stands
    at (s + 1) / ``continuation`` (``components.round_point``). A tree round's parts are timed there
    (``tree_components.spread``): each round's own tree, once, not the trees of points spread over the positions (a
    long round holds more of them). Empty without a tree part."""
    parts = tree_parts([trace])
    if not parts or continuation < 1:
        return []
    return [(s + 1) / continuation for s, limit, _, _ in tree_trace.walk(parts[0], budget, depth) if limit == depth]


TREE_NOTE = (" A tree setting (budget B at the depth limit K_max) is priced from the trace's tree part walked at B (the "
             "candidates a position the drafter's tree is grown from, and where the target's tokens rank among them: "
             "exact under greedy, as E(k) is) and from a tree round's parts timed apart at B (its verify of B + 1 "
             "nodes, drafting and building the tree, the keep of the accepted path, the drafter's update).")


def tree_facts(traces: list[dict], full: list[dict], depth: int, budgets: list[int]) -> TraceFacts:
    """What a tree setting's traces say: E(B) walked at each budget, acceptance by depth at the largest, and E from
    the instrumented run's own rounds at the largest budget beside it (a check)."""
    parts = tree_parts(traces)
    figs = [tree_trace.at_budget(parts, b, depth) for b in budgets] if parts and budgets else []
    acc = [r["accepted"] for r in full]
    own: list[float | None] = [None for _ in budgets[1:]]
    own.append(1.0 + sum(acc) / len(acc) if acc else None)
    cost = [t.get("cost_ms", {}).get("total_ms") for t in traces]
    return {"positions": sum(len(p["rank"]) for p in parts), "estimate": any(t.get("estimate") for t in traces),
            "tokens_per_round": [f["tokens_per_round"] for f in figs],
            "acceptance_by_depth": figs[-1]["acceptance_by_depth"] if figs else [],
            "tokens_per_round_k_max_rounds": own,
            "cost_ms": sum(c for c in cost if c is not None) if any(c is not None for c in cost) else None,
            "budgets": list(budgets)}
