"""The ``specscope`` command. With no arguments it opens the desktop app."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from specscope.errors import SpecscopeError

from specscope.profiler.cli.common import add_download_arg, check_output_path, fail, resolve_model_args
from specscope.profiler.run.config import BACKENDS, DRAFTERS, ROUND_KINDS, DistSpec, RunConfig, parse_hosts
from specscope.profiler.run.context import add_context_args
from specscope.profiler.cli.progress import add_progress_args


def add_run_args(ap: argparse.ArgumentParser) -> None:
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--model", help="mlx-lm model: a local folder, or a repo id (org/name[@revision]) from the local "
                     "Hugging Face cache")
    src.add_argument("--demo", action="store_true", help="use the built-in demo model (the shipped tiny trained one; "
                     "SPECSCOPE_DEMO=random: the synthetic one, built once into the cache)")
    # defaults: the run configuration's own (config.RunConfig, its engine share engine_adapter.params.EngineParams)
    ap.add_argument("--drafter", choices=DRAFTERS, default=RunConfig.drafter,
                    help="where drafts come from (auto: --draft-model if given, else the model's MTP head if it has one, else n-gram)")
    ap.add_argument("--draft-model", help="draft model folder or cached repo id (same tokenizer as the target)")
    ap.add_argument("--num-draft-tokens", "-k", type=int, default=RunConfig.num_draft_tokens,
                    help="draft tokens per round, k (1-16)")
    ap.add_argument("--max-tokens", type=int, default=RunConfig.max_tokens, help="new tokens per case")
    ap.add_argument("--temp", type=float, default=RunConfig.temp, help="sampling temperature (0 = greedy)")
    ap.add_argument("--top-p", type=float, default=RunConfig.top_p, help="nucleus sampling mass")
    ap.add_argument("--seed", type=int, default=RunConfig.seed)
    ap.add_argument("--suite", help="prompt suite JSON (default: the built-in 18 cases)")
    ap.add_argument("--cases", type=int, help="run only the first N cases, spread across content classes")
    ap.add_argument("--warmup", type=int, default=RunConfig.warmup, help="warm-up runs before measuring")
    ap.add_argument("--repeats", type=int, default=RunConfig.repeats,
                    help="measured repeats per case, plain and speculative in ABBA order; every repeat is kept, rates "
                         "are medians over repeats with their spread")
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
                    help="verify forwards and drafts timed apart per case for the prediction (default 3)")
    ap.add_argument("--trace", action="store_true",
                    help="record the drafter's acceptance trace A(s) along each case's plain output (E(k) for every k; "
                         "costs about one speculative run per case with an MTP head)")
    ap.add_argument("--mtp-hidden", choices=["post-norm", "pre-norm"], default=RunConfig.mtp_hidden,
                    help="hidden state fed to the MTP head")
    ap.add_argument("--allow-oversize", action="store_true", help="load even if the model looks larger than memory")
    add_context_args(ap, "N tokens of a long document before every case's prompt (4096 or 4k), prefilled once and timed "
                         "on its own; `sweep`: a list, e.g. 0,1k,4k,16k (see README: Long context)")
    add_download_arg(ap)
    add_distributed_args(ap)


def add_distributed_args(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("distributed runs (tensor parallel; README: Several machines)")
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


def distributed_from_args(a) -> dict:
    """The RunConfig fields of ``--ranks`` / ``--hosts`` / ``--hostfile`` / ``--backend`` (absent flags: none)."""
    hosts = getattr(a, "hosts", None)
    if hosts:
        hosts = parse_hosts(hosts)
    return {"ranks": getattr(a, "ranks", None), "hosts": hosts or None, "hostfile": getattr(a, "hostfile", None),
            "backend": getattr(a, "backend", None) or "ring"}


def config_from_args(a) -> RunConfig:
    resolve_model_args(a)
    cfg = RunConfig(
        model=a.model, demo=a.demo, drafter=a.drafter, draft_model=a.draft_model, num_draft_tokens=a.num_draft_tokens,
        max_tokens=a.max_tokens, temp=a.temp, top_p=a.top_p, seed=a.seed, suite=a.suite, cases=a.cases,
        warmup=a.warmup, repeats=a.repeats, breakdown=not a.no_breakdown, breakdown_reps=a.breakdown_reps,
        oracle_p=a.oracle_p, oracle_draft_ms=a.oracle_draft_ms, mtp_weights=a.mtp_weights, mtp_hidden=a.mtp_hidden, round_kinds=a.round_kinds, component_reps=getattr(a, "component_reps", 3), trace=getattr(a, "trace", False),
        allow_oversize=a.allow_oversize, discard_first=a.discard_first, cooldown=a.cooldown,
        cooldown_timeout_s=a.cooldown_timeout, **distributed_from_args(a), **_context_from_args(a),
    )
    cfg.validate()
    return cfg


def _context_from_args(a) -> dict:
    from specscope.profiler.run.context import parse_contexts, parse_size

    text = getattr(a, "context", "0") or "0"
    out = {"context_kind": getattr(a, "context_kind", "mixed"), "context_file": getattr(a, "context_file", None)}
    if getattr(a, "cmd", None) == "sweep":
        return {**out, "sweep": parse_contexts(text), "sweep_passes": a.passes}
    if "," in str(text):
        raise SpecscopeError(f"--context {text}: `run` takes one size; `specscope sweep --context {text}` runs several")
    return {**out, "context": parse_size(text)}


def cmd_run(a) -> int:
    from specscope.profiler.cli.progress import Progress, progress_wanted
    from specscope.profiler.run.runner import SessionSaveError, run_worker
    from specscope.profiler.analysis.summary import summarize
    from specscope.profiler.analysis.summary_text import format_summary

    cfg = config_from_args(a)
    if cfg.suite:
        from specscope.profiler.run.suite import load_suite

        load_suite(cfg.suite)  # fail fast on a bad suite, before loading a model
    out = check_output_path(a.output, a.force) if a.output else None
    progress = Progress(enabled=progress_wanted(a))
    try:
        res = run_worker(cfg, on_event=progress.update, autosave=str(out) if out else None)
    except SessionSaveError as exc:  # measured, but not written where asked: show the numbers anyway
        progress.close()
        print(format_summary(exc.result.session))
        return fail(str(exc), 2)
    progress.close()
    s = res.session
    if s.data["errors"] and s.status == "failed":
        msg = s.data["errors"][-1]
        if out:
            print(f"specscope: partial session saved to {out}", file=sys.stderr)
        if s.data.get("internal_errors"):  # a specscope bug: show the worker's traceback so it can be reported
            if res.stderr.strip():
                print(res.stderr.rstrip(), file=sys.stderr)
            msg = f"internal error (a bug in specscope; the traceback is above): {msg}"
        return fail(msg, 2 if res.returncode == 2 else 1)
    if getattr(a, "roofline", False) and s.status == "complete" and not (cfg.ranks or cfg.hosts or cfg.hostfile):
        _add_roofline(a, cfg, s, out)
    if a.json:
        print(json.dumps(summarize(s), indent=1, ensure_ascii=False))
    else:
        print(format_summary(s))
    if out:
        print(f"\nsession saved to {out}", file=sys.stderr)
    if s.status != "complete":
        print(f"specscope: run {s.status}: {'; '.join(s.data['errors'][-1:])}", file=sys.stderr)
        # 130 for a run the user stopped; a run that a fault ended (a rank, a killed worker) is a failure: 1
        return 130 if s.status == "incomplete" and "stopped by the user" in s.data["errors"] else 1
    return 0


def cmd_sweep(a) -> int:
    """``specscope sweep --context 0,1k,4k,16k``: the protocol at each context (``profiler.sweep``)."""
    from specscope.profiler.cli.progress import Progress, progress_wanted
    from specscope.profiler.run.runner import SessionSaveError, run_worker
    from specscope.profiler.analysis.sweep import format_sweep, sweep_figures

    cfg = config_from_args(a)
    out = check_output_path(a.output, a.force) if a.output else None
    progress = Progress(enabled=progress_wanted(a))

    def on_event(ev, session):
        progress.update(ev, session)
        if not a.jsonl:
            return
        # the app's Context page reads these lines: {"status": …} and {"context_sweep": the points so far}
        if ev.get("event") == "status":
            print(json.dumps({"status": ev.get("message", "")}, ensure_ascii=False), flush=True)
        elif ev.get("event") == "sweep_visit":
            print(json.dumps({"status": f"context {ev['context']:,}: visit {ev['visit'] + 1} of {ev.get('of', '?')}"}), flush=True)
        elif ev.get("event") == "sweep_visit_done" and ev.get("last"):
            sw = session.data.get("sweep") or {}
            print(json.dumps(finite_rows({"context_sweep": {"contexts": sw.get("contexts"), "order": sw.get("order"),
                                                            "points": sweep_figures(session)}}), ensure_ascii=False), flush=True)

    try:
        res = run_worker(cfg, on_event=on_event, autosave=str(out) if out else None)
    except SessionSaveError as exc:
        progress.close()
        print(format_sweep(sweep_figures(exc.result.session)))
        return fail(str(exc), 2)
    progress.close()
    s = res.session
    if s.data["errors"] and s.status == "failed":
        if out:
            print(f"specscope: partial session saved to {out}", file=sys.stderr)
        return fail(s.data["errors"][-1], 2 if res.returncode == 2 else 1)
    rows = sweep_figures(s)
    if a.json:
        print(json.dumps(finite_rows({"contexts": (s.data.get("sweep") or {}).get("contexts"),
                                      "order": (s.data.get("sweep") or {}).get("order"), "points": rows}),
                         indent=1, ensure_ascii=False))
    elif not a.jsonl:
        print(format_sweep(rows, s))
    if out:
        print(f"\nsession saved to {out}", file=sys.stderr)
    if s.status != "complete":
        print(f"specscope: sweep {s.status}: {'; '.join(s.data['errors'][-1:])}", file=sys.stderr)
        return 130 if s.status == "incomplete" and "stopped by the user" in s.data["errors"] else 1
    return 0


def finite_rows(x):
    from specscope.profiler.session.session import finite_json

    return finite_json(x)


def _add_roofline(a, cfg, session, out) -> None:
    """``run --roofline``: the verify curve, machine probes and draft steps for the run's model, drafter and k,
    measured apart from the run and kept in the session (saved again, atomically)."""
    from specscope.profiler.cli.roofline import roofline_data
    from specscope.profiler.analysis.session_file import save_session

    ns = argparse.Namespace(model=cfg.model, demo=cfg.demo, draft_model=cfg.draft_model, mtp_weights=cfg.mtp_weights,
                            mtp_hidden=cfg.mtp_hidden, oracle_p=cfg.oracle_p, oracle_draft_ms=cfg.oracle_draft_ms,
                            seed=cfg.seed, prompt=None, allow_oversize=cfg.allow_oversize, download=False,
                            positions=max(9, cfg.num_draft_tokens + 1), num_draft_tokens=cfg.num_draft_tokens,
                            drafter=(session.config.get("drafter") or {}).get("name") or cfg.drafter, max_tokens=48,
                            no_division=False, reps=5, block_reps=2, bandwidth_mib=512, matmul_n=None,
                            temp=cfg.temp, top_p=cfg.top_p)
    if ns.drafter not in ("ngram", "draft", "mtp", "oracle"):
        ns.drafter = "auto"
    say = (lambda m: print(f"specscope: {m}", file=sys.stderr)) if not a.quiet else (lambda m: None)
    say("measuring the verify cost curve apart from the run (--roofline)")
    session.data["roofline"] = roofline_data(ns, say)
    if out:
        save_session(session, out)


def cmd_demo_model(a) -> int:
    from specscope.engine_adapter.model.demo_model import build_demo_model

    if a.shape or a.layers is not None:
        return _cmd_real_shape(a)
    kind = "dense" if a.dense else ("draft" if a.draft else "hybrid")
    if a.random or kind == "dense":  # no trained dense model: --dense is always random
        path = build_demo_model(a.path, kind=kind, seed=a.seed)
    else:
        from specscope.engine_adapter.model.demo_model import copy_trained_demo

        path = copy_trained_demo(a.path, kind)
    print(f"wrote {kind} demo model to {path}")
    return 0


def _cmd_real_shape(a) -> int:
    if not a.shape:
        raise SpecscopeError("--layers needs --shape (e.g. --shape qwen3.5-35b-a3b --layers 4)")
    if a.dense or a.draft:
        raise SpecscopeError("--shape writes the released model's own layout; it does not combine with --dense or --draft")
    from specscope.engine_adapter.model.real_shape import FULL_LAYERS, SHAPES, build_real_shape_model, text_config

    from specscope.profiler.cli.progress import progress_bar, progress_wanted

    layers = a.layers if a.layers is not None else 4
    if a.shape not in SHAPES:
        raise SpecscopeError(f"unknown --shape {a.shape!r}; known: {', '.join(SHAPES)}")
    text_config(a.shape, layers)  # refuses a bad --layers before anything is written
    with progress_bar("writing", total=layers + 3, unit="part", enabled=progress_wanted(a)) as bar:
        def step(done, total, what):
            bar.update_to(done, what)
        path = build_real_shape_model(a.path, shape=a.shape, layers=layers, seed=a.seed, progress=step)
    print(f"wrote {a.shape} at its released dimensions, {layers} of {FULL_LAYERS[a.shape]} layers, "
          f"random 4-bit weights, to {path}")
    return 0


def cmd_inspect(a) -> int:
    if not a.path and not a.demo:
        raise SpecscopeError("give a model (a folder or a cached repo id like org/name) or --demo")
    resolve_model_args(a)  # before the engine is imported: it switches the hub libraries offline
    from specscope.engine_adapter.model.demo_model import default_demo_path
    from specscope.engine_adapter.model.inspect_model import describe_path, format_description
    d = describe_path(a.path or default_demo_path("hybrid"), allow_oversize=a.allow_oversize)
    print(json.dumps(d, indent=1) if a.json else format_description(d))
    return 0


def cmd_check(a) -> int:
    if not a.path and not a.demo:
        raise SpecscopeError("give a model (a folder or a cached repo id like org/name) or --demo")
    resolve_model_args(a)
    from specscope.engine_adapter.measure.doctor import REFUSED, format_report, full_report
    from specscope.engine_adapter.model.demo_model import default_demo_path
    from specscope.engine_adapter.model.loader import load_model

    from specscope.profiler.cli.progress import progress_bar, progress_wanted

    ks = tuple(range(1, a.max_k + 1))
    with progress_bar("check", total=sum(k + 1 for k in ks), unit="checks", enabled=progress_wanted(a)) as bar:
        bar.status("loading the model")
        lm = load_model(a.path or default_demo_path("hybrid"), allow_oversize=a.allow_oversize)

        def step(done, total, what):
            if done is None:
                bar.status(what)
            else:
                bar.update_to(done, what)
        rep = full_report(lm, ks=ks, mtp=not a.no_mtp, progress=step)
    print(json.dumps(rep, indent=1) if a.json else format_report(rep))
    return 1 if rep["class"] == REFUSED else 0


def cmd_predict(a) -> int:
    from specscope.profiler.analysis import stats

    if a.accept:
        try:
            acc = [float(x) for x in a.accept.split(",")]
        except ValueError:
            raise SpecscopeError("--accept takes comma-separated fractions, e.g. 0.8,0.6,0.4") from None
        if any(not 0 <= x <= 1 for x in acc) or any(b > c for c, b in zip(acc, acc[1:])):
            raise SpecscopeError("--accept values must be in [0, 1] and non-increasing (a_i ≥ a_i+1)")
        k, E = len(acc), 1 + sum(acc)
    else:
        if a.p is None:
            raise SpecscopeError("give --p P (per-token acceptance) or --accept a1,a2,...")
        if not 0 <= a.p <= 1:
            raise SpecscopeError("--p must be between 0 and 1")
        k = a.num_draft_tokens
        E = stats.tokens_per_round_from_p(a.p, k)
    for name in ("t_decode_ms", "t_verify_ms"):
        if getattr(a, name) <= 0:
            raise SpecscopeError(f"--{name.replace('_', '-')} must be positive")
    if a.t_draft_ms < 0:
        raise SpecscopeError("--t-draft-ms must be >= 0")
    d = stats.divide(a.t_decode_ms, a.t_verify_ms, a.t_draft_ms, E).to_dict()
    d["k"] = k
    d["plain_tok_s"] = 1000.0 / a.t_decode_ms
    if a.json:
        print(json.dumps(d, indent=1))
    else:
        print(f"tokens per round E        {d['tokens_per_round']:.3f}  (k={k})")
        print(f"predicted speedup         {d['predicted_speedup']:.3f}×")
        print(f"predicted tok/s           {d['predicted_tok_s']:.1f}  (plain {d['plain_tok_s']:.1f})")
        print(f"verify cost               {d['verify_multiple']:.2f} plain steps")
        print(f"break-even verify         ≤ {d['break_even_verify_ms']:.2f} ms  (≤ {d['break_even_multiple']:.2f} × T_decode)")
    return 0


def cmd_report(a) -> int:
    from specscope.profiler.renderers import render_to_file, side_tables
    from specscope.profiler.session.session import Session, SessionError

    out = check_output_path(a.output, a.force)
    try:
        s = Session.load(a.session)
    except SessionError as exc:
        raise SpecscopeError(str(exc)) from None
    for warning in render_to_file(s, out):
        print(f"specscope: warning: {warning}", file=sys.stderr)
    print(f"wrote {out}")
    for side in side_tables(s, out):
        print(f"wrote {side}")
    return 0


def cmd_compare(a) -> int:
    from specscope.profiler.renderers.compare_html import compare_to_file
    from specscope.profiler.session.session import Session, SessionError

    out = check_output_path(a.output, a.force)
    try:
        sa, sb = Session.load(a.a), Session.load(a.b)
    except SessionError as exc:
        raise SpecscopeError(str(exc)) from None
    compare_to_file(sa, sb, out, names=(Path(a.a).stem, Path(a.b).stem), timings_only=a.timings_only)
    print(f"wrote {out}")
    return 0


def cmd_bench(a) -> int:
    from specscope.profiler.cli.bench import run_bench

    resolve_model_args(a)
    return run_bench(a)


def cmd_capture(a) -> int:
    from specscope.profiler.cli import gpu_trace as capture

    capture.validate(a)  # Metal first: elsewhere this refuses before any model or folder is touched
    if a.check:
        print(f"GPU trace capture is available: MLX runs on {capture.metal_status()['device']}")
        return 0
    requested = a.model
    resolve_model_args(a)
    name = None
    if a.model:
        from specscope.model_ref import ref_for_folder

        name = ref_for_folder(a.model, requested).label
    return capture.run_capture(a, a.model, name)


def cmd_gui(a) -> int:
    scripted = a.screenshot or a.exit_when_done
    from specscope.profiler.cli.display import headless

    if not scripted and headless():
        raise SpecscopeError("no display to open the app on; use `specscope run` here, or set QT_QPA_PLATFORM=offscreen")
    if getattr(a, "ranks", None) is not None:
        DistSpec(ranks=a.ranks).validate()
    resolve_model_args(a)
    from specscope.profiler.renderers.plugins import COMMANDS, load

    return load(COMMANDS, "gui", "the desktop app")(a)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="specscope", description="Profile speculative decoding of local LLMs with MLX.")
    sub = ap.add_subparsers(dest="cmd")

    r = sub.add_parser("run", help="run the protocol headless and print the summary")
    add_run_args(r)
    r.add_argument("-o", "--output", help="write the session JSON here (autosaved while running)")
    r.add_argument("--force", action="store_true", help="overwrite --output if it exists")
    r.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_progress_args(r)
    r.add_argument("--roofline", action="store_true",
                   help="after the run, measure the verify cost curve and draft steps apart (as `specscope roofline`) "
                        "and keep it in the session: the summary then holds a prediction beside the ledger")
    r.set_defaults(func=cmd_run)

    sw = sub.add_parser("sweep", help="the protocol at several contexts: how verify cost, acceptance and the speedup "
                                      "change as the conversation grows")
    add_run_args(sw)
    sw.add_argument("--passes", type=int, default=RunConfig.sweep_passes,
                    help="visits of every context, each pass in the reverse order of the one before (default 2: "
                         "0,1k,4k,16k then 16k,4k,1k,0), so drift cannot pass for a context effect")
    sw.add_argument("-o", "--output", help="write the session JSON here (autosaved while running)")
    sw.add_argument("--force", action="store_true", help="overwrite --output if it exists")
    sw.add_argument("--json", action="store_true", help="print the per-context figures as JSON at the end")
    sw.add_argument("--jsonl", action="store_true", help="print one JSON line per context as each completes")
    add_progress_args(sw)
    sw.set_defaults(func=cmd_sweep)

    d = sub.add_parser("demo-model", help="write a demo model folder (the shipped trained one; --random: synthetic)")
    d.add_argument("path")
    d.add_argument("--random", action="store_true", help="random (synthetic) weights, the larger layout the fast tests use")
    kind = d.add_mutually_exclusive_group()
    kind.add_argument("--dense", action="store_true", help="a plain qwen3 model instead of the hybrid MoE")
    kind.add_argument("--draft", action="store_true", help="a small qwen3 draft model")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--shape", metavar="NAME", help="random weights at a released model's dimensions instead "
                   "(qwen3.5-35b-a3b), written a layer at a time")
    d.add_argument("--layers", type=int, metavar="N", help="with --shape: the first N decoder layers, 4 to 40 (default 4; "
                   "one in four is full attention; about 0.47 GiB per layer plus 0.55 GiB for embedding and head)")
    add_progress_args(d)
    d.set_defaults(func=cmd_demo_model)

    i = sub.add_parser("inspect", help="describe a local checkpoint")
    i.add_argument("path", nargs="?", metavar="MODEL", help="a model folder, or a repo id (org/name[@revision]) "
                   "from the local Hugging Face cache")
    i.add_argument("--demo", action="store_true")
    add_download_arg(i)
    i.add_argument("--json", action="store_true")
    i.add_argument("--allow-oversize", action="store_true")
    i.set_defaults(func=cmd_inspect)

    ck = sub.add_parser("check", help="can specscope profile this model correctly? (rollback exactness, MTP, windows)")
    ck.add_argument("path", nargs="?", metavar="MODEL", help="a model folder or a cached repo id")
    ck.add_argument("--demo", action="store_true")
    ck.add_argument("--json", action="store_true")
    ck.add_argument("--max-k", type=int, default=4, help="check rollback for k = 1..MAX_K (default 4)")
    ck.add_argument("--no-mtp", action="store_true", help="skip loading the MTP head")
    ck.add_argument("--allow-oversize", action="store_true")
    add_progress_args(ck)
    add_download_arg(ck)
    ck.set_defaults(func=cmd_check)

    p = sub.add_parser("predict", help="the division as a calculator")
    p.add_argument("--t-decode-ms", type=float, required=True)
    p.add_argument("--t-verify-ms", type=float, required=True)
    p.add_argument("--t-draft-ms", type=float, default=0.0)
    p.add_argument("--p", type=float)
    p.add_argument("--num-draft-tokens", "-k", type=int, default=1)
    p.add_argument("--accept", help="measured per-position acceptance a1,a2,... (overrides --p and -k)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_predict)

    rep = sub.add_parser("report", help="render a saved session (format from the extension: .html .pdf .csv .json .trace.json)")
    rep.add_argument("session")
    rep.add_argument("-o", "--output", required=True)
    rep.add_argument("--force", action="store_true")
    rep.set_defaults(func=cmd_report)

    c = sub.add_parser("compare", help="compare two sessions side by side")
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("-o", "--output", required=True)
    c.add_argument("--force", action="store_true")
    c.add_argument("--timings-only", action="store_true",
                   help="compare timings even across sampling regimes (acceptance is left out)")
    c.set_defaults(func=cmd_compare)

    b = sub.add_parser("bench", help="fidelity and speed against mlx-lm")
    b.add_argument("what", choices=["overhead", "spec-vs-mlx-lm", "rollback", "predict", "memory", "gui", "capture", "tune", "all"])
    src = b.add_mutually_exclusive_group()
    src.add_argument("--demo", action="store_true", help="the demo model (the default when no --model is given)")
    src.add_argument("--model")
    b.add_argument("--draft-model")
    add_download_arg(b)
    b.add_argument("--pairs", type=int, default=5, help="interleaved pairs (the minimum with --until-stable)")
    b.add_argument("--until-stable", action="store_true",
                   help="add pairs until the median ratio's 95%% interval is within ±1%% (up to --max-pairs)")
    b.add_argument("--max-pairs", type=int, default=30)
    b.add_argument("--max-tokens", type=int, default=64)
    b.add_argument("--num-draft-tokens", "-k", type=int, default=2)
    b.add_argument("--json", action="store_true")
    add_progress_args(b)
    b.set_defaults(func=cmd_bench)

    cap = sub.add_parser("capture", help="Metal GPU traces (.gputrace) of one decode step and one verify forward")
    src = cap.add_mutually_exclusive_group()
    src.add_argument("--model", help="a model folder or a cached repo id")
    src.add_argument("--demo", action="store_true", help="the synthetic demo model")
    add_download_arg(cap)
    cap.add_argument("--num-draft-tokens", "-k", type=int, default=2, help="draft tokens: the verify covers k+1 positions")
    cap.add_argument("-o", "--output", metavar="DIR", help="folder for decode.gputrace, verify-kK.gputrace, capture.json")
    cap.add_argument("--force", action="store_true", help="write into DIR even if it is not empty (replaces those files)")
    cap.add_argument("--suite", help="prompt suite JSON (default: the built-in suite); its first case is used")
    cap.add_argument("--case", help="the id of the suite case to use instead of the first")
    cap.add_argument("--allow-oversize", action="store_true")
    cap.add_argument("--json", action="store_true", help="print capture.json instead of the summary")
    cap.add_argument("--check", action="store_true", help="only say whether this machine can capture (exit 0) or not (2)")
    cap.set_defaults(func=cmd_capture)

    g = sub.add_parser("gui", help="open the desktop app")
    g.add_argument("--demo", action="store_true")
    g.add_argument("--model", help="a model folder or a cached repo id to select")
    add_download_arg(g)
    g.add_argument("--session", help="open a saved session")
    g.add_argument("--autorun", action="store_true")
    g.add_argument("--screenshot")
    g.add_argument("--exit-when-done", action="store_true")
    g.add_argument("--cases", type=int)
    g.add_argument("--max-tokens", type=int)
    g.add_argument("--drafter")
    g.add_argument("--num-draft-tokens", "-k", type=int)
    g.add_argument("--repeats", type=int, help="measured repeats per case (setup panel)")
    g.add_argument("--cooldown", action="store_true", help="cool down before each case (setup panel)")
    g.add_argument("--discard-first", type=int, metavar="N", help="leave the first N cases out of the summary (setup panel)")
    g.add_argument("--ranks", type=int, metavar="N", help="run N ranks on this machine (setup panel: Where)")
    g.add_argument("--view", help="page to show first (live, breakdown, division, verify_cost, tune, cases, history, compare)")
    g.add_argument("--size", metavar="WxH", help="window size, e.g. 1280x800 (for screenshots)")
    g.add_argument("--compare", metavar="B.json", help="open the Compare page with --session as A and this as B")
    g.set_defaults(func=cmd_gui)
    from specscope.profiler.cli import roofline as roofline_cli, trace as trace_cli, tune as tune_cli

    roofline_cli.add_parser(sub)
    tune_cli.add_parser(sub)
    trace_cli.add_parser(sub)  # ``specscope trace``: acceptance traces for a saved session's cases
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = build_parser()
    a = ap.parse_args(argv)
    if a.cmd is None:
        a = ap.parse_args(["gui"])
    try:
        return a.func(a)
    except SpecscopeError as exc:
        return fail(str(exc))
    except ImportError as exc:  # an installation problem, said as one (never a traceback)
        from specscope.profiler.renderers.plugins import import_error_message

        return fail(import_error_message(exc, f"`specscope {a.cmd}`"))
    except KeyboardInterrupt:
        return fail("interrupted", 130)


if __name__ == "__main__":
    sys.exit(main())
