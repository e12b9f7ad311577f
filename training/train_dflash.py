"""Train the demo's DFlash drafter against the frozen, shipped trained demo (``tiny-trained-demo``).

The drafter is specscope's own ``DFlashModel`` (2 layers, block 16, reading the target's layers 1 and 3: the config
``dflash_demo.dflash_config`` writes for this target), trained as the DFlash paper (arXiv 2602.06036) trains one:

- data: the *target's own* greedy continuations (what a drafter must guess at greedy decoding), generated here in
  batches from prompts cut out of the demo's corpus (the same Debian/CPython corpus, the same suite 8-gram filter as
  ``train_demo.py``, whose tokenizer, corpus reader and filter are reused), and the target's hidden states at the
  drafter's layers from one forward over each whole sequence (frozen, computed once);
- anchors: random positions ``n`` in the generated part; the block ``[token n, mask × (B−1)]`` sits at positions
  ``n .. n+B−1``, attends to the context features of positions ``< n`` and to itself in both directions (as at
  inference, ``drafters/dflash.py``); several anchors per sequence share one forward (each block is its own batch row);
- loss: cross-entropy of block position ``i`` against token ``n+i`` through the target's frozen output head, weighted
  ``exp(-(i-1)/gamma)`` (the paper's decay: early positions gate every later one).

Not run in CI. Reproduce (see training/README.md):
    python training/build_corpus.py --debs DEBS --stdlib PYTHON_STDLIB -o CORPUS
    nice -n 15 python training/train_dflash.py --corpus CORPUS --out OUT --minutes 30
    cp -r OUT/export src/specscope/assets/demo_trained/tiny-trained-demo-dflash

Seeds, hyperparameters, data sizes and the time it took are written to OUT/training_log.json.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
import numpy as np
from mlx.utils import tree_flatten

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_demo import CLASSES, SEED, clean_docs, read_docs, split_streams, suite_grams, token_streams  # noqa: E402

GAMMA = 7.0  # the paper's loss decay for block 16


def load_target():
    from tokenizers import Tokenizer

    from specscope.engine_adapter.model.demo_model import trained_demo_path
    from specscope.engine_adapter.model.loader import load_model

    path = trained_demo_path("hybrid")
    if path is None:
        raise SystemExit("this install has no trained demo")
    target = load_model(path)
    # the 4-bit weights dequantized once: the same values in float (MLX's CPU quantized matmul is ~20x slower than a
    # float one with OpenBLAS); greedy continuations can differ from the 4-bit model's only where rounding flips a tie
    from mlx_lm.utils import dequantize_model

    target.model = dequantize_model(target.model)
    target.model.eval()
    return target, Tokenizer.from_file(str(path / "tokenizer.json"))


class Capture:
    """Record the full-batch output of chosen decoder layers (specscope's tap records one row, for inference)."""

    def __init__(self, model, layer_ids):
        from specscope.engine_adapter.cache.hidden import trunk_layers

        self.out: dict[int, list[mx.array]] = {i: [] for i in layer_ids}
        self.on = False
        cap = self
        for i in layer_ids:
            layer = trunk_layers(model)[i]
            cls = type(layer)

            def __call__(self, x, *a, _cls=cls, **kw):
                out = _cls.__call__(self, x, *a, **kw)
                if cap.on:
                    cap.out[self._train_index].append(out)
                return out

            layer.__class__ = type(f"Captured{cls.__name__}", (cls,), {"__call__": __call__})
            layer._train_index = i

    def take(self, layer_ids) -> mx.array:
        """What the forwards since the last take recorded: the layers side by side along positions, [B, T, n·H]."""
        f = mx.concatenate([mx.concatenate(self.out[i], axis=1) for i in layer_ids], axis=-1)
        for i in layer_ids:
            self.out[i] = []
        return f


def generate(target, cap: Capture, layer_ids, prompts: np.ndarray, n_new: int) -> tuple[np.ndarray, mx.array]:
    """Greedy continuations of a batch of equal-length prompts, [B, P + n_new], and the target's features at every
    position, [B, P + n_new, n·H], recorded by the forwards that generated them (one more feeds the last token)."""
    from mlx_lm.models.cache import make_prompt_cache

    model = target.model
    cache = make_prompt_cache(model)
    cap.on = True
    try:
        logits = model(mx.array(prompts), cache=cache)[:, -1]
        out = [prompts]
        for j in range(n_new):
            nxt = mx.argmax(logits, axis=-1)
            mx.eval(nxt)
            out.append(np.array(nxt)[:, None])
            logits = model(nxt[:, None], cache=cache)[:, -1]
            if j % 16 == 15:
                mx.eval(logits, [c.state for c in cache])
        feats = cap.take(layer_ids).astype(mx.float32)
        mx.eval(feats)
    finally:
        cap.on = False
    return np.concatenate(out, axis=1).astype(np.int32), feats


def block_loss(drafter, embed, head, feats, seqs, anchors, block: int, mask_id: int, weights):
    """The drafter's loss over ``anchors`` ([B, A]) of each sequence; every block a batch row of its own."""
    Bs, T, _ = feats.shape
    A = anchors.shape[1]
    rows = mx.repeat(mx.arange(Bs), A)  # which sequence each block belongs to
    n = anchors.reshape(-1)  # [R] the block's first position
    R = n.shape[0]
    pos = n[:, None] + mx.arange(block)[None]  # [R, block]
    toks = mx.where(mx.arange(block)[None] == 0, seqs[rows, n][:, None], mask_id)
    labels = seqs[rows[:, None], mx.minimum(pos, T - 1)]
    ctx = drafter.hidden_norm(drafter.fc(feats))  # [Bs, T, H]
    h = embed(toks.astype(mx.uint32))  # [R, block, H]
    allowed = mx.concatenate([mx.arange(T)[None] < n[:, None], mx.ones((R, block), dtype=mx.bool_)], axis=1)
    bias = mx.where(allowed, 0.0, -1e9)[:, None, None, :]  # [R, 1, 1, T + block]
    for layer in drafter.layers:
        att = layer.self_attn
        x = layer.input_layernorm(h)
        q = att.q_norm(att.q_proj(x).reshape(R, block, att.n_heads, -1)).transpose(0, 2, 1, 3)
        q = att.rope(q, offset=n)
        bk, bv = att._kv(x, n)
        ck, cv = att._kv(ctx, 0)  # [Bs, kv, T, hd]
        keys = mx.concatenate([ck[rows], bk], axis=2)
        values = mx.concatenate([cv[rows], bv], axis=2)
        rep = att.n_heads // att.n_kv
        if rep > 1:
            keys, values = mx.repeat(keys, rep, axis=1), mx.repeat(values, rep, axis=1)
        s = (q * att.scale) @ keys.transpose(0, 1, 3, 2) + bias
        o = mx.softmax(s, axis=-1, precise=True) @ values
        h = h + att.o_proj(o.transpose(0, 2, 1, 3).reshape(R, block, -1))
        h = h + layer.mlp(layer.post_attention_layernorm(h))
    logits = head(drafter.norm(h)[:, 1:])  # [R, block-1, V]
    ce = nn.losses.cross_entropy(logits, labels[:, 1:], reduction="none")
    valid = (pos[:, 1:] < T).astype(mx.float32) * weights[None]
    hit = ((mx.argmax(logits, axis=-1) == labels[:, 1:]) & (pos[:, 1:] < T)).astype(mx.float32)
    # accepted length under greedy: drafts up to the first miss
    accepted = mx.cumprod(hit, axis=1).sum(axis=1).reshape(Bs, A).mean(axis=1)  # [Bs]
    return (ce * valid).sum() / valid.sum(), accepted


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--prompt-len", type=int, default=48)
    ap.add_argument("--new-tokens", type=int, default=112)
    ap.add_argument("--sequences", type=int, default=3072, help="target continuations generated for training")
    ap.add_argument("--gen-batch", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8, help="sequences a step")
    ap.add_argument("--anchors", type=int, default=8, help="blocks per sequence a step")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--minutes", type=float, default=30.0, help="train this long (cosine over elapsed time)")
    ap.add_argument("--eval-every", type=int, default=200)
    a = ap.parse_args()

    from specscope.engine_adapter.model.dflash_demo import dflash_config, spec_of_config
    from specscope.engine_adapter.model.dflash_format import read_dflash
    from specscope.engine_adapter.drafters.dflash import DFlashModel
    from specscope.engine_adapter.cache.hidden import trunk_parts

    mx.random.seed(SEED)
    rng = np.random.default_rng(SEED)
    a.out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    target, tok = load_target()
    text = target.checkpoint.text_config
    config = dflash_config(text, int(text["num_hidden_layers"]))
    dc = config["dflash_config"]
    layer_ids, block, mask_id = dc["target_layer_ids"], dc["block_size"], dc["mask_token_id"]
    print("drafter config", {k: config[k] for k in ("hidden_size", "num_hidden_layers", "num_attention_heads",
                                                    "num_key_value_heads", "intermediate_size")}, dc, flush=True)

    # the corpus as train_demo.py read it (the suite's 8-grams dropped), split the same way
    grams, _ = suite_grams(tok)
    docs_by_class = {c: clean_docs(read_docs(a.corpus, c), tok, grams)[0] for c in CLASSES}
    train, val = split_streams(token_streams(a.corpus, tok, docs_by_class))
    print("corpus read", f"{time.time() - t0:.0f}s", flush=True)

    cap = Capture(target.model, layer_ids)
    T = a.prompt_len + a.new_tokens

    def make_data(streams, n_seq: int, r) -> tuple[np.ndarray, mx.array]:
        seqs, feats = [], []
        for b in range(0, n_seq, a.gen_batch):
            rows = []
            for i in range(min(a.gen_batch, n_seq - b)):
                s = streams[CLASSES[(b + i) % len(CLASSES)]]
                o = r.integers(0, len(s) - a.prompt_len - 1)
                rows.append(s[o:o + a.prompt_len])
            sq, f = generate(target, cap, layer_ids, np.stack(rows), a.new_tokens)
            seqs.append(sq)
            feats.append(f)
            if (b // a.gen_batch) % 8 == 0:
                print(f"generated {b + len(rows)}/{n_seq} {time.time() - t0:.0f}s", flush=True)
        return np.concatenate(seqs), mx.concatenate(feats)

    t_gen = time.time()
    val_seqs, val_feats = make_data(val, 3 * 64, np.random.default_rng(7))
    tr_seqs, tr_feats = make_data(train, a.sequences, rng)
    gen_s = time.time() - t_gen
    print(f"data: {len(tr_seqs)} train, {len(val_seqs)} val sequences of {T} tokens, {gen_s:.0f}s", flush=True)

    drafter = DFlashModel(spec_of_config(config, a.out))
    init(drafter, SEED)
    parts = trunk_parts(target.model)
    embed, head = parts["embed"], parts["head"]
    weights = mx.exp(-mx.arange(block - 1, dtype=mx.float32) / GAMMA)
    opt = optim.AdamW(learning_rate=a.lr, weight_decay=0.01)

    def loss_fn(model, f, s, anc):
        return block_loss(model, embed, head, f, s, anc, block, mask_id, weights)

    loss_and_grad = nn.value_and_grad(drafter, lambda m, f, s, anc: loss_fn(m, f, s, anc)[0])

    def anchors_for(nseq, r):
        return mx.array(r.integers(a.prompt_len, T - 1, size=(nseq, a.anchors)), dtype=mx.int32)

    def evaluate():
        vr = np.random.default_rng(11)
        tot, acc, n = 0.0, 0.0, 0
        by_class = {c: [] for c in CLASSES}
        for b in range(0, len(val_seqs), 16):
            s = mx.array(val_seqs[b:b + 16])
            anc = anchors_for(s.shape[0], vr)
            ls, ac = loss_fn(drafter, val_feats[b:b + 16], s, anc)
            tot, acc, n = tot + float(ls), acc + float(ac.mean()), n + 1
            for j, x in enumerate(ac.tolist()):  # the sequences take the classes in turn
                by_class[CLASSES[(b + j) % len(CLASSES)]].append(x)
        return {"loss": round(tot / n, 4), "accepted_per_block": round(acc / n, 3),
                "by_class": {c: round(float(np.mean(v)), 3) for c, v in by_class.items()}}

    curve = [{"step": 0, "seconds": 0, **evaluate()}]
    print("eval", json.dumps(curve[-1]), flush=True)
    t_train = time.time()
    it = 0
    while time.time() - t_train < 60 * a.minutes:
        it += 1
        frac = min(1.0, (time.time() - t_train) / (60 * a.minutes))
        lr = a.lr * min(1.0, it / a.warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
        opt.learning_rate = mx.array(lr)
        idx = rng.integers(0, len(tr_seqs), size=a.batch)
        s = mx.array(tr_seqs[idx])
        loss, grads = loss_and_grad(drafter, tr_feats[mx.array(idx)], s, anchors_for(a.batch, rng))
        grads, _ = optim.clip_grad_norm(grads, 1.0)
        opt.update(drafter, grads)
        mx.eval(loss, drafter.parameters(), opt.state)
        if it % 25 == 0:
            print(f"step {it} loss {float(loss):.3f} {time.time() - t_train:.0f}s lr {lr:.2e}", flush=True)
        if it % a.eval_every == 0:
            curve.append({"step": it, "seconds": round(time.time() - t_train), **evaluate()})
            print("eval", json.dumps(curve[-1]), flush=True)
    train_s = time.time() - t_train
    curve.append({"step": it, "seconds": round(train_s), **evaluate()})
    print("eval", json.dumps(curve[-1]), flush=True)

    export = a.out / "export"
    export.mkdir(parents=True, exist_ok=True)
    config["specscope_demo"] = {
        "kind": "dflash-trained", "target": target.path.name, "seed": SEED, "format_version": 1,
        "target_released_layers": int(text["num_hidden_layers"]),
        "training": "training/train_dflash.py: the target's own greedy continuations of corpus prompts",
    }
    (export / "config.json").write_text(json.dumps(config, indent=2))
    flat = {k: v.astype(mx.bfloat16) for k, v in tree_flatten(drafter.parameters())}
    mx.save_safetensors(str(export / "model.safetensors"), flat, metadata={"format": "pt"})
    read_dflash(export)  # reads back in the published format
    log = {"seed": SEED, "gamma": GAMMA, "block": block, "target_layer_ids": layer_ids, "prompt_len": a.prompt_len,
           "new_tokens": a.new_tokens, "sequences": len(tr_seqs), "val_sequences": len(val_seqs), "batch": a.batch,
           "anchors": a.anchors, "lr": a.lr, "warmup": a.warmup, "minutes": a.minutes, "steps": it,
           "generate_seconds": round(gen_s), "train_seconds": round(train_s),
           "params": sum(v.size for _, v in tree_flatten(drafter.parameters())), "curve": curve}
    (a.out / "training_log.json").write_text(json.dumps(log, indent=1))
    print(f"done {it} steps in {train_s:.0f}s; exported {export}", flush=True)


def init(drafter, seed: int):
    """Seeded init as the random demo drafters' (``dflash_demo.build_dflash_demo``): norms 1, matrices N(0, 1/fan_in),
    the residual branches' outputs scaled down."""
    from mlx.utils import tree_unflatten

    from specscope.engine_adapter.model.demo_model import BRANCH_GAIN

    new = []
    for i, (name, v) in enumerate(sorted(tree_flatten(drafter.parameters()))):
        if v.ndim == 1:
            w = mx.ones(v.shape)
        else:
            w = mx.random.normal(v.shape, key=mx.random.key(seed * 1_000_003 + 7 + i)) * v.shape[-1] ** -0.5
            if name.endswith(("o_proj.weight", "down_proj.weight")):
                w = w * BRANCH_GAIN
        new.append((name, w))
    drafter.update(tree_unflatten(new))
    mx.eval(drafter.parameters())


if __name__ == "__main__":
    main()
