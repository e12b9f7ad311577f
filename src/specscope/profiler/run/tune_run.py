"""Tune, measured: ``tune_data(cfg)`` checks a ``measure_config.TuneConfig``, opens the engine and tunes
(``run_tune``), in the worker (``measurement``). ``run_tune`` runs the engine seam in the order the method needs
(``profiler.analysis.tune`` explains it) and records what it measures in an ``analysis.tune.TuneMeasured``; the
figures are ``analysis.tune``'s."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from specscope.engine_adapter.params import EngineParams
from specscope.errors import SpecscopeError

from specscope.drafter_kinds import TREE_DRAFTERS
from specscope.profiler.analysis import trace_check, tune_trees
from specscope.profiler.analysis.records import TuneResult
from specscope.profiler.analysis.tune import (WHAT_IF, DrafterInputs, TuneMeasured, drafter_facts, no_timings,
                                             tune_result)
from specscope.profiler.analysis.tune_confirm import MAX_REPS, MIN_REPS
from specscope.profiler.analysis.tune_predict import TermsBelowNoise
from specscope.profiler.analysis.tune_recommend import confirm_set
from specscope.profiler.session.trace_record import check as check_trace
from specscope.profiler.run.measure_config import TuneConfig


def tune_data(cfg: TuneConfig, say=lambda m: None, partial=None) -> TuneResult:
    """Everything ``specscope tune`` measures, as the JSON-able record it prints with ``--json`` (``run_tune``'s
    result, passed through)."""
    from specscope.engine_adapter.tune_runs import TuneEngine

    cfg.validate()
    drafters = cfg.drafters
    eng = TuneEngine.open(replace(EngineParams(**{f: getattr(cfg, f) for f in EngineParams.__dataclass_fields__}),
                                  drafter="dflash" if drafters and "dflash" in drafters else "auto"), status=say)
    k_max = cfg.k_max
    block = eng.engine.dflash  # the DFlash drafter's checked folder, when this run has one
    if block is not None and (drafters is None or "dflash" in drafters):
        if k_max is None:
            k_max = block.max_draft_tokens
        elif k_max > block.max_draft_tokens:
            raise SpecscopeError(f"--k-max {k_max} is more than {block.path.name}'s block holds: block size "
                                 f"{block.block_size} drafts at most {block.max_draft_tokens} a round")
    if cfg.prompt:
        prompts = [eng.encode(cfg.prompt)]
    else:
        from specscope.profiler.run.suite import load_suite, take_cases

        prompts = [eng.encode(c["prompt"]) for c in take_cases(load_suite(cfg.suite)["cases"], cfg.cases)]
    return run_tune(eng, prompts, k_max=k_max or 4, max_tokens=cfg.max_tokens, drafters=drafters, reps=cfg.reps,
                    confirm=cfg.confirm, progress=say, on_update=partial, beside_reps=cfg.beside_reps,
                    tree_budgets=cfg.tree_budgets)


RETIME_ATTEMPTS = 2  # times a k whose terms add up to nothing is timed again (2×, then 4× the rounds) before refusing


def run_tune(seam, prompts: list[list[int]], k_max: int = 4, max_tokens: int = 64, drafters: list[str] | None = None,
             reps: int | None = None, verify_reps: int = 5, confirm: str = "decide", progress=lambda message: None,
             on_update=None, component_reps: int = 8, beside_reps: int = 4,
             tree_budgets: list[int] | None = None) -> TuneResult:
    """The whole tuning run as a JSON-able record (``specscope tune --json``; ``session["tune"]``).

    ``on_update(result)``, if given, gets the result so far (``"partial": True``): the predictions once every
    drafter's K_max run is in, then again after every confirmation repeat, so a page fills in as it goes.
    ``component_reps``: rounds per earlier accepted count timed apart before the confirmations; ``beside_reps``: the
    same, re-timed right before and after each confirmation pair. ``tree_budgets``: each drafter that drafts trees
    is tuned as trees at these budgets too (``analysis.tune_trees``), at the depth limit ``k_max``."""
    _check_arguments(k_max, max_tokens, reps, prompts)
    info = seam.describe()
    run = _TuneRun(seam, prompts, progress, component_reps, beside_reps)
    names = _drafter_names(info, drafters)
    budgets = tune_trees.check_budgets(tree_budgets, k_max)
    trees = _tree_settings(seam, info, names, budgets)
    m = run.baseline(info, names + trees, k_max, max_tokens, reps, verify_reps)
    m.tree_budgets = budgets
    pred = {name: run.measure_tree(name) if tune_trees.is_tree(name) else run.measure_drafter(name) for name in m.names}
    m.confirming(confirm_set(pred, k_max, confirm))
    if on_update is not None:
        on_update(tune_result(m, partial=True))
    # ``reps`` None: repeat until the recommendation is decided (``tune.decision``: the pick against its rival and
    # its verdict, each at a level corrected for the looks, ``tune_decide``), or MAX_REPS
    fixed = reps is not None
    n_reps = reps if reps is not None else MAX_REPS
    for rep in range(n_reps):
        progress(f"confirmation {rep + 1}{'' if fixed else ' (up to ' + str(MAX_REPS) + ', until decided)'}: "
                 f"{len(m.plan)} speculative setting{'s' if len(m.plan) != 1 else ''}, each beside its own plain run")
        run.confirmation(rep)
        if rep + 1 >= n_reps:
            break
        so_far = tune_result(m, partial=True) if on_update is not None or not fixed else None
        if on_update is not None and so_far is not None:
            on_update(so_far)
        if not fixed and rep + 1 >= MIN_REPS and so_far is not None and so_far["decision"]["decided"]:
            break
    return tune_result(m, partial=False)


def _check_arguments(k_max: int, max_tokens: int, reps: int | None, prompts: list[list[int]]) -> None:
    if not 1 <= k_max <= 16:
        raise SpecscopeError("--k-max must be between 1 and 16")
    if max_tokens < 4:
        raise SpecscopeError("--max-tokens must be at least 4")
    if reps is not None and reps < 1:
        raise SpecscopeError("--reps must be at least 1")
    if not prompts:
        raise SpecscopeError("no prompts to tune on")


def _tree_settings(seam, info: dict[str, Any], names: list[str], budgets: list[int]) -> list[str]:
    """The tree settings to tune (``dflash+tree``: a drafter that drafts trees, at ``budgets``), or a refusal that
    says why there can be none."""
    if not budgets:
        return []
    which = tune_trees.tree_drafters(names)
    if not which:
        raise SpecscopeError(f"--tree-budgets: none of the drafters tuned ({', '.join(names)}) drafts trees (trees: "
                             f"{', '.join(TREE_DRAFTERS)})")
    if not info.get("greedy", True):
        raise SpecscopeError("--tree-budgets needs greedy decoding (--temp 0): a budget's tokens per round are walked "
                             "exactly from the acceptance trace there, and at temperature the trace is not recorded "
                             "for trees")
    if not hasattr(seam, "tree_refusal"):
        raise SpecscopeError("--tree-budgets: this engine cannot run tree rounds")
    for name in which:
        why = seam.tree_refusal(name)
        if why:
            raise SpecscopeError(f"--tree-budgets: {why}")
    return [tune_trees.tree_name(n) for n in which]


def _drafter_names(info: dict[str, Any], drafters: list[str] | None) -> list[str]:
    names = list(drafters or info["drafters"])
    unknown = [d for d in names if d not in info["drafters"] and d not in WHAT_IF]
    if unknown:
        have = ", ".join(info["drafters"] + sorted(WHAT_IF))
        raise SpecscopeError(f"drafter {unknown[0]!r} is not available for this model (available: {have})")
    return names


class _TuneRun:
    """One tune's engine runs, each step of the method (``analysis.tune``) in turn; what they return goes to ``m``."""

    def __init__(self, seam, prompts: list[list[int]], progress, component_reps: int, beside_reps: int):
        self.seam, self.prompts, self.progress = seam, prompts, progress
        self.component_reps, self.beside_reps = component_reps, beside_reps
        self.plain: list[dict[str, Any]] = []
        self.context: list[int] = []
        self.mid = 0

    def baseline(self, info: dict[str, Any], names: list[str], k_max: int, max_tokens: int, reps: int | None,
                 verify_reps: int) -> TuneMeasured:
        """Steps 1 and 2: plain decoding of every prompt, then the verify curve at mid-run context."""
        self.progress("plain decoding")
        self.plain = [self.seam.plain(p, max_tokens) for p in self.prompts]
        self.mid = max_tokens // 2
        self.context = list(self.prompts[0]) + self.plain[0]["tokens"][:self.mid]
        self.progress(f"verify curve over n = 1..{k_max + 1} at context {len(self.context)}")
        verify = self.seam.verify_samples(self.context, self.plain[0]["tokens"][self.mid:], k_max + 1, verify_reps)
        self.m = TuneMeasured(info=info, names=names, k_max=k_max, max_tokens=max_tokens, prompts=len(self.prompts),
                              reps=reps, plain_steps=[ms for r in self.plain for ms in r["step_ms"]],
                              context=len(self.context), verify=verify,
                              checked=trace_check.Exactness(info.get("greedy", True)))
        return self.m

    def _pairs(self):
        return zip(self.prompts, self.plain)

    def measure_drafter(self, name: str) -> list[dict]:
        """Step 3 for one drafter: its K_max run, draft steps at k = 1, its traces and its rounds timed apart; then
        its predictions (step 4), re-timing a k whose terms add up to nothing. Returns the predictions."""
        m, seam, k_max, n = self.m, self.seam, self.m.k_max, self.m.max_tokens
        self.progress(f"{name}: a speculative run at k = {k_max}")
        # The oracle's draws depend on a seed: its K_max run covers every seed the confirmations use (one per repeat),
        # so acceptance is measured on the same draws it is held against. Real greedy drafters need one run.
        # With repeats chosen adaptively (reps None) that is up to MAX_REPS seeds.
        seeds = range(m.reps if m.reps is not None else MAX_REPS) if name in WHAT_IF else [0]
        runs = [seam.speculative(name, p, pl["tokens"], k_max, n, "instrumented", seed=s)
                for s in seeds for p, pl in self._pairs()]
        full = [r for run in runs for r in run["rounds"] if r["drafted"] == k_max]
        draft_1 = []
        if k_max > 1:
            self.progress(f"{name}: draft steps at k = 1")
            short = [seam.speculative(name, p, pl["tokens"], 1, max(4, n // 2), "instrumented")
                     for p, pl in self._pairs()]
            draft_1 = [r["draft_ms"] for run in short for r in run["rounds"] if r["drafted"] == 1]
        tr = None
        if hasattr(seam, "trace"):  # the acceptance trace of every prompt (every oracle seed): E(k) walked on it
            self.progress(f"{name}: acceptance trace over {n} tokens × {len(self.prompts)} prompts")
            wide = {"tree_b": max(m.tree_budgets)} if tune_trees.tree_name(name) in m.names else {}
            tr = [seam.trace(name, p, pl["tokens"], k_max, seed=s, **wide) for s in seeds for p, pl in self._pairs()]
            for t in tr:
                check_trace(t)
            m.traces[name] = tr
            m.checked.traced(name, tr, seeds)
        m.inputs[name] = DrafterInputs(full, draft_1, tr, {}, {})
        timeable = hasattr(seam, "components") and name not in WHAT_IF
        if timeable:
            self.progress(f"{name}: rounds timed apart at k = 1..{k_max}")
            for k in range(1, k_max + 1):
                self._time_apart(name, k, self.component_reps)
        pred = self._predict(name, timeable)
        m.per_drafter[name] = drafter_facts(name, full, draft_1, tr, k_max)
        return pred

    def _time_apart(self, name: str, k: int, n_reps: int) -> None:
        """What drafting adds to a round at k, and the round's bookkeeping, timed apart as run's prediction does
        (added to what was timed there before: nothing measured is dropped); a tree setting's verify and keep too."""
        inp = self.m.inputs[name]
        comps = [self._components(name, i, k, n_reps) for i in range(len(self.prompts))]
        inp.in_round.setdefault(k, []).extend(x for c in comps for x in c["draft_ms"])
        if all(len(c.get("bookkeeping_ms") or []) == len(c["draft_ms"]) for c in comps):
            inp.book.setdefault(k, []).extend(x for c in comps for x in c["bookkeeping_ms"])
        else:  # bookkeeping timed for only some rounds cannot be weighted with them
            inp.book.pop(k, None)
        if inp.verify is not None and inp.rollback is not None:
            inp.verify.setdefault(k, []).extend(x for c in comps for x in c["verify_ms"])
            for c in comps:
                for a, xs in (c.get("rollback_ms") or {}).items():
                    inp.rollback.setdefault(k, {}).setdefault(int(a), []).extend(xs)

    def _components(self, name: str, i: int, k: int, reps: int):
        """``components`` at k on prompt ``i``, or for a tree setting a tree round's at budget k (depth limit K_max),
        timed at the starts of the rounds a run at k makes there (walked on the prompt's trace)."""
        prompt, plain = self.prompts[i], self.plain[i]["tokens"]
        if tune_trees.is_tree(name):
            traces = self.m.traces.get(name) or []
            at = tune_trees.round_points(traces[i], k, self.m.k_max, len(plain)) if i < len(traces) else []
            return self.seam.components(tune_trees.base_of(name), prompt, plain, self.m.k_max, reps, tree_budget=k,
                                        **({"points": at} if at else {}))
        return self.seam.components(name, prompt, plain, k, reps)

    def _speculative(self, name: str, prompt: list[int], plain: list[int], k: int, n: int, kinds: str, seed: int = 0):
        """A speculative run at k, or for a tree setting a tree run at budget k (depth limit K_max)."""
        if tune_trees.is_tree(name):
            return self.seam.speculative(tune_trees.base_of(name), prompt, plain, self.m.k_max, n, kinds, seed=seed,
                                         tree_budget=k)
        return self.seam.speculative(name, prompt, plain, k, n, kinds, seed=seed)

    def measure_tree(self, name: str) -> list[dict]:
        """Step 3 for a tree setting (``tune_trees``): a tree run at the largest budget (instrumented), the base
        drafter's traces (recorded with the candidates a position), and a tree round's parts timed apart at every
        budget; then its predictions."""
        m, n, depth, top = self.m, self.m.max_tokens, self.m.k_max, max(self.m.tree_budgets)
        base = tune_trees.base_of(name)
        self.progress(f"{name}: a tree run at budget {top}, depth {depth}")
        runs = [self._speculative(name, p, pl["tokens"], top, n, "instrumented") for p, pl in self._pairs()]
        full = [r for run in runs for r in run["rounds"] if r.get("full")]
        tr = m.traces.get(base)
        if not tr or not tune_trees.tree_parts(tr):
            raise SpecscopeError(f"--tree-budgets: {base}'s acceptance traces hold no tree part to walk budgets on")
        m.traces[name] = tr
        m.checked.traced(name, tr, [0])
        m.inputs[name] = DrafterInputs(full, [], tr, {}, {}, {}, {})
        self.progress(f"{name}: tree rounds timed apart at budgets {', '.join(map(str, m.tree_budgets))}")
        for b in m.tree_budgets:
            self._time_apart(name, b, self.component_reps)
        pred = self._predict(name, True)
        m.per_drafter[name] = drafter_facts(name, full, [], tr, depth, m.tree_budgets)
        return pred

    def _predict(self, name: str, timeable: bool) -> list[dict]:
        m = self.m
        in_round = m.inputs[name].in_round
        for attempt in range(RETIME_ATTEMPTS + 1):
            try:
                return m.predictions(name, m.plain_steps)
            except TermsBelowNoise as below:
                # One stall in a verify timed alone can sink a k's few paired differences below zero; a refusal
                # then would lose every run so far. Time that k again, with more rounds, before refusing.
                if not timeable or attempt == RETIME_ATTEMPTS or below.k not in in_round:
                    raise
                more = self.component_reps * 2 ** (attempt + 1)
                self.progress(f"{name}: at {'tree budget' if tune_trees.is_tree(name) else 'k'} = {below.k} the terms timed apart add up to nothing (noise): timing "
                              f"{more} more rounds per accepted count there")
                self._time_apart(name, below.k, more)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _time_beside(self, name: str, k: int, rep: int) -> None:
        """The prediction's timings re-taken right before and after a confirmation pair (never inside it), so drift
        on a shared machine hits the prediction and the measurement alike: for a real drafter, one round per earlier
        accepted count run as an end-to-end round runs it (``components``: verify with the drafter's hidden-state tap
        and accept read-back, what drafting adds, rollback by accepted count); else the whole-graph verify forward."""
        got = no_timings()
        if hasattr(self.seam, "components") and name not in WHAT_IF:
            i = rep % len(self.prompts)
            c = self._components(name, i, k, self.beside_reps)
            got["draft"] = list(c["draft_ms"])
            if len(c.get("bookkeeping_ms") or []) == len(c["draft_ms"]):
                got["bookkeeping"] = list(c["bookkeeping_ms"])
            for a, xs in (c.get("rollback_ms") or {}).items():
                got["rollback"].setdefault(int(a), []).extend(xs)
            got["verify"] = list(c.get("verify_ms") or [])
        if not got["verify"]:
            tail = self.plain[0]["tokens"][self.mid:]
            got["verify"] = list(self.seam.verify_samples(self.context, tail, k + 1, 2, ns=[k + 1])[k + 1])
        self.m.add_beside(name, k, rep, got)

    def confirmation(self, rep: int) -> None:
        """Step 5, one repeat: every planned setting's A/B pair, the prediction's timings re-taken around each."""
        m, n = self.m, self.m.max_tokens
        order = m.plan[rep % len(m.plan):] + m.plan[: rep % len(m.plan)]  # rotate, so no setting always runs first
        for name, k in order:
            # Each speculative run is held against a plain run made right before it (A/B pairs, as bench does), and the
            # prediction's timings are re-taken right before and after the pair (apart from both).
            self._time_beside(name, k, rep)
            steps = [ms for p in self.prompts for ms in self.seam.plain(p, n)["step_ms"]]
            runs = [self._speculative(name, p, pl["tokens"], k, n, "end_to_end", seed=rep) for p, pl in self._pairs()]
            m.checked.confirm(name, k, rep, m.inputs[name].traces, [pl["tokens"] for pl in self.plain], runs,
                              tree_depth=m.k_max if tune_trees.is_tree(name) else None)
            self._time_beside(name, k, rep)
            m.add_pair(name, k, steps, [r for run in runs for r in run["rounds"]])
