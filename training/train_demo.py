"""Train specscope's tiny demo: a qwen3_5_moe trunk (Gated DeltaNet + full attention, routed +
shared experts) with an MTP head, and a 2-layer qwen3 draft model, on the offline corpus.

Not run in CI. Reproduce (about an hour on 2 CPU cores; see training/README.md):
    python training/build_corpus.py --debs DEBS --stdlib PYTHON_STDLIB -o CORPUS
    nice -n 15 python training/train_demo.py --corpus CORPUS --out OUT --steps N
    python training/train_demo.py --corpus CORPUS --out OUT --export-only   # re-quantize / re-export
    # continue from the shipped demo (its tokenizer kept; its 4-bit weights dequantized):
    python training/train_demo.py --corpus CORPUS --out OUT --tokenizer SHIPPED --init-export SHIPPED \
        --init-export-draft SHIPPED-draft --minutes 40

Seeds, hyperparameters and the time it took are written to OUT/training_log.json.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
import numpy as np
from mlx.utils import tree_flatten

DOC_SEP = "<|doc|>"
EOS = "<|endoftext|>"
SPECIALS = [EOS, "<|im_start|>", "<|im_end|>"]
CLASSES = ("code", "en", "zh")
SEED = 1234

SIZES = {
    # name: trunk dims (the 4-layer stack: 3 Gated DeltaNet layers, 1 full-attention layer)
    "s": dict(hidden=192, layers=4, heads=4, kv=2, head_dim=48, lin_v=4, lin_k=2, lin_dim=48, experts=8, topk=2, moe=192, shared=192, draft=128),
    "m": dict(hidden=256, layers=4, heads=4, kv=2, head_dim=64, lin_v=4, lin_k=2, lin_dim=64, experts=8, topk=2, moe=256, shared=256, draft=192),
    "l": dict(hidden=320, layers=8, heads=5, kv=1, head_dim=64, lin_v=5, lin_k=5, lin_dim=64, experts=8, topk=2, moe=320, shared=320, draft=256),
}
VOCAB = 4096


def text_config(s: dict, vocab: int) -> dict:
    return {
        "model_type": "qwen3_5_moe_text",
        "hidden_size": s["hidden"],
        "vocab_size": vocab,
        "rms_norm_eps": 1e-6,
        "max_position_embeddings": 262144,
        "tie_word_embeddings": False,
        "eos_token_id": 0,
        "num_hidden_layers": s["layers"],
        "full_attention_interval": 4,
        "num_attention_heads": s["heads"],
        "num_key_value_heads": s["kv"],
        "head_dim": s["head_dim"],
        "linear_num_value_heads": s["lin_v"],
        "linear_num_key_heads": s["lin_k"],
        "linear_key_head_dim": s["lin_dim"],
        "linear_value_head_dim": s["lin_dim"],
        "linear_conv_kernel_dim": 4,
        "num_experts": s["experts"],
        "num_experts_per_tok": s["topk"],
        "moe_intermediate_size": s["moe"],
        "shared_expert_intermediate_size": s["shared"],
        "decoder_sparse_step": 1,
        "norm_topk_prob": True,
        "intermediate_size": 4 * s["hidden"],
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000000, "partial_rotary_factor": 0.25, "mrope_section": [11, 11, 10]},
        "mtp_num_hidden_layers": 1,
    }


def draft_config(hidden: int, vocab: int) -> dict:
    return {
        "model_type": "qwen3",
        "architectures": ["Qwen3ForCausalLM"],
        "hidden_size": hidden,
        "vocab_size": vocab,
        "rms_norm_eps": 1e-6,
        "max_position_embeddings": 262144,
        "tie_word_embeddings": True,
        "eos_token_id": 0,
        "num_hidden_layers": 2,
        "intermediate_size": 3 * hidden,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": hidden // 4,
        "rope_theta": 1000000,
    }


# ---------------------------------------------------------------- tokenizer + data


def read_docs(corpus: Path, cls: str) -> list[str]:
    return [d for d in (corpus / f"{cls}.txt").read_text(encoding="utf-8").split(f"\n{DOC_SEP}\n") if d.strip()]


def train_tokenizer(corpus: Path, out: Path, vocab: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    docs = [d for c in CLASSES for d in read_docs(corpus, c)]
    tok.train_from_iterator(docs, trainer=trainer)
    out.mkdir(parents=True, exist_ok=True)
    tok.save(str(out / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "eos_token": EOS,
        "pad_token": EOS,
        "bos_token": None,
        "unk_token": None,
        "model_max_length": 4096,
        "clean_up_tokenization_spaces": False,
        "added_tokens_decoder": {
            str(tok.token_to_id(s)): {"content": s, "special": True, "lstrip": False, "rstrip": False, "normalized": False, "single_word": False}
            for s in SPECIALS
        },
    }
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2, sort_keys=True))
    (out / "special_tokens_map.json").write_text(json.dumps({"eos_token": EOS, "pad_token": EOS}, indent=2))
    return tok


def suite_grams(tok, n: int = 8) -> tuple[set, set]:
    """Every n-token sequence of the default suite's prompts, and the suite's token ids."""
    from specscope.assets import read_text

    grams, ids_seen = set(), set()
    for c in json.loads(read_text("default_suite.json"))["cases"]:
        ids = tok.encode(c["prompt"]).ids
        ids_seen |= set(ids)
        grams |= {tuple(ids[i : i + n]) for i in range(len(ids) - n + 1)}
    return grams, ids_seen


def _matches(ids, offsets, grams, n=8):
    return [(offsets[i][0], offsets[i + n - 1][1]) for i in range(len(ids) - n + 1) if tuple(ids[i : i + n]) in grams]


def clean_docs(docs: list[str], tok, grams) -> tuple[list[str], int]:
    """Drop the lines of a document that hold one of the suite's 8-token sequences (until none is left)."""
    out, dropped = [], 0
    for d in docs:
        while True:
            enc = tok.encode(d)
            spans = _matches(enc.ids, enc.offsets, grams)
            if not spans:
                break
            lo = d.rfind("\n", 0, spans[0][0]) + 1
            hi = d.find("\n", spans[0][1])
            d = d[:lo] + (d[hi + 1 :] if hi >= 0 else "")
            dropped += 1
        if d.strip():
            out.append(d)
    return out, dropped


def corpus_grams(docs_by_class: dict, tok, keep_ids: set, n: int = 8) -> list[str]:
    """The corpus's n-grams made only of suite tokens (only those could equal a suite n-gram), hashed."""
    import hashlib

    keep = np.zeros(tok.get_vocab_size(), dtype=bool)
    keep[sorted(keep_ids)] = True
    out = set()
    for docs in docs_by_class.values():
        for enc in tok.encode_batch(docs):
            ids = np.array(enc.ids, dtype=np.int64)
            if len(ids) < n:
                continue
            run = np.convolve(keep[ids].astype(np.int32), np.ones(n, dtype=np.int32), "valid") == n
            for i in np.nonzero(run)[0]:
                out.add(hashlib.sha256(" ".join(map(str, ids[i : i + n].tolist())).encode()).hexdigest()[:16])
    return sorted(out)


def token_streams(corpus: Path, tok, docs_by_class=None) -> dict[str, np.ndarray]:
    eos = tok.token_to_id(EOS)
    out = {}
    for c in CLASSES:
        ids = []
        for enc in tok.encode_batch(docs_by_class[c] if docs_by_class else read_docs(corpus, c)):
            ids.extend(enc.ids)
            ids.append(eos)
        out[c] = np.array(ids, dtype=np.int32)
    return out


def split_streams(streams, holdout=0.02):
    train, val = {}, {}
    for c, s in streams.items():
        n = int(len(s) * (1 - holdout))
        train[c], val[c] = s[:n], s[n:]
    return train, val


def batch(streams, rng, B, T):
    rows = []
    for i in range(B):
        s = streams[CLASSES[i % len(CLASSES)]]
        o = rng.integers(0, len(s) - T - 2)
        rows.append(s[o : o + T + 2])
    return mx.array(np.stack(rows))


# ---------------------------------------------------------------- models


class Bundle(nn.Module):
    """Trunk + MTP head + draft model, trained together (separate losses)."""

    def __init__(self, size: dict, vocab: int):
        super().__init__()
        from mlx_lm.models import qwen3
        from mlx_lm.models.qwen3_5 import DecoderLayer, TextModelArgs
        from mlx_lm.utils import _get_classes

        from specscope.engine_adapter.drafters.mtp_head import QwenMTPHead

        self.config = {
            "model_type": "qwen3_5_moe",
            "architectures": ["Qwen3_5MoeForConditionalGeneration"],
            "text_config": text_config(size, vocab),
            "tie_word_embeddings": False,
            "eos_token_id": 0,
        }
        cls, args_cls = _get_classes(self.config)
        self.trunk = cls(args_cls.from_dict(self.config))
        targs = TextModelArgs.from_dict(self.config["text_config"])
        fa = targs.full_attention_interval - 1
        self.mtp = QwenMTPHead(targs, DecoderLayer(targs, fa))
        self.draft_config = draft_config(size["draft"], vocab)
        self.draft = qwen3.Model(qwen3.ModelArgs.from_dict(self.draft_config))

    def losses(self, x, agree=False):
        inp, y1, y2 = x[:, :-2], x[:, 1:-1], x[:, 2:]
        lm = self.trunk.language_model
        h = lm.model(inp)  # post-norm hidden, as the MTP drafter reads it
        logits = lm.lm_head(h)
        l_lm = nn.losses.cross_entropy(logits, y1, reduction="mean")
        # MTP: hidden at j + embedding of t_{j+1} -> t_{j+2}. The trunk gets no gradient from it.
        emb = lm.model.embed_tokens(y1)
        _, normed = self.mtp(emb, mx.stop_gradient(h), None)
        l_mtp = nn.losses.cross_entropy(lm.lm_head(normed), y2, reduction="mean")
        d_logits = self.draft(inp)
        l_draft = nn.losses.cross_entropy(d_logits, y1, reduction="mean")
        if agree:  # greedy agreement with the trunk: the first draft token's acceptance, teacher-forced
            top = mx.argmax(logits, axis=-1)
            a_mtp = (mx.argmax(lm.lm_head(normed), axis=-1)[:, :-1] == top[:, 1:]).mean()
            a_draft = (mx.argmax(d_logits, axis=-1) == top).mean()
            return l_lm, l_mtp, l_draft, a_mtp, a_draft
        return l_lm, l_mtp, l_draft


def init_weights(bundle: Bundle, seed: int):
    """Small-std init for matrices, mlx-lm's own for GDN's A_log/dt_bias/conv, ones for norms."""
    mx.random.seed(seed)
    new = []
    for name, v in tree_flatten(bundle.parameters()):
        if v.ndim == 2 and "conv1d" not in name:
            std = 0.02
            if name.endswith(("o_proj.weight", "out_proj.weight", "down_proj.weight")):
                std = 0.02 / math.sqrt(2 * 4)
            new.append((name, mx.random.normal(v.shape) * std))
        elif name.endswith("down_proj.weight") or name.endswith(("gate_proj.weight", "up_proj.weight")):
            new.append((name, mx.random.normal(v.shape) * (0.02 if "down" not in name else 0.005)))
    bundle.update(__import__("mlx.utils", fromlist=["tree_unflatten"]).tree_unflatten(new))


def count(module) -> int:
    return sum(v.size for _, v in tree_flatten(module.parameters()))


# ---------------------------------------------------------------- export


def export(bundle: Bundle, out: Path, tok_dir: Path, meta: dict, group_size: int = 64):
    import contextlib
    import shutil
    import sys

    from mlx_lm.utils import quantize_model, save_config, save_model

    out.mkdir(parents=True, exist_ok=True)
    trunk_dir, draft_dir = out / "target", out / "draft"
    for d in (trunk_dir, draft_dir):
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
            shutil.copy(tok_dir / f, d / f)
    # MTP tensors first (float, original naming), before the trunk is quantized in place.
    mtp = {}
    for k, v in tree_flatten(bundle.mtp.parameters()):
        if ".switch_mlp." in k:
            pre, rest = k.split(".switch_mlp.")
            proj = rest.split(".")[0]
            for e in range(v.shape[0]):
                mtp[f"mtp.{pre}.experts.{e}.{proj}.weight"] = v[e]
            continue
        if v.ndim == 1 and "norm" in k.split(".")[-2]:
            v = v - 1.0  # original checkpoints store 1+w norms
        mtp[f"mtp.{k}"] = v
    mtp = {k: v.astype(mx.bfloat16) for k, v in sorted(mtp.items())}
    with contextlib.redirect_stdout(sys.stderr):
        trunk, config = quantize_model(
            bundle.trunk, json.loads(json.dumps(bundle.config)), group_size=group_size, bits=4, quant_predicate=bundle.trunk.quant_predicate
        )
    save_model(trunk_dir, trunk)
    mx.save_safetensors(str(trunk_dir / "model-mtp.safetensors"), mtp, metadata={"format": "pt"})
    index_path = trunk_dir / "model.safetensors.index.json"
    index = json.loads(index_path.read_text())
    index["weight_map"].update({k: "model-mtp.safetensors" for k in mtp})
    index["weight_map"] = dict(sorted(index["weight_map"].items()))
    index_path.write_text(json.dumps(index, indent=4))
    config["specscope_demo"] = {"kind": "trained", **meta}
    save_config(config, trunk_dir / "config.json")
    (trunk_dir / "generation_config.json").write_text(json.dumps({"eos_token_id": 0}, indent=2))
    with contextlib.redirect_stdout(sys.stderr):
        draft, dconfig = quantize_model(bundle.draft, dict(bundle.draft_config), group_size=group_size, bits=4)
    save_model(draft_dir, draft)
    dconfig["specscope_demo"] = {"kind": "trained-draft", **meta}
    save_config(dconfig, draft_dir / "config.json")
    (draft_dir / "generation_config.json").write_text(json.dumps({"eos_token_id": 0}, indent=2))


def _quant_params(config: dict, path: str) -> tuple[int, int]:
    q = config.get("quantization") or {}
    own = q.get(path)
    if isinstance(own, dict):
        return own["group_size"], own["bits"]
    return q["group_size"], q["bits"]


def _dequantized(folder: Path, prefix_drop: str = "") -> dict[str, mx.array]:
    """A 4-bit export's tensors as floats: every `X.weight` with `X.scales` is mx.dequantize'd with X's
    group size and bits from config.json (the inverse of mlx-lm's quantize_model on the same module)."""
    config = json.loads((folder / "config.json").read_text())
    raw: dict[str, mx.array] = {}
    for f in sorted(folder.glob("model*.safetensors")):
        if f.name == "model-mtp.safetensors":
            continue
        raw.update(mx.load(str(f)))
    out = {}
    for k, v in raw.items():
        if k.endswith((".scales", ".biases")) and k.rsplit(".", 1)[0] + ".weight" in raw and (k.rsplit(".", 1)[0] + ".scales") in raw:
            continue
        if k.endswith(".weight") and k[: -len(".weight")] + ".scales" in raw:
            base = k[: -len(".weight")]
            gs, bits = _quant_params(config, base)
            v = mx.dequantize(v, raw[base + ".scales"], raw[base + ".biases"], group_size=gs, bits=bits)
        out[k] = v.astype(mx.float32)
    return out


def bundle_weights_from_export(target: Path, draft: Path) -> list[tuple[str, mx.array]]:
    """The float bundle (trunk, MTP head, draft model) from a shipped export: the inverse of `export`.

    Trunk and draft: their 4-bit tensors dequantized. MTP head: `model-mtp.safetensors` (bf16, original
    naming) mapped back: experts stacked into switch_mlp, 1+w norms back to w."""
    weights = [(f"trunk.{k}", v) for k, v in _dequantized(target).items()]
    weights += [(f"draft.{k}", v) for k, v in _dequantized(draft).items()]
    mtp_raw = mx.load(str(target / "model-mtp.safetensors"))
    experts: dict[tuple[str, str], dict[int, mx.array]] = {}
    for k, v in mtp_raw.items():
        k = k[len("mtp."):]
        v = v.astype(mx.float32)
        if ".experts." in k:
            pre, rest = k.split(".experts.")
            e, proj, _ = rest.split(".")
            experts.setdefault((pre, proj), {})[int(e)] = v
            continue
        if v.ndim == 1 and "norm" in k.split(".")[-2]:
            v = v + 1.0
        weights.append((f"mtp.{k}", v))
    for (pre, proj), by_e in sorted(experts.items()):
        weights.append((f"mtp.{pre}.switch_mlp.{proj}.weight", mx.stack([by_e[e] for e in sorted(by_e)])))
    return weights


# ---------------------------------------------------------------- main


def check_roundtrip(target: Path, draft: Path, size: str) -> None:
    """The dequantized bundle against mlx_lm.load of the export: trunk and draft logits on corpus-like text."""
    from mlx_lm import load

    bundle = Bundle(SIZES[size], VOCAB)
    bundle.load_weights(bundle_weights_from_export(target, draft))
    bundle.eval()
    ids = mx.array([[(i * 37 + 11) % VOCAB for i in range(96)]])
    for name, folder, ours in (("trunk", target, bundle.trunk), ("draft", draft, bundle.draft)):
        ref, _ = load(str(folder))
        a, b = ours(ids).astype(mx.float32), ref(ids).astype(mx.float32)
        d = float(mx.abs(a - b).max())
        agree = float((mx.argmax(a, -1) == mx.argmax(b, -1)).mean())
        print(f"{name}: max |logit diff| {d:.2e} (logit scale {float(mx.abs(b).max()):.1f}), argmax agreement {agree:.3f}", flush=True)
        if not agree == 1.0 or d > 1e-2:
            raise SystemExit(f"{name}: the dequantized bundle does not reproduce the export")
    print("round trip ok", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--size", default="m", choices=sorted(SIZES))
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=12)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--measure", type=int, default=0, help="time this many steps and stop")
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--group-size", type=int, default=32)  # 192-wide rows split over 2 ranks stay whole groups
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--export-only", action="store_true", help="export OUT/bundle.safetensors again")
    ap.add_argument("--init", type=Path, help="start from these weights (a bundle.safetensors) instead of the seeded init")
    ap.add_argument("--minutes", type=float, default=0, help="train for this long (cosine over time), not --steps")
    ap.add_argument("--tokenizer", type=Path, help="reuse this folder's tokenizer (tokenizer.json, ...) instead of training one")
    ap.add_argument("--init-export", type=Path, help="start from an exported target folder (4-bit, dequantized) ...")
    ap.add_argument("--init-export-draft", type=Path, help="... and its draft model's folder")
    ap.add_argument("--check-export-roundtrip", action="store_true", help="compare the dequantized bundle's logits with mlx_lm.load of --init-export, then stop")
    a = ap.parse_args()
    if bool(a.init_export) != bool(a.init_export_draft):
        ap.error("--init-export and --init-export-draft go together")
    if a.init and a.init_export:
        ap.error("--init and --init-export are exclusive")

    import chunked_gdn

    chunked_gdn.install()
    mx.random.seed(SEED)
    rng = np.random.default_rng(SEED)
    a.out.mkdir(parents=True, exist_ok=True)
    tok_dir = a.out / "tokenizer"
    if a.export_only:  # the tokenizer and weights of an earlier run in OUT
        bundle = Bundle(SIZES[a.size], VOCAB)
        bundle.load_weights(str(a.out / "bundle.safetensors"))
        log = json.loads((a.out / "training_log.json").read_text()) if (a.out / "training_log.json").exists() else {}
        meta = {k: v for k, v in log.items() if k != "curve"}
        bundle.eval()
        export(bundle, a.out / "export", tok_dir, meta, group_size=a.group_size)
        print("exported", a.out / "export", flush=True)
        return
    if a.check_export_roundtrip:
        check_roundtrip(a.init_export, a.init_export_draft, a.size)
        return
    t0 = time.time()
    if a.tokenizer:
        import shutil

        from tokenizers import Tokenizer

        tok_dir.mkdir(parents=True, exist_ok=True)
        for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
            shutil.copy(a.tokenizer / f, tok_dir / f)
        tok = Tokenizer.from_file(str(tok_dir / "tokenizer.json"))
        if tok.get_vocab_size() != VOCAB:
            raise SystemExit(f"--tokenizer {a.tokenizer}: vocabulary {tok.get_vocab_size()}, the demo's is {VOCAB}")
    else:
        tok = train_tokenizer(a.corpus, tok_dir, VOCAB)
    grams, suite_ids = suite_grams(tok)
    docs_by_class, dropped = {}, {}
    for c in CLASSES:
        docs_by_class[c], dropped[c] = clean_docs(read_docs(a.corpus, c), tok, grams)
    print("lines dropped for holding a suite 8-gram", dropped, flush=True)
    (a.out / "corpus_8grams.json").write_text(json.dumps({
        "n": 8, "hash": "sha256 of the ids joined by spaces, first 16 hex digits",
        "filter_token_ids": sorted(suite_ids), "lines_dropped": dropped,
        "grams": corpus_grams(docs_by_class, tok, suite_ids),
    }))
    streams = token_streams(a.corpus, tok, docs_by_class)
    train, val = split_streams(streams)
    print("tokens per class", {c: int(len(s)) for c, s in streams.items()}, f"{time.time() - t0:.0f}s", flush=True)

    bundle = Bundle(SIZES[a.size], VOCAB)
    init_weights(bundle, SEED)
    if a.init:  # continue from an earlier run's weights (a fresh optimizer and schedule)
        bundle.load_weights(str(a.init))
    if a.init_export:  # continue from a shipped export (dequantized), strict: every tensor named
        bundle.load_weights(bundle_weights_from_export(a.init_export, a.init_export_draft))
    bundle.trunk.train()
    n = {"trunk": count(bundle.trunk), "mtp": count(bundle.mtp), "draft": count(bundle.draft)}
    print("params", n, flush=True)

    sched = optim.join_schedules(
        [optim.linear_schedule(1e-5, a.lr, a.warmup), optim.cosine_decay(a.lr, max(1, a.steps - a.warmup), a.lr * 0.1)], [a.warmup]
    )
    t_start = [None]

    def lr_at(it: int) -> float:
        """Step-based warmup + cosine; with --minutes the cosine follows elapsed time instead of steps."""
        if it <= a.warmup or not a.minutes:
            return float(sched(mx.array(it)))
        frac = min(1.0, (time.time() - t_start[0]) / (60 * a.minutes))
        return a.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))

    opt = optim.AdamW(learning_rate=a.lr, weight_decay=0.01)

    def loss_fn(model, x):
        l1, l2, l3 = model.losses(x)
        return l1 + l2 + l3, (l1, l2, l3)

    loss_and_grad = nn.value_and_grad(bundle, loss_fn)

    skipped = []

    def step(x):
        (loss, parts), grads = loss_and_grad(bundle, x)
        grads, norm = optim.clip_grad_norm(grads, 1.0)
        mx.eval(loss, norm)
        if not (math.isfinite(float(loss)) and math.isfinite(float(norm))):
            skipped.append(it)  # a non-finite loss or gradient: no update from this batch
            print(f"step {it}: non-finite loss/gradient, skipped", flush=True)
            return loss, parts
        opt.update(bundle, grads)
        return loss, parts


    def evaluate():
        vr = np.random.default_rng(7)
        out = {}
        for c in CLASSES:
            tot = np.zeros(5)
            for _ in range(4):
                x = batch({k: val[c] for k in CLASSES}, vr, 8, a.seq)
                tot += np.array([float(v) for v in bundle.losses(x, agree=True)])
            out[c] = [round(v, 3) for v in (tot / 4)]
        return out

    curve = []
    t_train = time.time()
    t_start[0] = t_train
    tokens_per_step = a.batch * a.seq
    steps = a.measure or (10**9 if a.minutes else a.steps)
    for it in range(1, steps + 1):
        if a.minutes and time.time() - t_train > 60 * a.minutes:
            steps = it - 1
            break
        opt.learning_rate = mx.array(lr_at(it))
        x = batch(train, rng, a.batch, a.seq)
        loss, parts = step(x)
        mx.eval(loss, bundle.parameters(), opt.state)
        if it == 1:
            t_first = time.time() - t_train
        if it % 25 == 0 or it == steps or a.measure:
            el = time.time() - t_train
            print(f"step {it} loss {float(loss):.3f} lm/mtp/draft {[round(float(p), 3) for p in parts]} "
                  f"{it * tokens_per_step / el:.0f} tok/s {el:.0f}s lr {lr_at(it):.2e}", flush=True)
        if not a.measure and it % a.eval_every == 0:
            ev = evaluate()
            curve.append({"step": it, "seconds": round(time.time() - t_train), "val_loss_lm_mtp_draft__agree_mtp_draft": ev})
            print("eval", json.dumps(curve[-1]), flush=True)
            mx.save_safetensors(str(a.out / "bundle.safetensors"), dict(tree_flatten(bundle.parameters())))
    if not a.measure:
        ev = evaluate()
        curve.append({"step": steps, "seconds": round(time.time() - t_train), "val_loss_lm_mtp_draft__agree_mtp_draft": ev})
        print("eval", json.dumps(curve[-1]), flush=True)
        mx.save_safetensors(str(a.out / "bundle.safetensors"), dict(tree_flatten(bundle.parameters())))
    el = time.time() - t_train
    print(f"done {steps} steps in {el:.0f}s (first step {t_first:.1f}s)", flush=True)
    if a.measure:
        return
    meta = {
        "size": a.size, "seed": SEED, "steps": steps, "batch": a.batch, "seq": a.seq, "lr": a.lr, "warmup": a.warmup, "minutes": a.minutes, "skipped_steps": skipped,
        "init": str(a.init) if a.init else (f"export {a.init_export} + {a.init_export_draft}" if a.init_export else None),
        "tokenizer": str(a.tokenizer) if a.tokenizer else "trained on the corpus",
        "vocab": VOCAB, "train_seconds": round(el), "params": n,
    }
    (a.out / "training_log.json").write_text(json.dumps({**meta, "curve": curve}, indent=1))
    bundle.eval()
    export(bundle, a.out / "export", tok_dir, meta, group_size=a.group_size)
    print("exported", a.out / "export", flush=True)


if __name__ == "__main__":
    main()
