"""specscope's DFlash2 drafter against the method's reference MLX code (``dflash`` 0.1.0, ``dflash/model_mlx.py``),
on the same target and drafter folders: one forward, then the loop, cycle by cycle.

The reference runs in its own environment (never specscope's), as it is published: e.g.
    python3 -m venv /tmp/dflash-venv
    /tmp/dflash-venv/bin/pip install "mlx[cpu]==0.32.0" "mlx-lm==0.31.3" huggingface_hub   # its pinned versions
    /tmp/dflash-venv/bin/pip install --no-deps dflash==0.1.0
This script, run by specscope's Python, runs itself under ``--reference-python`` for the reference's half (which
imports only mlx, mlx-lm and dflash), then compares:

1. **The forward** after the prompt's prefill: the block [first token, mask × (B−1)]'s drafter logits (max abs
   difference, relative to the largest logit), the greedy walk's picks, and at temperature ``--temp`` the selector's
   q along the reference's sampled path (each position's q given the same previous pick), as {candidate: q}.
2. **The loop**, greedy: the reference's ``stream_generate`` and specscope's ``speculative_generate`` with k = B − 1,
   the tokens each cycle emits (accepted drafts + the bonus), cycle by cycle, up to the reference's first EOS (the
   reference stops there; specscope, a profiler, runs every case to ``max_tokens``). Both draft
   ``min(B − 1, max_tokens − n)`` in their last cycles and cut the bonus past ``max_tokens``.

usage: python tools/dflash2_parity.py --target DIR --drafter DIR --reference-python PY [--max-tokens N] [--temp T]
       [--prompt TEXT ...]
(without --target/--drafter: the random demo target and a random DFlash2 drafter for it, built into /tmp)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

PROMPTS = ["def total(xs):\n    s = 0\n", "The quick brown fox jumps over the lazy dog.", "春眠不觉晓，处处闻啼鸟。"]


# -- the reference's half (its own Python: mlx, mlx-lm, dflash only) -----------------------------------------------

def reference(args) -> dict:
    import mlx.core as mx
    import dflash.model_mlx as R
    from mlx_lm import load
    from mlx_lm.models.cache import make_prompt_cache

    R.snapshot_download = lambda repo, **kw: repo  # a local folder: its loader, unchanged, reads it
    if args.temporal_cache:  # every update through the concatenating path: the window's keys in temporal order
        from mlx_lm.models.cache import RotatingKVCache

        RotatingKVCache.update_and_fetch = RotatingKVCache._update_concat
    model, tokenizer = load(args.target)
    draft = R.load_draft(args.drafter)
    B, mask = int(draft.config.block_size), int(draft.config.mask_token_id)
    out = {"mlx": mx.__version__, "prompts": []}
    for ids in args.ids:
        R._patch_model(model, draft.config.target_layer_ids)
        draft.bind(model)
        cache = make_prompt_cache(model)
        limit = (draft.config.sliding_window - 1
                 if all(t == "sliding_attention" for t in draft.config.layer_types) else None)
        logits, hidden, offset = R._prefill_target(model, mx.array(ids), cache, limit, 2048)
        first = int(mx.argmax(logits[0, -1]).item())
        dcache = draft.make_cache()
        for c in dcache:
            c.offset = offset
        block = mx.array([[first] + [mask] * (B - 1)])
        h = draft.hidden_states(block, hidden, dcache, logits_start=1)
        dl = draft.compute_logits(h)
        greedy, _, _ = draft.candidate_selector.select(h, dl, block[:, 0], 0.0)
        row = {"first": first, "logits": dl[0].astype(mx.float32).tolist(), "walk": greedy[0].tolist(),
               "hidden": hidden[0].astype(mx.float32).tolist(), "hidden_dtype": str(hidden.dtype),
               "hidden_offset": offset}
        if args.temp > 0:
            mx.random.seed(args.seed)
            path, cands, q = draft.candidate_selector.select(h, dl, block[:, 0], args.temp)
            row["sampled"] = {"path": path[0].tolist(), "cands": cands[0].tolist(), "q": q[0].tolist()}
        cycles = [r.tokens for r in R.stream_generate(model, draft, tokenizer, mx.array(ids), max_tokens=args.max_tokens,
                                                      temperature=0.0)]
        row["cycles"] = [c for c in cycles if c]
        out["prompts"].append(row)
    return out


# -- specscope's half ------------------------------------------------------------------------------------------------

def ours(args, ref: dict) -> list[dict]:
    import mlx.core as mx
    import numpy as np
    from mlx_lm.models.cache import make_prompt_cache

    from specscope.engine_adapter.cache.hidden import tapping
    from specscope.engine_adapter.decode.decoding import prefill, speculative_generate
    from specscope.engine_adapter.drafters.dflash_loader import load_dflash_drafter
    from specscope.engine_adapter.model.loader import load_model

    target = load_model(args.target)
    rows = []
    for full_ids, want in zip(args.ids, ref["prompts"]):
        ids = full_ids
        d = load_dflash_drafter(target, args.drafter)
        B = d.spec.block_size
        cache = make_prompt_cache(target.model)
        with tapping() as tap:
            first = int(mx.argmax(prefill(target.model, cache, ids)).item())
            hidden = tap.hidden(d.hidden_mode)
        target_max_abs = None
        if args.same_features:  # the drafter alone: the reference's target features and first token, not ours
            theirs = mx.array(want["hidden"]).astype(getattr(mx, want["hidden_dtype"].split(".")[-1]))
            if want["hidden_offset"] == 0:
                target_max_abs = float(mx.max(mx.abs(theirs.astype(mx.float32) - hidden.astype(mx.float32))).item())
            hidden, first = theirs, want["first"]
            ids = ids[len(ids) - hidden.shape[0]:]  # the positions the reference kept (its window)
        d.begin(list(ids), first, hidden=hidden)
        h, logits = d.block_states(first, B - 1)
        parts = d.model.candidate_selector.candidates(h, logits)
        walk, _ = d.model.candidate_selector.walk(first, parts)
        got, ref_logits = np.array(logits.astype(mx.float32)), np.array(want["logits"], dtype=np.float32)
        row = {"first_equal": first == want["first"], "target_features_max_abs": target_max_abs,
               "logits_max_abs": float(np.abs(got - ref_logits).max()),
               "logits_scale": float(np.abs(ref_logits).max()),
               "walk_equal": walk.tolist() == want["walk"], "walk": walk.tolist(), "ref_walk": want["walk"]}
        if "sampled" in want:
            s = want["sampled"]
            _, q = d.model.candidate_selector.walk(first, parts, args.temp, path=s["path"])
            assert q is not None
            mine = [dict(zip(c, p)) for c, p in zip(np.array(parts[0]).tolist(), np.array(q).tolist())]
            theirs = [dict(zip(c, p)) for c, p in zip(s["cands"], s["q"])]
            row["same_candidates"] = all(set(a) == set(b) for a, b in zip(mine, theirs))
            row["q_max_abs"] = max(abs(a[t] - b.get(t, 0.0)) for a, b in zip(mine, theirs) for t in a)
        ids = full_ids
        d = load_dflash_drafter(target, args.drafter)
        ev = list(speculative_generate(target.model, list(ids), d, B - 1, args.max_tokens))
        cycles = [[ev[0]["token"]]] + [r["emitted"] for r in ev[1:]]
        ref_cycles = want["cycles"]
        n, cut = 0, []
        for c in cycles:  # specscope's cycles, cut at the reference's length
            if n >= sum(map(len, ref_cycles)):
                break
            cut.append(c[:sum(map(len, ref_cycles)) - n])
            n += len(cut[-1])
        first_diff = next((i for i, (a, b) in enumerate(zip(cut, ref_cycles)) if a != b), None)
        row.update(tokens_equal=sum(cut, []) == sum(ref_cycles, []),
                   around_difference=None if first_diff is None else
                   {"ours": cut[first_diff - 1:first_diff + 2], "reference": ref_cycles[first_diff - 1:first_diff + 3]})
        row.update(cycles=len(ref_cycles), cycles_equal=cut == ref_cycles,
                   first_differing_cycle=next((i for i, (a, b) in enumerate(zip(cut, ref_cycles)) if a != b), None),
                   tokens_per_cycle=[len(c) for c in ref_cycles[1:]], ours_tokens_per_cycle=[len(c) for c in cut[1:]])
        rows.append(row)
    return rows


def dflash2_from_dflash(src: Path, out: Path, edge: float = 0.3, seed: int = 0) -> Path:
    """A DFlash2 drafter made from a DFlash one (the shipped trained demo's): identity convolutions (tap 0 of the static
    kernel 1, the rest and the dynamic kernels 0), full attention both ways as DFlash's, and a random selector whose
    edge term has about ``edge`` logits of spread: its drafts are accepted as DFlash's mostly are, so the loop
    comparison covers accepted lengths above 0 (a random drafter's cycles all accept nothing)."""
    import mlx.core as mx

    c = json.loads((src / "config.json").read_text())
    n, H, V = c["num_hidden_layers"], c["hidden_size"], c["vocab_size"]
    c["architectures"], c["is_causal"], c["layer_types"] = ["DFlash2DraftModel"], False, ["full_attention"] * n
    rank, K, G = 32, 2, 16
    c["dflash_config"].update(conv_kernel_size=K, conv_group_size=G, selector_rank=rank, selector_top_k=8)
    w = {k: v for f in sorted(src.glob("*.safetensors")) for k, v in mx.load(str(f)).items()}
    dt = w["fc.weight"].dtype
    base = mx.concatenate([mx.ones((2, 1, H)), mx.zeros((2, K - 1, H))], axis=1).astype(dt)
    for i in range(n):
        for conv in ("attention_conv", "mlp_conv"):
            w[f"layers.{i}.{conv}.base_kernel"] = base
            w[f"layers.{i}.{conv}.kernel_projection.weight"] = mx.zeros((2 * K * H // G, H), dtype=dt)
    keys = mx.random.split(mx.random.key(seed), 3)
    w["candidate_selector.hidden_projection.weight"] = (mx.random.normal((rank, H), key=keys[0]) * H ** -0.5).astype(dt)
    for j, name in enumerate(("predecessor_codebook", "successor_codebook")):
        w[f"candidate_selector.{name}"] = (mx.random.normal((V, rank), key=keys[j + 1]) * edge ** 0.5
                                           * rank ** -0.25).astype(dt)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(c, indent=2))
    mx.save_safetensors(str(out / "model.safetensors"), w, metadata={"format": "pt"})
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--target")
    p.add_argument("--drafter")
    p.add_argument("--reference-python", default="/tmp/dflash-venv/bin/python")
    p.add_argument("--max-tokens", type=int, default=48)
    p.add_argument("--temp", type=float, default=0.7)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--prompt", action="append")
    p.add_argument("--reference-path", help="a folder holding the unpacked dflash wheel, put on the reference's path "
                   "(then --reference-python may be this Python: nothing is installed)")
    p.add_argument("--same-features", action="store_true", help="the forward check reads the reference's target "
                   "features and first token (the drafter alone, whatever the targets' difference)")
    p.add_argument("--temporal-cache", action="store_true",
                   help="patch the reference's RotatingKVCache to keep the window's keys in temporal order (its "
                   "one-token update keeps them in ring order, which its sliding mask does not expect)")
    p.add_argument("--from-dflash", nargs="?", const="dflash", help="the trained demo target and a DFlash2 drafter "
                   "made from its trained DFlash drafter (accepted often, unlike a random one)")
    p.add_argument("--side", choices=["reference"], help=argparse.SUPPRESS)
    p.add_argument("--ids", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.side == "reference":
        args.ids = json.loads(args.ids)
        print(json.dumps(reference(args)))
        return 0
    if args.from_dflash:  # the trained demo and a DFlash2 drafter made from its DFlash drafter
        from specscope.engine_adapter.model.demo_model import trained_demo_path

        target, src = trained_demo_path("hybrid"), trained_demo_path(args.from_dflash)
        assert target is not None and src is not None, "this install has no trained demo"
        out = Path("/tmp/specscope-dflash2-parity/from-dflash")
        if not (out / "config.json").exists():
            dflash2_from_dflash(src, out)
        args.target, args.drafter = str(target), str(out)
    if not args.target or not args.drafter:
        from specscope.engine_adapter.model.demo_model import build_demo_model
        from specscope.engine_adapter.model.dflash2_demo import build_dflash2_demo
        from specscope.engine_adapter.model.loader import load_model

        root = Path("/tmp/specscope-dflash2-parity")
        if not (root / "hybrid" / "config.json").exists():
            build_demo_model(root / "hybrid", "hybrid")
        if not (root / "dflash2" / "config.json").exists():
            build_dflash2_demo(root / "dflash2", load_model(root / "hybrid").checkpoint.text_config, "hybrid", block_size=8,
                               window=16)  # the prompts run past the window
        args.target, args.drafter = str(root / "hybrid"), str(root / "dflash2")
    from specscope.engine_adapter.model.loader import load_model

    target = load_model(args.target)
    args.ids = [target.encode(t) for t in (args.prompt or PROMPTS)]
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = args.reference_path or ""  # the reference's side never sees specscope
    r = subprocess.run([args.reference_python, __file__, "--side", "reference", "--target", args.target, "--drafter",
                        args.drafter, "--max-tokens", str(args.max_tokens), "--temp", str(args.temp), "--seed",
                        str(args.seed), *(["--temporal-cache"] if args.temporal_cache else []), "--ids", json.dumps(args.ids)], capture_output=True, text=True, env=env)
    if r.returncode:
        print(r.stderr[-4000:], file=sys.stderr)
        return r.returncode
    ref = json.loads(r.stdout.strip().splitlines()[-1])
    rows = ours(args, ref)
    print(f"reference: dflash 0.1.0 on mlx {ref['mlx']}; target {args.target}; drafter {args.drafter}")
    for text, row in zip(args.prompt or PROMPTS, rows):
        print(json.dumps({"prompt": text[:24], **{k: v for k, v in row.items() if k not in ("walk", "ref_walk")}}))
    ok = all(r["first_equal"] and r["walk_equal"] and r["cycles_equal"] for r in rows)
    print("parity:", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
