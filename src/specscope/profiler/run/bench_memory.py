"""One side of ``specscope bench memory``, measured in a fresh worker (``measure_config.MemoryPeakConfig``, kind
``memory_peak``): MLX's peak memory while specscope's engine or mlx-lm's does the same work, plain decoding or
speculative. A process per reading is the point: the peak is of that work alone, nothing another reading loaded or
cached is counted. The CLI pairs the readings (``cli.bench_equal.bench_memory``)."""

from __future__ import annotations

from specscope.profiler.run.bench_common import PROMPT, MemoryPeakConfig
from specscope.profiler.run.bench_records import PeakReading


def memory_peak(cfg: MemoryPeakConfig, say=lambda m: None, partial=None) -> PeakReading:
    import mlx.core as mx

    from specscope.engine_adapter.model.demo_model import demo_model_path
    from specscope.engine_adapter.model.loader import load_model

    cfg.validate()
    n, k = cfg.max_tokens, cfg.num_draft_tokens
    say(f"memory: {cfg.side}, {cfg.work}")
    if cfg.work == "plain":
        lm = load_model(cfg.model or demo_model_path("hybrid"))
        prompt = lm.encode(PROMPT)
        mx.reset_peak_memory()
        if cfg.side == "specscope":
            from specscope.engine_adapter.decode.decoding import plain_generate

            toks = [r["token"] for r in plain_generate(lm.model, prompt, n)]
        else:
            from mlx_lm.generate import stream_generate

            lm.tokenizer.eos_token_ids = set()  # EOS off, as on our side: both generate exactly N tokens
            toks = [int(r.token) for r in stream_generate(lm.model, lm.tokenizer, prompt, max_tokens=n)]
    else:
        t = load_model(cfg.model or demo_model_path("dense"))
        d = load_model(cfg.draft_model or demo_model_path("draft"))
        prompt = t.encode(PROMPT)
        mx.reset_peak_memory()
        if cfg.side == "specscope":
            from specscope.engine_adapter.decode.decoding import speculative_generate
            from specscope.engine_adapter.drafters.drafter import DraftModelDrafter

            toks = []
            for r in speculative_generate(t.model, prompt, DraftModelDrafter(d.model), k, n, round_kinds="end_to_end"):
                toks += [r["token"]] if r["event"] == "prefill" else r["emitted"]
        else:
            from mlx_lm.generate import speculative_generate_step

            toks = [int(x) for x, _, _ in speculative_generate_step(mx.array(prompt), t.model, d.model,
                                                                    num_draft_tokens=k, max_tokens=n)]
    return {"mlx_peak": int(mx.get_peak_memory()), "tokens": toks}
