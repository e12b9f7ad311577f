"""The run's flags (``specscope run`` and ``specscope sweep``) and the RunConfig they make."""

from __future__ import annotations

import argparse

from specscope.errors import SpecscopeError

from specscope.profiler.cli.common import add_download_arg, add_dtype_arg, resolve_model_args
from specscope.profiler.analysis.sequential import UNTIL_DECIDED_CASES
from specscope.profiler.cli.preflight import add_ignore_arg
from specscope.profiler.cli.records import ContextArgs, DistributedArgs
from specscope.profiler.run.config import (BACKENDS, DRAFTER_ALIASES, DRAFTERS, MAX_K, ROUND_KINDS, RunConfig, parse_hosts,
                                         resolve_drafter_alias)
from specscope.profiler.run.context import add_context_args


def add_run_args(ap: argparse.ArgumentParser) -> None:
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--model", help="mlx-lm model: a local folder, or a repo id (org/name[@revision]) from the local "
                     "Hugging Face cache")
    src.add_argument("--demo", action="store_true", help="use the built-in demo model (the shipped tiny trained one; "
                     "SPECSCOPE_DEMO=random: the synthetic one, built once into the cache)")
    # defaults: the run configuration's own (config.RunConfig, its engine share engine_adapter.params.EngineParams)
    ap.add_argument("--drafter", choices=(*DRAFTERS, *DRAFTER_ALIASES), default=RunConfig.drafter,
                    help="where drafts come from (auto: --draft-model if given, else the model's MTP head if it has one, "
                    "else n-gram; dflash2: the DFlash drafter with a DFlash2 folder, with --demo the demo's own)")
    ap.add_argument("--draft-model", help="draft model folder or cached repo id (same tokenizer as the target); with "
                    "--drafter dflash: a DFlash drafter folder")
    ap.add_argument("--num-draft-tokens", "-k", type=int, default=None,
                    help=f"draft tokens per round, k (1-16; default {RunConfig.num_draft_tokens}, with --drafter dflash "
                         "the block size - 1)")
    ap.add_argument("--tree-budget", type=int, default=RunConfig.tree_budget, metavar="N",
                    help="verify a tree of at most N drafted nodes a round (grown best first from the drafter's "
                         "per-position distributions, at most k deep; dflash, dflash2, mtp and draft drafters); 0 (default): "
                         "a chain")
    ap.add_argument("--max-tokens", type=int, default=RunConfig.max_tokens, help="new tokens per case")
    ap.add_argument("--temp", type=float, default=RunConfig.temp, help="sampling temperature (0 = greedy)")
    ap.add_argument("--top-p", type=float, default=RunConfig.top_p, help="nucleus sampling mass")
    ap.add_argument("--seed", type=int, default=RunConfig.seed)
    ap.add_argument("--suite", help="prompt suite JSON (default: the built-in 18 cases)")
    ap.add_argument("--cases", type=int, help="run only the first N cases, spread across content classes")
    ap.add_argument("--warmup", type=int, default=RunConfig.warmup, help="warm-up runs before measuring")
    ap.add_argument("--repeats", type=int, default=RunConfig.repeats,
                    help="measured repeats per case, plain and speculative in ABBA order; every repeat is kept, rates "
                         "are pooled over repeats (tokens ÷ time), with their spread")
    ap.add_argument("--discard-first", type=int, default=RunConfig.discard_first, metavar="N",
                    help="measure the first N cases but leave them out of the summary (kept in the session, marked)")
    ap.add_argument("--cooldown", action="store_true",
                    help="before each case, wait until the clock probe is back within 2%% of its best reading")
    ap.add_argument("--cooldown-timeout", type=float, default=RunConfig.cooldown_timeout_s, metavar="S",
                    help="give up waiting for --cooldown after S seconds and measure anyway (default 120)")
    ap.add_argument("--no-breakdown", action="store_true", help="skip the per-block breakdowns")
    ap.add_argument("--breakdown-reps", type=int, default=RunConfig.breakdown_reps)
    ap.add_argument("--oracle-p", type=float, default=RunConfig.oracle_p,
                    help="oracle what-if: chance each draft token is right")
    ap.add_argument("--oracle-draft-ms", type=float, default=RunConfig.oracle_draft_ms,
                    help="oracle what-if: draft cost to charge per round")
    ap.add_argument("--mtp-weights", help="folder or cached repo id with the original checkpoint's mtp.* tensors")
    ap.add_argument("--round-kinds", choices=ROUND_KINDS, default=RunConfig.round_kinds,
                    help="paired (default): each case's speculative phase runs an end-to-end pass (one sync per round, as "
                         "a production engine: the measured speed) and an instrumented pass (draft/verify/rollback timed "
                         "apart: the ledger) on the same drafts; alternate: the two kinds round by round in one pass")
    ap.add_argument("--component-reps", type=int, default=RunConfig.component_reps,
                    help="rounds timed apart per case for the prediction, half beside the speculative pass before it and "
                         "half after, k+1 each (default %(default)s)")
    ap.add_argument("--engine", default="specscope", metavar="NAME",
                    help="whose speculative loop runs: specscope (its own), mlx-lm (mlx-lm's own loop with the draft "
                         "model), or an engine a plugin registers (entry-point group specscope.engines); plain "
                         "decoding, the components timed apart and the parity check stay specscope's")
    ap.add_argument("--engine-timeout", type=float, default=300.0, metavar="S",
                    help="stop another engine that yields nothing for S seconds; what it measured is kept")
    ap.add_argument("--until", choices=["decided"], default=None,
                    help="decided: measure the cases one at a time and stop as soon as the prediction's verdict is "
                         "decided (agrees / off), at a level corrected for looking after every case; at most "
                         f"{UNTIL_DECIDED_CASES} cases, "
                         "the suite again after its last (or --cases)")
    ap.add_argument("--trace", action="store_true",
                    help="record the drafter's acceptance trace A(s) along each case's plain output (E(k) for every k; "
                         "costs about one speculative run per case with an MTP head)")
    ap.add_argument("--mtp-hidden", choices=["post-norm", "pre-norm"], default=RunConfig.mtp_hidden,
                    help="hidden state fed to the MTP head")
    ap.add_argument("--allow-oversize", action="store_true", help="load even if the model looks larger than memory")
    add_dtype_arg(ap)
    add_context_args(ap, "N tokens of a long document before every case's prompt (4096 or 4k), prefilled once and timed "
                         "on its own; `sweep`: a list, e.g. 0,1k,4k,16k (see the docs: Long context)")
    add_ignore_arg(ap)
    add_download_arg(ap)
    add_distributed_args(ap)


def add_distributed_args(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("distributed runs (tensor parallel; docs: Several machines)")
    where = g.add_mutually_exclusive_group()
    where.add_argument("--ranks", type=int, metavar="N",
                       help="run N ranks on this machine under mlx.launch (ring backend over loopback): the target is "
                            "sharded N ways, drafting is replicated on every rank")
    where.add_argument("--hosts", metavar="H1,H2",
                       help="one rank per host under mlx.launch (password-less ssh, the same Python environment at the "
                            "same path on every host)")
    where.add_argument("--hostfile", metavar="FILE",
                       help="an mlx.launch hostfile (e.g. from `mlx.distributed_config`; needed for --backend jaccl)")
    g.add_argument("--backend", choices=BACKENDS, default=RunConfig.backend,
                   help="MLX distributed backend across hosts (default ring; jaccl needs --hostfile; "
                        "--ranks always uses ring over loopback)")


def distributed_from_args(a) -> DistributedArgs:
    """The RunConfig fields of ``--ranks`` / ``--hosts`` / ``--hostfile`` / ``--backend`` (absent flags: none)."""
    hosts = getattr(a, "hosts", None)
    if hosts:
        hosts = parse_hosts(hosts)
    return {"ranks": getattr(a, "ranks", None), "hosts": hosts or None, "hostfile": getattr(a, "hostfile", None),
            "backend": getattr(a, "backend", None) or "ring"}


def config_from_args(a) -> RunConfig:
    """The RunConfig of parsed flags; a flag a caller's parser lacks takes the config's own default (``D``, one place)."""
    resolve_model_args(a)
    a.drafter, a.draft_model = resolve_drafter_alias(a.drafter, a.draft_model, bool(getattr(a, "demo", False)))
    D = RunConfig
    cfg = RunConfig(
        model=a.model, demo=a.demo, drafter=a.drafter, draft_model=a.draft_model, num_draft_tokens=default_k(a),
        tree_budget=getattr(a, "tree_budget", D.tree_budget), max_tokens=a.max_tokens, temp=a.temp, top_p=a.top_p, seed=a.seed, suite=a.suite, cases=a.cases,
        warmup=a.warmup, repeats=a.repeats, breakdown=not a.no_breakdown, breakdown_reps=a.breakdown_reps,
        oracle_p=a.oracle_p, oracle_draft_ms=a.oracle_draft_ms, mtp_weights=a.mtp_weights, mtp_hidden=a.mtp_hidden, round_kinds=a.round_kinds, component_reps=getattr(a, "component_reps", D.component_reps), trace=getattr(a, "trace", D.trace),
        allow_oversize=a.allow_oversize, dtype=getattr(a, "dtype", None), discard_first=a.discard_first, cooldown=a.cooldown,
        cooldown_timeout_s=a.cooldown_timeout, ignore_preflight=getattr(a, "ignore_preflight", False),
        until=getattr(a, "until", D.until), engine=getattr(a, "engine", None) or D.engine,
        engine_timeout_s=getattr(a, "engine_timeout", None) or D.engine_timeout_s,
        **distributed_from_args(a), **_context_from_args(a),
    )
    cfg.validate()
    return cfg


def _context_from_args(a) -> ContextArgs:
    from specscope.profiler.run.context import parse_contexts, parse_size

    text = getattr(a, "context", "0") or "0"
    out: ContextArgs = {"context_kind": getattr(a, "context_kind", "mixed"), "context_file": getattr(a, "context_file", None)}
    if getattr(a, "cmd", None) == "sweep":
        return {**out, "sweep": parse_contexts(text), "sweep_passes": a.passes}
    if "," in str(text):
        raise SpecscopeError(f"--context {text}: `run` takes one size; `specscope sweep --context {text}` runs several")
    return {**out, "context": parse_size(text)}


def default_k(a) -> int:
    """``--num-draft-tokens`` as given; unset: the block size − 1 of a DFlash drafter (``--drafter dflash``, or ``auto``
    with a DFlash ``--draft-model``), read from its config.json; else the run's default."""
    k = getattr(a, "num_draft_tokens", None)
    if k is not None:
        return int(k)
    from specscope.engine_adapter.model.dflash_format import is_dflash_folder, read_dflash

    draft = getattr(a, "draft_model", None)
    if draft and getattr(a, "drafter", "auto") in ("dflash", "auto") and is_dflash_folder(draft):
        return min(read_dflash(draft).max_draft_tokens, MAX_K)
    if getattr(a, "drafter", None) == "dflash" and getattr(a, "demo", False) and not draft:
        from specscope.engine_adapter.model.dflash_format import DFLASH_DEMO_BLOCK

        return DFLASH_DEMO_BLOCK - 1
    return RunConfig.num_draft_tokens
