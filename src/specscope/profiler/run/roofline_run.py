"""The verify cost curve, measured: ``roofline_data(cfg)`` opens the engine and measures what ``specscope roofline``
and ``run --roofline`` ask for (``measure_config.RooflineConfig``), in the worker (``measurement``)."""

from __future__ import annotations

from dataclasses import replace

from specscope.errors import SpecscopeError

from specscope.profiler.run.config import RunConfig
from specscope.profiler.run.measure_config import DEFAULT_PROMPT, RooflineConfig
from specscope.profiler.run.records import ContextPrefill, RooflineRun
from specscope.profiler.session.surface import CostSurface


def roofline_data(cfg: RooflineConfig, say=lambda m: None, partial=None) -> RooflineRun:
    """Everything ``specscope roofline`` measures, as the JSON-able record it prints with ``--json`` (``run --roofline``
    keeps it in the session): ``analysis.roofline``'s figures, and what the measurement knows beside them."""
    from specscope.engine_adapter.tune_runs import TuneEngine
    from specscope.profiler.analysis.roofline import build_roofline


    cfg.validate()
    from specscope.profiler.run.context import context_tokens

    n_context = cfg.context
    longest = [n for n in [n_context, *(cfg.surface_contexts() if cfg.tree_budgets else [])] if n]
    if longest:  # refused before the weights load: beyond the model's window or this machine's memory
        from specscope.profiler.run.context_check import precheck

        precheck(RunConfig(demo=cfg.demo, model=cfg.model, max_tokens=cfg.max_tokens,
                           num_draft_tokens=max(cfg.positions, cfg.num_draft_tokens, 16)), [max(longest)])
    # the engine opens with every drafter it can make ("auto"); ``cfg.drafter`` names the one the division uses
    eng = TuneEngine.open(replace(cfg.engine_params(), drafter="auto"), status=say)
    prompt = eng.encode(cfg.prompt or DEFAULT_PROMPT)
    if not prompt:
        raise SpecscopeError("the prompt encodes to no tokens")
    question = prompt  # the prompt alone: the surface puts each of its contexts before it
    context_info: ContextPrefill | None = None
    if n_context:
        ctx = context_tokens(eng.encode, n_context, cfg.context_kind, cfg.context_file)
        say(f"prefilling {len(ctx):,} tokens of context once")
        context_info = {**eng.store_context(ctx), "kind": "file" if cfg.context_file else cfg.context_kind}
        prompt = ctx + prompt  # every forward below starts from a copy of the stored context
    sweep = (lambda pts: partial({"curve": pts, "partial": True})) if partial else None
    ins = eng.roofline_inputs(prompt, cfg.positions, cfg.reps, cfg.block_reps, cfg.bandwidth_mib, cfg.matmul_n, progress=say,
                              on_sweep=sweep)
    division = None
    k = cfg.num_draft_tokens
    if not cfg.no_division and k >= 1:
        name = cfg.drafter
        if name == "auto":
            have = eng.available_drafters()
            name = "draft" if cfg.draft_model and "draft" in have else ("mtp" if "mtp" in have else "ngram")
            name = "dflash" if "dflash" in have else name
        say(f"a short speculative run with {name} at k = {k} (acceptance, draft cost)")
        plain = eng.plain(prompt, cfg.max_tokens)
        run = eng.speculative(name, prompt, plain["tokens"], k, cfg.max_tokens, "instrumented")
        full = [r for r in run["rounds"] if r["drafted"] == k]
        if full:
            from specscope.profiler.analysis import stats

            acc = stats.acceptance_from_rounds([r["accepted"] for r in full], k)
            division = {"drafter": name, "k": k, "rounds": len(full), "acceptance": acc["per_position"],
                        "p": acc["p"], "tokens_per_round": acc["tokens_per_round"],
                        "t_draft_ms": stats.mean([r["draft_ms"] for r in full]),
                        # the rest of the whole round, from the same instrumented rounds: the rollback each paid, and
                        # its work after the rollback (the round's time less its timed parts)
                        "t_rollback_ms": stats.mean([r.get("rollback_ms") for r in full]),
                        "t_bookkeeping_ms": stats.mean([r["ms"] - (r["draft_ms"] or 0.0) - (r["verify_ms"] or 0.0)
                                                        - (r.get("rollback_ms") or 0.0) for r in full
                                                        if r.get("verify_ms") is not None]),
                        "plain_t_decode_ms": stats.mean(plain["step_ms"])}
    roof = build_roofline(ins["curve"], ins["costs"], ins["machine"], k=k, division=division)
    if cfg.tree_budgets:
        roof["surface"] = _surface(cfg, eng, question, ins["machine"], say)
        roof["headline"] += " " + roof["surface"]["headline"]
    out: RooflineRun = {**roof, "model": eng.describe()["model"], "prompt_tokens": len(prompt),
                        "weight_bytes_total": ins["weight_bytes_total"], "machine": ins["machine"],
                        "labels": ins["curve"]["labels"], "verify_tokens": ins["curve"]["tokens"],
                        "context_prefill": context_info}
    out["notes"] += ins["cost_notes"]
    kv = ins.get("kv") or {}
    if kv.get("bytes_per_context_token"):
        per, base = kv["bytes_per_context_token"], kv["step_bytes_no_context"]
        at = out.get("context") or len(prompt)
        out["attention_at_context"] = {
            "bytes_per_context_token": per, "step_bytes_no_context": base,
            "kv_share_of_step": per * at / (base + per * at),  # of a decode step's bytes at this context
            # the context at which full attention's KV reads are 10% (and 50%) of a decode step's bytes
            "context_at_10pct": 0.1 * base / (0.9 * per), "context_at_50pct": base / per}
    return out


def _surface(cfg: RooflineConfig, eng, prompt: list[int], machine, say) -> CostSurface:
    """The cost surface (``roofline --tree``): chains and trees at every context of ``cfg.surface_contexts()`` before
    ``prompt``, each context prefilled once and stored (its prefill is not in any figure)."""
    from specscope.profiler.analysis.cost_surface import build_surface
    from specscope.profiler.run.context import context_tokens

    prompts = []
    for n in cfg.surface_contexts():
        ctx = context_tokens(eng.encode, n, cfg.context_kind, cfg.context_file) if n else []
        if ctx:
            say(f"prefilling {len(ctx):,} tokens of context once (the surface)")
            eng.store_context(ctx)
        prompts.append(ctx + prompt)
    positions = max(cfg.positions, max(cfg.tree_budgets or [0]) + 1)
    raw = eng.surface_inputs(prompts, list(cfg.tree_budgets or []), min(positions, 17), cfg.reps, cfg.block_reps,
                             progress=say)
    return build_surface(raw, machine, width=cfg.tree_width)
