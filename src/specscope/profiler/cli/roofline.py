"""``specscope roofline``: the verify cost curve, machine limits and a roofline per block.

``add_parser(sub)`` adds the command to the ``specscope`` argparse subparsers; ``roofline_config(a)`` turns its flags
into the measurement (``run.roofline_run``: ``run --roofline`` builds the same from the run's configuration). The
engine runs in this process.
"""

from __future__ import annotations

from specscope.errors import SpecscopeError

from dataclasses import fields

from specscope.engine_adapter.params import EngineParams
from specscope.profiler.run.config import DRAFTERS
from specscope.profiler.run.context import add_context_args, parse_size
from specscope.profiler.run.measure_config import RooflineConfig
from specscope.profiler.cli.common import resolve_model_args
from specscope.profiler.cli.engine import add_model_args, measure_and_print, status_for


def add_parser(sub) -> None:
    r = sub.add_parser("roofline", help="the verify cost curve, machine limits and a roofline per block")
    add_model_args(r)
    r.add_argument("--positions", type=int, default=9, help="verify forwards over n = 1..N positions (1-17, default 9)")
    r.add_argument("--num-draft-tokens", "-k", type=int, default=2, help="the headline verify covers k+1 positions")
    r.add_argument("--drafter", choices=DRAFTERS, default="auto",
                   help="drafter whose acceptance and draft cost the division at the floor uses")
    r.add_argument("--max-tokens", type=int, default=48, help="tokens of the short speculative run for acceptance")
    r.add_argument("--no-division", action="store_true", help="skip the speculative run (no division at the floor)")
    r.add_argument("--reps", type=int, default=5, help="whole-graph repeats per n (interleaved across n)")
    r.add_argument("--block-reps", "--category-reps", dest="block_reps", type=int, default=2,
                   help="per-block ruler repeats per n (0: none; --category-reps: its old name)")
    r.add_argument("--bandwidth-mib", type=float, default=512, help="size of the bandwidth probe's array")
    r.add_argument("--matmul-n", type=int, help="size of the compute probe's square matmul (default 1024 CPU, 4096 GPU)")
    add_context_args(r, "measure at N tokens of a long document before the prompt (4096 or 4k), prefilled once and "
                        "timed on its own (docs: Long context)")
    t = r.add_argument_group("the cost surface (trees)")
    t.add_argument("--tree", action="store_true",
                   help="also measure the cost surface: chains over n and trees over nodes (best-first, wide, deep "
                        "shapes) at two contexts, per block, and where the knee is on this machine")
    t.add_argument("--tree-budgets", metavar="B,B,…",
                   help="the surface's tree budgets, drafted nodes 1-16 (default 2,4,8,16; implies --tree)")
    t.add_argument("--tree-contexts", metavar="N,N,…",
                   help="the surface's contexts, tokens of the long document before the prompt (default: --context "
                        "and 1k more, e.g. 0,1k; implies --tree)")
    r.set_defaults(func=cmd_roofline, temp=0.0, top_p=1.0)


def _budgets(a) -> list[int] | None:
    if a.tree_budgets:
        try:
            return sorted({int(x) for x in a.tree_budgets.split(",") if x.strip()})
        except ValueError:
            raise SpecscopeError(f"--tree-budgets: not a list of budgets: {a.tree_budgets!r} (e.g. 2,4,8,16)") from None
    return [2, 4, 8, 16] if a.tree or a.tree_contexts else None


def status(a):
    """The status of a roofline run: a bar counting its phases."""
    surface = (3 + max(a.reps, a.block_reps)) * max(2, len((a.tree_contexts or "").split(","))) + 1 if _budgets(a) else 0
    return status_for(a, "roofline", 2 + 3 + max(a.reps, a.block_reps) + 2 + (0 if a.no_division else 1) + surface)


def roofline_config(a) -> RooflineConfig:
    """The measurement the flags ask for (model references resolved to folders first)."""
    if not a.model and not a.demo:
        raise SpecscopeError("give a model (--model, a folder or a cached repo id) or --demo")
    resolve_model_args(a)
    shared = {f.name: getattr(a, f.name) for f in fields(EngineParams) if hasattr(a, f.name)}
    return RooflineConfig(**{**shared, "demo": bool(a.demo)}, positions=a.positions, max_tokens=a.max_tokens,
                          no_division=a.no_division, reps=a.reps, block_reps=a.block_reps,
                          bandwidth_mib=a.bandwidth_mib, matmul_n=a.matmul_n, prompt=a.prompt,
                          context=parse_size(a.context), context_kind=a.context_kind, context_file=a.context_file,
                          tree_budgets=_budgets(a),
                          tree_contexts=[parse_size(x) for x in a.tree_contexts.split(",") if x.strip()]
                          if a.tree_contexts else None)


def cmd_roofline(a) -> int:
    from specscope.profiler.analysis.cost_surface import format_surface
    from specscope.profiler.analysis.roofline import format_roofline

    cfg = roofline_config(a)
    cfg.validate()  # refused here, before a worker starts
    return measure_and_print(a, cfg, status(a), lambda roof: format_roofline(roof) + (
        format_surface(roof["surface"]) if roof.get("surface") else ""))
