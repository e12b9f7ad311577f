"""The checkpoint's own multi-token-prediction head as a drafter (Qwen3.5 / Qwen3-Next).

Structure (weights ``mtp.*``, which mlx-lm drops when it loads)::

    x = fc(concat(norm_e(embed(t_{j+1})), norm_h(h_j)))    # fc: [H, 2H]
    x = decoder_layer(x)       # one full-attention MoE layer, its own KV cache
    logits = lm_head(norm(x))  # embedding and output head shared with the trunk

Norms in original checkpoints use the 1+w convention; weights read from a
file whose safetensors metadata says ``format: mlx`` are taken as already
converted. ``k > 1`` chains the head on its own output hidden state.

Hidden-state source (``hidden``): ``post-norm`` (default, as vLLM and
llama.cpp) feeds the trunk's final-norm output; ``pre-norm`` its input.

Cache bookkeeping: the MTP cache holds one entry per (h_j, t_{j+1}) pair of
*verified* positions. Chained draft steps add provisional entries that are
dropped once the target has verified the round; the verified pairs are fed
in one catch-up forward at the start of the next draft (and timed as draft).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
from mlx_lm.models.base import create_attention_mask
from mlx_lm.models.cache import KVCache

from .checkpoint import open_checkpoint, read_safetensors_header
from .drafters import Draft, Drafter
from .errors import SpecscopeError
from .hidden import trunk_parts



def _is_norm(name: str) -> bool:
    """RMSNorm weights: every module whose name mentions norm (norm, q_norm, pre_fc_norm_embedding...)."""
    parts = name.split(".")
    return parts[-1] == "weight" and len(parts) > 1 and "norm" in parts[-2]


def _text_args(model):
    lm = getattr(model, "language_model", model)
    return lm.args


def _decoder_layer_class(model):
    return sys.modules[type(model.layers[0]).__module__].DecoderLayer


class MTPHead(nn.Module):
    def __init__(self, model):
        super().__init__()
        args = _text_args(model)
        H = args.hidden_size
        self.pre_fc_norm_embedding = nn.RMSNorm(H, eps=args.rms_norm_eps)
        self.pre_fc_norm_hidden = nn.RMSNorm(H, eps=args.rms_norm_eps)
        self.fc = nn.Linear(2 * H, H, bias=False)
        Layer = _decoder_layer_class(model)
        full_idx = getattr(args, "full_attention_interval", 1) - 1
        self.layers = [Layer(args, full_idx)]
        if getattr(self.layers[0], "is_linear", False):
            raise SpecscopeError("could not build a full-attention layer for the MTP head")
        self.norm = nn.RMSNorm(H, eps=args.rms_norm_eps)

    def __call__(self, embeds, hidden, cache):
        x = self.fc(mx.concatenate([self.pre_fc_norm_embedding(embeds), self.pre_fc_norm_hidden(hidden)], axis=-1))
        mask = create_attention_mask(x, cache)
        x = self.layers[0](x, mask=mask, cache=cache)
        return x, self.norm(x)


def _read_mtp_tensors(path: Path) -> tuple[dict, bool]:
    """All mtp.* tensors under ``path`` (prefix-normalised) and whether they are already mlx-converted."""
    ck = open_checkpoint(path) if (path / "config.json").exists() else None
    files = ck.weight_files if ck else sorted(path.glob("*.safetensors"))
    out, mlx_format = {}, True
    for f in files:
        header = read_safetensors_header(f)
        names = [k for k in header if k != "__metadata__" and (k.startswith("mtp.") or ".mtp." in k)]
        if not names:
            continue
        if (header.get("__metadata__") or {}).get("format") != "mlx":
            mlx_format = False
        arrays = mx.load(str(f))
        for k in names:
            out[k[k.index("mtp.") + 4 :]] = arrays[k]
    return out, mlx_format


def _to_module_names(w: dict, n_experts: int) -> dict:
    """Original names → the MTPHead module's names (experts stacked into switch_mlp)."""
    out = {}
    experts: dict[str, list] = {}
    for k, v in w.items():
        if ".mlp.experts." in k and k.split(".mlp.experts.")[1].split(".")[0].isdigit():
            pre, rest = k.split(".mlp.experts.")
            e, proj = rest.split(".", 1)
            experts.setdefault(f"{pre}.mlp.switch_mlp.{proj}", [None] * n_experts)[int(e)] = v
        elif k.endswith(".mlp.experts.gate_up_proj"):
            pre = k[: -len(".experts.gate_up_proj")]
            mid = v.shape[-2] // 2
            out[f"{pre}.switch_mlp.gate_proj.weight"] = v[..., :mid, :]
            out[f"{pre}.switch_mlp.up_proj.weight"] = v[..., mid:, :]
        elif k.endswith(".mlp.experts.down_proj"):
            out[k.replace(".experts.down_proj", ".switch_mlp.down_proj.weight")] = v
        else:
            out[k] = v
    for k, vs in experts.items():
        if any(x is None for x in vs):
            raise SpecscopeError(f"MTP weights are missing some experts for {k}")
        out[k] = mx.stack(vs)
    return out


def build_mtp_head(target, weights_path: str | None = None) -> MTPHead:
    model = target.model
    src = Path(weights_path).expanduser() if weights_path else target.path
    if weights_path and not src.is_dir():
        raise SpecscopeError(f"--mtp-weights {src} is not a directory")
    raw, mlx_format = _read_mtp_tensors(src)
    if not raw:
        raise SpecscopeError(
            f"no mtp.* weights in {src}: this checkpoint has no MTP head (converted models often drop it); "
            "pass --mtp-weights with the original checkpoint's folder, or use another drafter"
        )
    args = _text_args(model)
    head = MTPHead(model)
    named = _to_module_names(raw, getattr(args, "num_experts", 0))
    if not mlx_format:
        named = {k: (v + 1.0 if v.ndim == 1 and _is_norm(k) else v) for k, v in named.items()}
    from mlx.utils import tree_flatten

    expected = dict(tree_flatten(head.parameters()))
    quantized_on_disk = any(k.endswith(".scales") for k in named)
    if quantized_on_disk:
        _quantize(head, target, only_if=lambda p: f"{p}.scales" in named)
        expected = dict(tree_flatten(head.parameters()))
    missing = sorted(set(expected) - set(named))
    if missing:
        raise SpecscopeError(f"MTP weights in {src} are incomplete: missing {', '.join(missing[:4])}{' …' if len(missing) > 4 else ''}")
    for k, v in expected.items():
        if tuple(named[k].shape) != tuple(v.shape):
            raise SpecscopeError(
                f"MTP weight {k} in {src} has shape {tuple(named[k].shape)}, but this model needs {tuple(v.shape)}: "
                "the weights belong to a different model"
            )
    dtype = next(v.dtype for k, v in tree_flatten(model.parameters()) if k.endswith("scales") or k.endswith("norm.weight"))
    head.load_weights([(k, named[k].astype(dtype) if named[k].dtype in (mx.bfloat16, mx.float16, mx.float32) else named[k]) for k in expected])
    del raw, named, expected  # only the head may keep the (still lazy) float weights alive
    if not quantized_on_disk:
        _quantize(head, target)
    head.eval()
    # Materialise one module at a time: the float copies of a module are freed before the next
    # is read, so loading peaks near the size of the largest module, not of the whole head.
    for _, mod in tree_flatten(head.leaf_modules(), is_leaf=nn.Module.is_module):
        mx.eval(mod.parameters())
    return head


def _quantize(head, target, only_if=None):
    q = target.config.get("quantization")
    if not q:
        return
    model = target.model
    trunk_pred = getattr(model, "quant_predicate", None)

    def pred(path, module):
        if not hasattr(module, "to_quantized"):
            return False
        if only_if is not None and not only_if(path):
            return False
        if trunk_pred is not None:
            return trunk_pred(path, module)
        return True

    nn.quantize(head, group_size=q["group_size"], bits=q["bits"], mode=q.get("mode", "affine"), class_predicate=pred)


class MTPDrafter(Drafter):
    kind = "mtp"
    needs_hidden = True

    def __init__(self, target, head: MTPHead, hidden: str = "post-norm", source: str = ""):
        self.model = target.model
        self.head = head
        self.hidden_mode = hidden
        self.source = source
        self.embed, self.lm_head = trunk_parts(self.model)["embed"], trunk_parts(self.model)["head"]
        self.cache = None
        self.pending_hidden = None
        self.pending_tokens: list[int] = []
        self.after_catchup = 0
        self.drafted = False

    def _logits(self, x_normed):
        return self.lm_head(x_normed)

    def begin(self, prompt, first_token, hidden=None):
        if hidden is None:
            raise RuntimeError("the MTP drafter needs the trunk's hidden states")
        self.cache = KVCache()
        tokens = list(prompt[1:]) + [first_token]  # t_{j+1} for each prompt position j
        # The head's own prefill: all prompt pairs but the last go into its cache now, so the
        # first round's draft time holds one catch-up position like every later round.
        if len(tokens) > 1:
            self._step(mx.array(tokens[:-1], dtype=mx.uint32), hidden[:-1])
            mx.eval(self.cache.state)
        self.pending_hidden = hidden[-1:]
        self.pending_tokens = tokens[-1:]

    def _step(self, tokens: mx.array, hidden: mx.array):
        pre, post = self.head(self.embed(tokens)[None], hidden[None], self.cache)
        return (post if self.hidden_mode == "post-norm" else pre)[0], post[0]

    def draft(self, last_token, k):
        self.drafted = k > 0
        if k == 0:
            return Draft([])
        chain_h, normed = self._step(mx.array(self.pending_tokens, dtype=mx.uint32), self.pending_hidden)
        self.after_catchup = self.cache.offset
        y = mx.argmax(self._logits(normed[-1:]), axis=-1).astype(mx.uint32)
        out = [y]
        h = chain_h[-1:]
        for _ in range(k - 1):
            h, normed = self._step(y, h)
            y = mx.argmax(self._logits(normed), axis=-1).astype(mx.uint32)
            out.append(y)
        toks = mx.concatenate(out)
        mx.eval(toks)
        return Draft(toks.tolist())

    def update(self, accepted, draft, emitted, hidden=None):
        new_hidden = hidden[: accepted + 1]
        if self.drafted:
            extra = self.cache.offset - self.after_catchup
            if extra > 0:
                self.cache.trim(extra)  # drop provisional chained entries
            self.pending_hidden, self.pending_tokens = new_hidden, list(emitted)
        else:  # nothing was fed this round: keep accumulating verified pairs
            self.pending_hidden = mx.concatenate([self.pending_hidden, new_hidden], axis=0)
            self.pending_tokens += list(emitted)

    def describe(self):
        return {**super().describe(), "hidden": self.hidden_mode, "weights": self.source}


def load_mtp_drafter(target, weights_path: str | None = None, hidden: str = "post-norm") -> MTPDrafter:
    head = build_mtp_head(target, weights_path)
    return MTPDrafter(target, head, hidden=hidden, source=str(weights_path or target.path))
