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


def load_target(folder: Path | None = None):
    from tokenizers import Tokenizer

    from specscope.engine_adapter.model.demo_model import trained_demo_path
    from specscope.engine_adapter.model.loader import load_model

    path = folder or trained_demo_path("hybrid")
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


def block_loss(drafter, embed, head, feats, seqs, anchors, block: int, mask_id: int, weights, selector_weight: float = 1.0):
    """The drafter's loss over ``anchors`` ([B, A]) of each sequence; every block a batch row of its own.

    A DFlash2 drafter (``dflash2_model.DFlash2Model``) runs its layers' convolutions around attention and MLP
    (``DynamicConv.prepare``/``finish``, the inference code), its sliding window over the context, its logits
    (``DFlash2Model.logits``), and adds the candidate selector's loss, teacher-forced: at block position i the
    candidates are the drafter's top K (``CandidateSelector.candidates``), scored after the TRUE previous token
    (``CandidateSelector.scores``, what the walk computes); q = softmax over the K scores; the loss is the CE of the
    true token under q where it is among the candidates. Greedy acceptance (up to the first miss) is then the walk's:
    while the picks are right, the walk's previous pick is the true token."""
    dflash2 = hasattr(drafter, "candidate_selector")
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
    allowed_ctx = mx.arange(T)[None] < n[:, None]  # [R, T]
    allowed = mx.concatenate([allowed_ctx, mx.ones((R, block), dtype=mx.bool_)], axis=1)
    bias = mx.where(allowed, 0.0, -1e9)[:, None, None, :]  # [R, 1, 1, T + block]

    def attend(att, x):
        b = bias
        if getattr(att, "window", None) is not None:  # query n+i reads context keys within W − 1 of it
            key = mx.arange(T)[None, None]
            qpos = pos[:, :, None]
            win = mx.concatenate([allowed_ctx[:, None] & (qpos - key < att.window), mx.ones((R, block, block), dtype=mx.bool_)], axis=2)
            b = mx.where(win, 0.0, -1e9)[:, None]  # [R, 1, block, T + block]
        q = att.q_norm(att.q_proj(x).reshape(R, block, att.n_heads, -1)).transpose(0, 2, 1, 3)
        q = att.rope(q, offset=n)
        bk, bv = att._kv(x, n)
        ck, cv = att._kv(ctx, 0)  # [Bs, kv, T, hd]
        keys = mx.concatenate([ck[rows], bk], axis=2)
        values = mx.concatenate([cv[rows], bv], axis=2)
        rep = att.n_heads // att.n_kv
        if rep > 1:
            keys, values = mx.repeat(keys, rep, axis=1), mx.repeat(values, rep, axis=1)
        sc = (q * att.scale) @ keys.transpose(0, 1, 3, 2) + b
        o = mx.softmax(sc, axis=-1, precise=True) @ values
        return att.o_proj(o.transpose(0, 2, 1, 3).reshape(R, block, -1))

    for layer in drafter.layers:
        if dflash2:
            u, dyn = layer.attention_conv.prepare(layer.input_layernorm(h))
            h = h + layer.attention_conv.finish(attend(layer.self_attn, u), dyn)
            u, dyn = layer.mlp_conv.prepare(layer.post_attention_layernorm(h))
            h = h + layer.mlp_conv.finish(layer.mlp(u), dyn)
        else:
            h = h + attend(layer.self_attn, layer.input_layernorm(h))
            h = h + layer.mlp(layer.post_attention_layernorm(h))
    hn = drafter.norm(h)[:, 1:]
    logits = head(hn)  # [R, block-1, V]
    if dflash2:
        logits = drafter.logits(logits)
    ce = nn.losses.cross_entropy(logits, labels[:, 1:], reduction="none")
    valid = (pos[:, 1:] < T).astype(mx.float32) * weights[None]
    loss = (ce * valid).sum() / valid.sum()
    if dflash2:
        sel = drafter.candidate_selector
        cands, unary, proj, succ = sel.candidates(hn, logits)  # [R, block-1, K], ..., [R, block-1, K, rank]
        scores = sel.scores(unary, proj, succ, labels[:, :-1].astype(mx.uint32))  # after the true previous token
        truth = labels[:, 1:]
        is_true = cands == truth[..., None]
        in_c = is_true.any(axis=-1).astype(mx.float32)
        sel_ce = mx.logsumexp(scores, axis=-1) - (scores * is_true).sum(axis=-1)
        sv = valid * in_c
        loss = loss + selector_weight * (sel_ce * sv).sum() / mx.maximum(sv.sum(), 1.0)
        pick = mx.take_along_axis(cands, mx.argmax(scores, axis=-1)[..., None], axis=-1)[..., 0]
        hit = ((pick == truth) & (pos[:, 1:] < T)).astype(mx.float32)
    else:
        hit = ((mx.argmax(logits, axis=-1) == labels[:, 1:]) & (pos[:, 1:] < T)).astype(mx.float32)
    # accepted length under greedy: drafts up to the first miss
    accepted = mx.cumprod(hit, axis=1).sum(axis=1).reshape(Bs, A).mean(axis=1)  # [Bs]
    return loss, accepted


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
    ap.add_argument("--target", type=Path, help="the frozen target's folder (default: the shipped trained demo)")
    ap.add_argument("--init", type=Path, help="start from this drafter folder (DFlash; for --dflash2 a DFlash folder is "
                    "made a DFlash2 one as tools/dflash2_parity.py --from-dflash does: identity convolutions, a small "
                    "random selector)")
    ap.add_argument("--data", type=Path, help="the generated continuations and features: read if the file exists, "
                    "else written after generating (so the DFlash and DFlash2 runs share one generation)")
    ap.add_argument("--dflash2", action="store_true", help="train a DFlash2 drafter (convolutions, sliding window, "
                    "candidate selector) and export it in the published DFlash2 format")
    ap.add_argument("--window", type=int, default=2048, help="DFlash2: the sliding window (longer than any context "
                    "a check uses: the reference mis-masks after its window wraps)")
    ap.add_argument("--top-k", type=int, default=8, help="DFlash2: the selector's candidates a position")
    ap.add_argument("--selector-weight", type=float, default=1.0, help="DFlash2: the selector loss's weight")
    a = ap.parse_args()

    from specscope.engine_adapter.model.dflash_demo import dflash_config, spec_of_config
    from specscope.engine_adapter.model.dflash_format import read_dflash
    from specscope.engine_adapter.drafters.dflash import DFlashModel
    from specscope.engine_adapter.cache.hidden import trunk_parts

    mx.random.seed(SEED)
    rng = np.random.default_rng(SEED)
    a.out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    target, tok = load_target(a.target)
    text = target.checkpoint.text_config
    if a.dflash2:
        from specscope.engine_adapter.model.dflash2_demo import dflash2_config

        config = dflash2_config(text, int(text["num_hidden_layers"]), window=a.window, softcap=None, top_k=a.top_k)
    else:
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
    if a.data and a.data.exists():
        d = mx.load(str(a.data))
        val_seqs, val_feats = np.array(d["val_seqs"]), d["val_feats"]
        tr_seqs, tr_feats = np.array(d["train_seqs"]), d["train_feats"]
        gen_s = float(d["generate_seconds"].item())
        if len(tr_seqs) != a.sequences or tr_seqs.shape[1] != T:
            raise SystemExit(f"--data {a.data}: {tr_seqs.shape} sequences, not {a.sequences} of {T} tokens")
        print(f"data read from {a.data} (generated in {gen_s:.0f}s)", flush=True)
    else:
        val_seqs, val_feats = make_data(val, 3 * 64, np.random.default_rng(7))
        tr_seqs, tr_feats = make_data(train, a.sequences, rng)
        gen_s = time.time() - t_gen
        if a.data:
            tmp = a.data.with_suffix(".tmp.safetensors")
            mx.save_safetensors(str(tmp), {"val_seqs": mx.array(val_seqs), "val_feats": val_feats, "train_seqs": mx.array(tr_seqs),
                                           "train_feats": tr_feats, "generate_seconds": mx.array(gen_s)})
            tmp.replace(a.data)
    print(f"data: {len(tr_seqs)} train, {len(val_seqs)} val sequences of {T} tokens, {gen_s:.0f}s", flush=True)

    if a.dflash2:
        from specscope.engine_adapter.drafters.dflash2_model import DFlash2Model
        from specscope.engine_adapter.model.dflash2_format import as_dflash2

        drafter = DFlash2Model(as_dflash2(spec_of_config(config, a.out), "the DFlash2 drafter being trained"))
    else:
        drafter = DFlashModel(spec_of_config(config, a.out))
    init(drafter, SEED)
    if a.init:
        drafter.load_weights(init_weights(a.init, a.out, a.dflash2), strict=True)
        mx.eval(drafter.parameters())
    parts = trunk_parts(target.model)
    embed, head = parts["embed"], parts["head"]
    weights = mx.exp(-mx.arange(block - 1, dtype=mx.float32) / GAMMA)
    opt = optim.AdamW(learning_rate=a.lr, weight_decay=0.01)

    def loss_fn(model, f, s, anc):
        return block_loss(model, embed, head, f, s, anc, block, mask_id, weights, a.selector_weight)

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
        "kind": "dflash2-trained" if a.dflash2 else "dflash-trained", "target": "tiny-trained-demo", "seed": SEED,
        "format_version": 1, "target_released_layers": int(text["num_hidden_layers"]),
        "training": "training/train_dflash.py" + (" --dflash2" if a.dflash2 else "")
        + ": the target's own greedy continuations of corpus prompts",
    }
    (export / "config.json").write_text(json.dumps(config, indent=2))
    flat = {k: v.astype(mx.bfloat16) for k, v in tree_flatten(drafter.parameters())}
    mx.save_safetensors(str(export / "model.safetensors"), flat, metadata={"format": "pt"})
    read_dflash(export)  # reads back in the published format
    log = {"seed": SEED, "gamma": GAMMA, "block": block, "target_layer_ids": layer_ids, "prompt_len": a.prompt_len,
           "new_tokens": a.new_tokens, "sequences": len(tr_seqs), "val_sequences": len(val_seqs), "batch": a.batch,
           "anchors": a.anchors, "lr": a.lr, "warmup": a.warmup, "minutes": a.minutes, "steps": it,
           "kind": "dflash2" if a.dflash2 else "dflash", "init": str(a.init) if a.init else None,
           "target": str(a.target) if a.target else "shipped tiny-trained-demo",
           **({"window": a.window, "top_k": a.top_k, "selector_rank": config["dflash_config"]["selector_rank"],
               "selector_weight": a.selector_weight} if a.dflash2 else {}),
           "generate_seconds": round(gen_s), "train_seconds": round(train_s),
           "params": sum(v.size for _, v in tree_flatten(drafter.parameters())), "curve": curve}
    (a.out / "training_log.json").write_text(json.dumps(log, indent=1))
    print(f"done {it} steps in {train_s:.0f}s; exported {export}", flush=True)


def init_weights(folder: Path, work: Path, dflash2: bool) -> list[tuple[str, mx.array]]:
    """A drafter folder's weights in float32; for a DFlash2 drafter from a DFlash folder, the tensors
    ``tools/dflash2_parity.py``'s ``dflash2_from_dflash`` adds (identity convolutions, zero dynamic kernels, a random
    selector of ~0.3-logit edges), taken from the folder it writes."""
    c = json.loads((folder / "config.json").read_text())
    if dflash2 and c.get("architectures") != ["DFlash2DraftModel"]:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
        from dflash2_parity import dflash2_from_dflash

        out = work / "init-from-dflash"
        if out.exists():
            import shutil

            shutil.rmtree(out)
        folder = dflash2_from_dflash(folder, out, seed=SEED)
    w = {k: v for f in sorted(folder.glob("*.safetensors")) for k, v in mx.load(str(f)).items()}
    return [(k, v.astype(mx.float32)) for k, v in sorted(w.items())]


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
