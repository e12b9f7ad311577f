"""The prediction's inputs of a tree run (``--tree-budget N``), timed apart from the rounds they predict.

``components.measure_components`` times a chain round's parts; a tree round does other work, so the prediction of a
tree run times a *tree* round's parts ("one promise, one model, one clock": what is priced is what the rounds do). At a
point of the case (as the chain's: the case's prompt and its greedy continuation up to ``at``), on a cache restored
before each, ``reps`` times per earlier accepted count ``a`` = 0..k:

- **verify**: one tree verify (``cache.tree_verify.verify_tree``: N + 1 nodes, the ancestor mask, Gated DeltaNet
  nodes from their parents' states) and the accept read-back, timed to the sync. The tree is the run's drafter's own
  tree from this prefix (budget N, depth limit k): a tree shaped like the run's, not a chain of the same width;
- **rollback**: right after it, keeping a path of ``a`` nodes (``TreeForward.keep``, evaluated): the tree's
  rollback is this compaction of the path's entries (a path of ``a`` nodes where the tree is that deep, else its
  deepest path: the keep is a gather whose cost barely depends on the path's length; ``rollback_path_nodes`` says);
- **draft**: a drafter made ready as a real round leaves it (an earlier round that accepted ``a``, untimed), then one
  round as the tree loop runs it — the tree drafted (one block forward and the tree built on the host: building the
  tree is drafting), the verify on it, the read-back — less the verify timed alone just before (paired, as a chain's);
- **bookkeeping**: that round's work after the read-back other than its keep: the drafter's update with the accepted
  path's tokens and hidden states.

- **the budget what-if's verifies** (``budget_verify_ms``): after those, the verify of the drafter's own tree from the
  same prefix at every budget of the what-if (``WHAT_IF_BUDGETS`` and the run's), each shape once untimed, then
  ``what_if_reps`` timed each, the budgets' order reversed every rep: what a verify of another budget costs here, so
  the Division's what-if prices other budgets (``analysis.tree_what_if``). Only the verify: the draft, keep and
  bookkeeping are the run's budget's (the what-if says so).

The record is the chain's (``ComponentTimes``) plus ``tree``: the shape of the tree the verify timed (nodes, depth,
widths), the budget and the what-if trees' shapes, and ``budget_verify_ms`` / ``budget_verify_wall_ms``. None of these are the rounds' own forwards: the speculative runs never see this cache.
"""

from __future__ import annotations

import time

import mlx.core as mx
from mlx_lm.models.cache import make_prompt_cache

from specscope.engine_adapter.cache.hidden import install_tap, tapping
from specscope.engine_adapter.cache.rollback import CacheSnapshot
from specscope.engine_adapter.cache.tree import Tree
from specscope.engine_adapter.cache.tree_verify import install_tree, verify_tree
from specscope.engine_adapter.clock import ms_since
from specscope.engine_adapter.decode.decoding import prefill
from specscope.engine_adapter.decode.tree_decoding import accept
from specscope.engine_adapter.drafters.drafter import Draft
from specscope.engine_adapter.measure.components import DEFAULT_REPS, ready_drafter, round_point

from .records import ComponentTimes, ComponentTree

WHAT_IF_BUDGETS = (1, 2, 4, 8, 16)  # the budgets a tree run's what-if times a verify of (and the run's own)
WHAT_IF_REPS = 1  # timed verifies a budget per call (a run makes 2 × repeats calls a case)


def what_if_budgets(budget: int) -> list[int]:
    """The budgets whose verify a tree run of ``budget`` times for its what-if."""
    return sorted(set(WHAT_IF_BUDGETS) | {int(budget)})


def cut(tree: Tree, budget: int) -> Tree:
    """The tree a budget of ``budget`` grows from the same candidates: the first ``budget`` drafted nodes in node order
    (``cache.tree.grow`` appends nodes best first, a child after its parent, so every prefix is closed under parents
    and is what the heap pops first with the smaller budget; exact but for ties the candidates' order broke
    differently)."""
    n = min(len(tree), budget + 1)
    return Tree(tree.tokens[:n], tree.parents[:n], tree.depths[:n], tree.probs[:n])


def _path_of(tree: Tree, a: int) -> list[int]:
    """A path from the root of ``a`` drafted nodes (each level's first node under the one before), or the tree's
    deepest such path where it is not that deep."""
    path = [0]
    kids: dict[int, list[int]] = {}
    for i, p in enumerate(tree.parents):
        if p >= 0:
            kids.setdefault(p, []).append(i)
    while len(path) - 1 < a and kids.get(path[-1]):
        path.append(kids[path[-1]][0])
    return path


class _TreeBench:
    """The target prefilled to a point of the case (tree-ready caches), its snapshot, one drafter."""

    def __init__(self, model, drafter, sampling, context: list[int], last: int, k: int, budget: int, start):
        self.model, self.drafter, self.sampling = model, drafter, sampling
        self.context, self.last, self.k, self.budget = context, last, k, budget
        if drafter.needs_hidden:
            install_tap(model)
        self.mode = getattr(drafter, "hidden_mode", "post-norm")
        self.cache = cache = make_prompt_cache(model)
        install_tree(model, cache)
        with tapping(drafter.needs_hidden) as tap:
            mx.eval(prefill(model, cache, context, start=start))
            self.hidden = tap.hidden(self.mode) if tap else None
            if self.hidden is not None:
                mx.eval(self.hidden)
        mx.eval([c.state for c in cache])
        self.snapshot = CacheSnapshot(cache)
        self.seq = context + [last]
        self.rollback_ms: dict[int, list[float]] = {a: [] for a in range(k + 1)}
        self.path_nodes: dict[int, int] = {}
        self.tree = self.ready(0).draft_tree(last, k, budget)  # the verify's tree: the drafter's own from here

    def ready(self, a_prev: int):
        """The drafter as a real round leaves it: an earlier round from ``a_prev + 1`` positions back accepted
        ``a_prev`` (untimed; the drafter's update reads a chain's accepted drafts, as after a tree round's path)."""
        return ready_drafter(self.drafter, self.seq, self.hidden, len(self.context), a_prev, self.k)

    def _verify(self, tree: Tree, t0: float):
        with tapping(self.drafter.needs_hidden) as tap:
            logits, tf = verify_tree(self.model, self.cache, tree)
        path, bonus = accept(tree, logits, self.sampling, len(self.context))  # the one sync
        return ms_since(t0), tf, path, bonus, tap

    def verify_once(self, tree: Tree | None = None) -> float:
        self.snapshot.restore()
        t, *_ = self._verify(self.tree if tree is None else tree, time.perf_counter())
        return t

    def budget_verifies(self, budgets: list[int], reps: int) -> tuple[dict[str, list[float]], dict[str, list[int]], bool]:
        """The what-if: the drafter's own tree from this prefix at the largest budget (one draft, untimed), cut to its
        first B nodes for each budget B (``cut``: the tree budget B grows, best first); each verify once untimed, then
        ``reps`` timed each (the order reversed every rep). The times and each tree's (nodes, depth) by budget, and
        whether the cut at the run's budget is the run's tree node for node (the cut's check)."""
        big = self.ready(0).draft_tree(self.last, self.k, max(budgets))
        trees = {b: cut(big, b) for b in budgets}
        mine = trees.get(self.budget)
        same = mine is not None and mine.tokens == self.tree.tokens and mine.parents == self.tree.parents
        for b in budgets:
            self.verify_once(trees[b])
        times: dict[str, list[float]] = {str(b): [] for b in budgets}
        for r in range(reps):
            for b in (budgets[::-1] if r % 2 == 0 else budgets):
                times[str(b)].append(self.verify_once(trees[b]))
        return times, {str(b): [len(t) - 1, t.depth] for b, t in trees.items()}, same

    def rollback_once(self, a: int) -> float:
        self.snapshot.restore()
        _, tf, *_ = self._verify(self.tree, time.perf_counter())
        path = _path_of(self.tree, a)
        self.path_nodes[a] = len(path) - 1
        t0 = time.perf_counter()
        touched = tf.keep(path)
        if touched:
            mx.eval(touched)
        return ms_since(t0)

    def round_once(self, d) -> tuple[float, float, Tree]:
        """One tree round as the tree loop runs it (draft the tree, verify, read back); then its bookkeeping."""
        self.snapshot.restore()
        t0 = time.perf_counter()
        tree = d.draft_tree(self.last, self.k, self.budget)
        t_round, tf, path, bonus, tap = self._verify(tree, t0)
        t1 = time.perf_counter()
        kept = [tree.tokens[i] for i in path[1:]]
        hidden = mx.take(tap.hidden(self.mode), mx.array(path, dtype=mx.int32), axis=0) if tap else None
        d.update(len(path) - 1, Draft(kept), kept + [bonus], hidden=hidden)
        return t_round, ms_since(t1), tree


def measure_tree_components(model, make_drafter, sampling, prompt: list[int], continuation: list[int], k: int,
                            budget: int, reps: int = DEFAULT_REPS, at: float = 0.5, start=None,
                            what_if_reps: int = WHAT_IF_REPS) -> ComponentTimes:
    """T_verify of the run's tree (N + 1 nodes), T_draft (the tree drafted and built), T_bookkeeping and the keep per
    accepted count, timed apart at a point of the case (``components.measure_components``' record, plus ``tree``)."""
    if k < 1 or budget < 1:
        raise ValueError("a tree round needs k >= 1 and a budget of at least one node")
    if not 0.0 <= at <= 1.0:
        raise ValueError("at must lie in [0, 1]")
    t_start = time.perf_counter()
    context, last, _ = round_point(prompt, continuation, k, at)
    b = _TreeBench(model, make_drafter(), sampling, context, last, k, budget, start)
    b.verify_once()  # every shape once (not recorded)
    b.round_once(b.ready(0))
    verify, draft, round_, prior, book, same = [], [], [], [], [], 0
    for r in range(max(reps, 1) * (k + 1)):
        a = r % (k + 1)
        d = b.ready(a)  # the drafter first, then the verify and the keep, then the timed round (as the chain's order)
        t_verify = b.verify_once()
        b.rollback_ms[a].append(b.rollback_once(a))
        t_round, t_book, tree = b.round_once(d)
        verify.append(t_verify)
        round_.append(t_round)
        draft.append(t_round - t_verify)
        prior.append(a)
        book.append(t_book)
        same += tree.tokens == b.tree.tokens and tree.parents == b.tree.parents
    t_what_if = time.perf_counter()
    timed: ComponentTree = {"budget": budget, "nodes": len(b.tree) - 1, "depth": b.tree.depth, "widths": b.tree.widths(),
                            "rollback_path_nodes": {str(a): n for a, n in sorted(b.path_nodes.items())}}
    by_budget: dict[str, list[float]] = {}
    if what_if_reps > 0:
        by_budget, timed["budget_shapes"], timed["budget_cut_agrees"] = b.budget_verifies(what_if_budgets(budget),
                                                                                           what_if_reps)
    what_if_ms = ms_since(t_what_if)
    b.snapshot.restore()
    return {
        "context": len(context), "k": k, "reps": max(reps, 1),
        "verify_ms": verify, "draft_ms": draft, "draft_method": "in_round", "prior_accepted": prior,
        "bookkeeping_ms": book, "at": at, "round_ms": round_,
        # the timed rounds' trees are the verify's (the drafter's own from this prefix): the share that were
        "round_drafts_agree": same / len(round_) if round_ else None,
        "rollback_ms": {str(a): xs for a, xs in b.rollback_ms.items()},
        "rollback_mode": "tree keep",
        "tree": timed,
        **({"budget_verify_ms": by_budget, "budget_verify_wall_ms": what_if_ms} if by_budget else {}),
        "wall_ms": ms_since(t_start),
    }


TREE_POINTS = 4  # points of the case a tune's tree components are spread over (``spread``)
_SPREAD_LISTS = ("verify_ms", "draft_ms", "prior_accepted", "bookkeeping_ms", "round_ms", "draft_alone_ms")


def spread(measure_at, reps: int, points: int | list[float] = TREE_POINTS) -> ComponentTimes:
    """A tree round's parts timed at several points of the case, at least ``reps`` rounds per accepted count in all,
    the same number at each point, as one record (the lists joined; ``at``, ``context``: their means; ``tree`` and
    the budget what-if's verifies: the first point's, where the what-if ran; the other points grew other trees). ``points``: where (fractions of the continuation: the starts of the rounds a run at
    this budget makes, ``tune_trees.round_points``), or how many, evenly spaced over the continuation.

    A tree's verify costs what its shape costs (a Gated DeltaNet layer runs one recurrence step a level), and the
    shape is the tree the prefix grows: on the demo at budget 8 (depth 15) the real rounds' trees were 2 to 8 deep
    (verify 26.9–32.2 ms). One point prices every round at its own tree's shape; points evenly spaced over the
    *positions* land in a round as often as it is long, so the long rounds' deep trees count more than they occur
    (there: trees 7–8 deep, a verify 5% dearer than the rounds' own). The rounds' own starts price each round once.
    ``measure_at(at, reps)``: ``measure_tree_components`` at one point."""
    if isinstance(points, int):
        p = max(1, min(points, reps))
        ats = [(j + 0.5) / p for j in range(p)]
    else:
        if not points:
            raise ValueError("spread needs at least one point")
        p = max(1, min(len(points), reps))
        ats = [points[int((j + 0.5) * len(points) / p)] for j in range(p)]  # p of them, evenly spaced by index
    each = -(-reps // p)  # the same at every point (an uneven split would weight some shapes more): a few more in all
    recs = [measure_at(at, each) for at in ats]
    if p == 1:  # one point: its record as it is (its tree the one timed)
        return recs[0]
    out: ComponentTimes = dict(recs[0])  # type: ignore[assignment]  # the first point's tree and what-if
    for key in _SPREAD_LISTS:
        out[key] = [x for r in recs for x in r.get(key) or []]  # type: ignore[literal-required]
    rollback: dict[str, list[float]] = {}
    for r in recs:
        for a, xs in (r.get("rollback_ms") or {}).items():
            rollback.setdefault(a, []).extend(xs)
    agree = [r["round_drafts_agree"] for r in recs if r.get("round_drafts_agree") is not None]
    out["rollback_ms"] = rollback
    out["reps"] = sum(r["reps"] for r in recs)
    out["wall_ms"] = sum(r["wall_ms"] for r in recs)
    out["at"] = sum(r["at"] for r in recs) / p
    out["context"] = round(sum(r["context"] for r in recs) / p)
    out["round_drafts_agree"] = sum(agree) / len(agree) if agree else None
    return out

