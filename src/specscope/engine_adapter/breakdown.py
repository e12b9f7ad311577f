"""Where a decode step and a verify forward spend their time, by category.

Two rulers, always side by side:

- **whole graph**: one forward, evaluated once at the end (what decoding pays);
- **blocks**: the same forward with a barrier (``mx.eval``) before and after
  every block, each block's time added to its category.

whole − Σ blocks is the **inter-block overhead**; instrumented wall ÷ whole
wall − 1 is the **barrier distortion**. A barrier-free estimate comes from
timing the whole graph with one category skipped (its output replaced by
zeros), by difference. Norms and embeddings ("other") are not skipped: the
trunk's numbers blow up without them, which changes what is measured.
"""

from __future__ import annotations

import re
import time

import mlx.core as mx
import mlx.nn as nn
from mlx_lm.models.cache import make_prompt_cache

from .decoding import prefill
from .rollback import Checkpoint, capturing, install_capture, is_hybrid

CATEGORIES = ["linear_attention", "full_attention", "moe", "output_head", "other"]

_LINEAR = {"linear_attn", "mamba", "ssm", "mixer", "recurrent", "temporal_block"}
_ATTN = {"self_attn", "attention", "attn", "self_attention"}
_FFN = {"mlp", "block_sparse_moe", "feed_forward", "moe", "ffn"}
_LAYER = re.compile(r"(^|\.)layers\.(\d+)\.([A-Za-z_]+)$")

_state = {"mode": None, "skip": None, "acc": None}
_timed_classes: dict[type, type] = {}


def _arrays(obj, out):
    if isinstance(obj, mx.array):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _arrays(o, out)
    return out


def _skip_output(module, cat, args):
    """What a skipped block returns: zeros that still depend on its input.

    The dependence matters: MLX evaluates lazily, so an output that ignored
    its input would also skip everything upstream of it.
    """
    x = args[0]
    if cat == "output_head":
        rows = module.weight.shape[0]
        return mx.broadcast_to(x[..., :1] * 0, (*x.shape[:-1], rows))
    return x * 0


SKIPPABLE = ("linear_attention", "full_attention", "moe", "output_head")


def _timed(cls):
    if cls in _timed_classes:
        return _timed_classes[cls]

    def __call__(self, *args, **kwargs):
        cat = getattr(self, "_specscope_cat_", None)
        mode = _state["mode"]
        if mode == "skip" and _state["skip"] == cat:
            return _skip_output(self, cat, args)
        if mode != "time":
            return cls.__call__(self, *args, **kwargs)
        mx.eval(_arrays(args, []))
        t0 = time.perf_counter()
        out = cls.__call__(self, *args, **kwargs)
        mx.eval(_arrays(out, []))
        _state["acc"][cat] += (time.perf_counter() - t0) * 1000.0
        return out

    def as_linear(self, x):  # tied output head
        mode = _state["mode"]
        if mode == "skip" and _state["skip"] == "output_head":
            return mx.broadcast_to(x[..., :1] * 0, (*x.shape[:-1], self.weight.shape[0]))
        if mode != "time":
            return cls.as_linear(self, x)
        mx.eval(x)
        t0 = time.perf_counter()
        out = cls.as_linear(self, x)
        mx.eval(out)
        _state["acc"]["output_head"] += (time.perf_counter() - t0) * 1000.0
        return out

    attrs = {"__call__": __call__}
    if hasattr(cls, "as_linear"):
        attrs["as_linear"] = as_linear
    sub = type(f"Timed{cls.__name__}", (cls,), attrs)
    _timed_classes[cls] = sub
    return sub


def categorize(model) -> list[tuple[str, nn.Module, str]]:
    """(path, module, category) for every block we time, by architecture-independent names.

    Layer children named like attention / linear attention / MLP-MoE / norms
    map to their category; a layer with none of them is timed whole as
    "other", so an unknown architecture still profiles.
    """
    out = []
    layer_seen: dict[int, bool] = {}
    layer_mods: dict[int, tuple[str, nn.Module]] = {}
    for path, mod in model.named_modules():
        m = _LAYER.search(path)
        if m:
            idx, name = int(m.group(2)), m.group(3)
            cat = None
            if name in _LINEAR:
                cat = "linear_attention"
            elif name in _ATTN:
                cat = "full_attention"
            elif name in _FFN:
                cat = "moe"
            elif "norm" in name:
                cat = "other"
            if cat:
                out.append((path, mod, cat))
                layer_seen[idx] = True
            continue
        if re.search(r"(^|\.)layers\.(\d+)$", path):
            layer_mods[int(path.rsplit(".", 1)[1])] = (path, mod)
            continue
        if ".layers." in path:
            continue
        leaf = path.rsplit(".", 1)[-1]
        if leaf == "lm_head":
            out.append((path, mod, "output_head"))
        elif leaf in ("embed_tokens", "wte", "tok_embeddings") or (leaf.endswith("norm") and isinstance(mod, (nn.RMSNorm, nn.LayerNorm))):
            out.append((path, mod, "other"))
    for idx, (path, mod) in layer_mods.items():
        if not layer_seen.get(idx):
            out.append((path, mod, "other"))
    return out


class _Instrumented:
    def __init__(self, model):
        self.blocks = categorize(model)

    def __enter__(self):
        self.saved = []
        for _, mod, cat in self.blocks:
            self.saved.append((mod, mod.__class__))
            mod._specscope_cat_ = cat
            mod.__class__ = _timed(mod.__class__)
        return self

    def __exit__(self, *exc):
        for mod, cls in self.saved:
            mod.__class__ = cls
        _state.update(mode=None, skip=None, acc=None)


def _forward_ms(model, cache, tokens: mx.array, capture: bool) -> float:
    t0 = time.perf_counter()
    if capture:
        with capturing():
            out = model(tokens[None], cache=cache)
            mx.eval(out)
    else:
        out = model(tokens[None], cache=cache)
        mx.eval(out)
    return (time.perf_counter() - t0) * 1000.0


def _median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def measure_forward(model, cache, checkpoint, tokens: list[int], reps: int, skip: bool = True) -> dict:
    """The two rulers (and skip estimates) for one forward over ``len(tokens)`` positions."""
    x = mx.array(tokens, dtype=mx.uint32)
    capture = len(tokens) > 1 and is_hybrid(model)

    def run(mode=None, skip_cat=None):
        checkpoint.restore()
        _state.update(mode=mode, skip=skip_cat, acc={c: 0.0 for c in CATEGORIES})
        ms = _forward_ms(model, cache, x, capture)
        acc = dict(_state["acc"])
        return ms, acc

    with _Instrumented(model) as inst:
        present = sorted({cat for _, _, cat in inst.blocks}, key=CATEGORIES.index)
        run()  # warm this shape
        whole, instrumented, blocks = [], [], {c: [] for c in present}
        skipped = {c: [] for c in present if c in SKIPPABLE}
        for _ in range(reps):
            # Interleave rulers so drift on a shared machine hits them alike.
            whole.append(run()[0])
            ms, acc = run("time")
            instrumented.append(ms)
            for c in present:
                blocks[c].append(acc[c])
            if skip:
                for c in skipped:
                    skipped[c].append(run("skip", c)[0])
    checkpoint.restore()
    whole_ms = _median(whole)
    blocks_ms = {c: _median(v) for c, v in blocks.items()}
    block_sum = sum(blocks_ms.values())
    return {
        "positions": len(tokens),
        "reps": reps,
        "whole_ms": whole_ms,
        "instrumented_ms": _median(instrumented),
        "blocks": blocks_ms,
        "block_sum_ms": block_sum,
        "inter_block_ms": whole_ms - block_sum,
        "barrier_distortion": _median(instrumented) / whole_ms - 1.0,
        "skip_estimates": {c: whole_ms - _median(v) for c, v in skipped.items() if v},
    }


def measure_breakdown(model, prompt: list[int], continuation: list[int], k: int, reps: int = 3, skip: bool = True) -> dict:
    """Decode (1 position) and verify (k+1 positions) breakdowns at the end of ``prompt``."""
    if is_hybrid(model):
        install_capture(model)
    cache = make_prompt_cache(model)
    mx.eval(prefill(model, cache, prompt))
    cp = Checkpoint(cache)
    toks = (list(continuation) + [prompt[-1]] * (k + 1))[: k + 1]
    decode = measure_forward(model, cache, cp, toks[:1], reps, skip)
    verify = measure_forward(model, cache, cp, toks, reps, skip)
    ratios = {c: (verify["blocks"][c] / decode["blocks"][c]) if decode["blocks"].get(c) else None for c in decode["blocks"]}
    is_moe = any("switch_mlp" in p or "experts" in p for p, _ in model.named_modules())
    return {
        "decode": decode,
        "verify": verify,
        "ratios": ratios,
        "labels": {"moe": "MoE" if is_moe else "MLP (dense)"},
    }
