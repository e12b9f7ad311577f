"""The measurement protocol: what runs, in what order, and which events it emits.

For each case and repeat: a plain run, then (first repeat only) a breakdown of
one decode step and one verify forward, then a speculative run — same prompt,
same token budget. Warm-up runs come first and are not recorded. Events are
plain dicts handed to ``emit``; the worker process writes them as JSON lines.

Nothing here imports MLX at module level: the engine is imported when a run
starts, inside the worker process.
"""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path

from specscope.errors import SpecscopeError

from .config import RunConfig
from .stats import tok_s

def environment() -> dict:
    import mlx.core as mx

    try:
        from importlib.metadata import version

        mlx_version, mlx_lm_version = version("mlx"), version("mlx-lm")
    except Exception:  # pragma: no cover - metadata missing in odd installs
        mlx_version, mlx_lm_version = getattr(mx, "__version__", "?"), "?"
    device = str(mx.default_device())
    info = {}
    try:
        if mx.metal.is_available():
            info = {k: (v if isinstance(v, (int, float, str)) else str(v)) for k, v in mx.metal.device_info().items()}
    except Exception:
        info = {}
    return {
        "mlx": mlx_version,
        "mlx_lm": mlx_lm_version,
        "device": device,
        "device_name": info.get("device_name") or ("CPU" if "cpu" in device else device),
        "chip": _chip(),
        "os": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
    }


def _chip() -> str:
    if platform.system() == "Darwin":
        import subprocess

        try:
            return subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True, timeout=5).stdout.strip()
        except Exception:
            return platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _load(cfg: RunConfig, emit):
    from specscope.engine_adapter.demo_model import demo_model_path
    from specscope.engine_adapter.loader import check_same_vocabulary, load_model

    from specscope.model_ref import resolve_model

    if cfg.demo:
        emit({"event": "status", "message": "building/loading the demo model"})
        path = str(demo_model_path("hybrid"))
        label = "the demo model"
    else:  # a folder or a cached repo id, resolved the same way as on the command line (never the network)
        ref = resolve_model(cfg.model)
        path, label = ref.path, ref.label
    if cfg.mtp_weights and not Path(cfg.mtp_weights).expanduser().is_dir():
        cfg.mtp_weights = resolve_model(cfg.mtp_weights, what="MTP weights").path
    emit({"event": "status", "message": f"loading {label}"})
    target = load_model(path, allow_oversize=cfg.allow_oversize)
    if cfg.drafter == "auto":
        from specscope.engine_adapter.inspect_model import mtp_status

        cfg.drafter = "draft" if cfg.draft_model else ("mtp" if mtp_status(target.checkpoint)["available"] else "ngram")
    draft = None
    if cfg.drafter == "draft":
        dpath = cfg.draft_model or str(demo_model_path("draft"))
        draft = load_model(dpath, allow_oversize=cfg.allow_oversize)
        check_same_vocabulary(target, draft)
    return target, draft


def make_drafter(cfg: RunConfig, target, draft, plain_tokens: list[int] | None = None):
    from specscope.engine_adapter import drafters

    if cfg.drafter == "ngram":
        return drafters.NgramDrafter()
    if cfg.drafter == "draft":
        return drafters.DraftModelDrafter(draft.model, name=draft.path.name)
    if cfg.drafter == "oracle":
        from specscope.engine_adapter.oracle import OracleDrafter

        return OracleDrafter(plain_tokens or [], p=cfg.oracle_p, draft_ms=cfg.oracle_draft_ms, seed=cfg.seed, vocab_size=target.vocab_size)
    if cfg.drafter == "mtp":
        from specscope.engine_adapter.mtp import load_mtp_drafter

        return load_mtp_drafter(target, weights_path=cfg.mtp_weights, hidden=cfg.mtp_hidden)
    raise SpecscopeError(f"unknown drafter {cfg.drafter!r}")


def run_protocol(cfg: RunConfig, emit, should_stop=lambda: False) -> str:
    """Run the whole protocol, emitting events; return the final status."""
    cfg.validate()
    from specscope.engine_adapter.breakdown import measure_breakdown
    from specscope.engine_adapter.decoding import plain_generate, speculative_generate
    from specscope.engine_adapter.sampling import Sampling
    from .suite import load_suite, take_cases

    suite = load_suite(cfg.suite)
    cases = take_cases(suite["cases"], cfg.cases)
    target, draft = _load(cfg, emit)
    from specscope.engine_adapter.compat import REFUSED, cheap_report
    from specscope.engine_adapter.inspect_model import describe

    compat = cheap_report(target.model)  # refuse before measuring anything specscope cannot roll back exactly
    if compat["class"] == REFUSED:
        raise SpecscopeError(f"{compat['reasons'][0]} (see `specscope check`)")
    model_info = describe(target)
    ctx = int(target.checkpoint.text_config.get("max_position_embeddings") or 0)
    encoded = []
    for c in cases:
        toks = target.encode(c["prompt"])
        if not toks:
            raise SpecscopeError(f"case {c['id']}: the prompt encodes to no tokens")
        if ctx and len(toks) + cfg.max_tokens + cfg.num_draft_tokens + 1 > ctx:
            raise SpecscopeError(
                f"case {c['id']}: prompt ({len(toks)} tokens) + --max-tokens {cfg.max_tokens} exceeds the context window ({ctx})"
            )
        encoded.append({**c, "prompt_tokens": toks})
    sampling = Sampling(cfg.temp, cfg.top_p, cfg.seed)
    probe = make_drafter(cfg, target, draft, [0] * cfg.max_tokens)
    config = {
        **cfg.to_dict(),
        "model_path": str(target.path),
        "draft_model_path": str(draft.path) if draft else None,
        "sampling": sampling.to_dict(),
        "drafter": {"name": cfg.drafter, **probe.describe()},
        "compatibility": {"class": compat["class"], "reasons": compat["reasons"],
                          "rollback": {k: compat["rollback"][k] for k in ("mode", "methods", "text")}},
        "suite_name": suite["name"],
        "n_cases": len(encoded),
    }
    emit({"event": "run_started", "config": config, "environment": environment(), "model": model_info, "time": time.time(),
          "cases": [{k: c[k] for k in ("id", "category", "prompt")} for c in encoded]})

    def plain_run(c, record: bool):
        toks, ms = [], []
        for rec in plain_generate(target.model, c["prompt_tokens"], cfg.max_tokens, sampling):
            toks.append(rec.token)
            if rec.type == "step":
                ms.append(rec.ms)
            if record:
                ev = {"event": rec.type, "case": c["id"], "token": rec.token, "ms": rec.ms}
                if rec.type == "prefill":
                    ev.update(mode="plain", n_prompt=rec.n_prompt)
                else:
                    ev["i"] = rec.index
                emit(ev)
            if should_stop():
                return toks, None
        return toks, tok_s(len(ms), sum(ms))

    def spec_run(c, plain_tokens, record: bool):
        """Tokens and tok/s: from end-to-end rounds when the run has them (the speed a user gets), with the
        instrumented rounds' tok/s beside it (the cost of timing draft, verify and rollback apart)."""
        drafter = make_drafter(cfg, target, draft, plain_tokens)
        toks = []
        n = {"instrumented": 0, "end_to_end": 0}
        total = {"instrumented": 0.0, "end_to_end": 0.0}
        for rec in speculative_generate(target.model, c["prompt_tokens"], drafter, cfg.num_draft_tokens, cfg.max_tokens,
                                        sampling, round_kinds=cfg.round_kinds):
            if rec.type == "prefill":
                toks.append(rec.token)
                if record:
                    emit({"event": "prefill", "case": c["id"], "mode": "spec", "token": rec.token, "ms": rec.ms, "n_prompt": rec.n_prompt})
            else:
                toks.extend(rec.emitted)
                n[rec.kind] += len(rec.emitted)
                total[rec.kind] += rec.ms
                if record:
                    emit({"event": "round", "case": c["id"], "index": rec.index, "drafted": rec.drafted, "accepted": rec.accepted,
                          "emitted": rec.emitted, "draft_ms": rec.draft_ms, "verify_ms": rec.verify_ms,
                          "rollback_ms": rec.rollback_ms, "ms": rec.ms, "extra": rec.extra, "kind": rec.kind})
            if should_stop():
                return toks, None
        rates = {kind: tok_s(n[kind], total[kind]) for kind in n}
        return toks, (rates["end_to_end"] or rates["instrumented"], rates["instrumented"])

    # Warm-up: compile kernels and fill allocator caches for both paths; not recorded.
    for w in range(cfg.warmup):
        emit({"event": "status", "message": f"warm-up {w + 1}/{cfg.warmup}"})
        c = encoded[w % len(encoded)]
        pt, _ = plain_run(c, record=False)
        spec_run(c, pt, record=False)
        if should_stop():
            return "incomplete"

    import mlx.core as mx

    faults = []  # cases whose greedy speculative output left plain decoding with a clear margin
    for i, c in enumerate(encoded):
        info = {k: c[k] for k in ("id", "category", "prompt", "prompt_tokens")}
        plain_tokens = spec_tokens = None
        for r in range(cfg.repeats):
            emit({"event": "case_started", "case": info, "index": i, "repeat": r, "phase": "plain"})
            plain_tokens, tps = plain_run(c, record=True)
            if tps is None:
                return "incomplete"
            emit({"event": "repeat_done", "case": c["id"], "mode": "plain", "repeat": r, "tok_s": tps})
            if r == 0 and cfg.breakdown:
                bd = measure_breakdown(target.model, c["prompt_tokens"], plain_tokens, cfg.num_draft_tokens, reps=cfg.breakdown_reps)
                emit({"event": "breakdown", "case": c["id"], "breakdown": bd})
            if should_stop():
                return "incomplete"
            emit({"event": "case_started", "case": info, "index": i, "repeat": r, "phase": "spec"})
            spec_tokens, rates = spec_run(c, plain_tokens, record=True)
            if rates is None:
                return "incomplete"
            emit({"event": "repeat_done", "case": c["id"], "mode": "spec", "repeat": r, "tok_s": rates[0],
                  "instrumented_tok_s": rates[1]})
        if sampling.greedy and plain_tokens != spec_tokens:
            # Greedy speculative output must equal plain output; a difference is rounding only at a near-tie.
            from specscope.engine_adapter.divergence import divergence_event

            ev = divergence_event(target.model, c["id"], c["prompt_tokens"], plain_tokens, spec_tokens, cfg.num_draft_tokens + 1)
            emit(ev)
            if ev["verdict"] == "engine_fault":
                faults.append(c["id"])
        emit({"event": "case_done", "case": c["id"], "plain_text": target.decode(plain_tokens), "spec_text": target.decode(spec_tokens),
              "plain_pieces": [target.decode([t]) for t in plain_tokens], "spec_pieces": [target.decode([t]) for t in spec_tokens]})
        emit({"event": "memory", "peak_bytes": int(mx.get_peak_memory())})
    return "failed" if faults else "complete"
