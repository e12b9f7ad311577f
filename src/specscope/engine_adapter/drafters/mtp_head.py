"""The checkpoint's own multi-token-prediction head: its modules, and building one from the checkpoint's weights.

Two namings exist; both heads have the same structure::

    x = proj(concat(norm_e(embed(t_{j+1})), norm_h(h_j)))   # proj: [H, 2H]
    x = decoder_layer(x)       # one full-attention (MoE) decoder layer, its own KV cache
    logits = lm_head(norm(x))  # embedding and output head shared with the trunk

- ``qwen3_5`` / ``qwen3_next`` (weights ``mtp.*``, which mlx-lm drops when it loads):
  ``fc``, ``pre_fc_norm_embedding``, ``pre_fc_norm_hidden``, ``layers.0.*``, ``norm``. Norms in
  original checkpoints use the 1+w convention; weights read from a file whose safetensors
  metadata says ``format: mlx`` are taken as already converted.
- ``deepseek_v3`` (DeepSeek-V3, GLM-4.5: the layer past the trunk, ``model.layers.{N}.*`` with
  N = num_hidden_layers): ``eh_proj``, ``enorm``, ``hnorm``, the decoder layer's own names,
  ``shared_head.norm``. Plain RMSNorm weights. The decoder-layer tensors go through the trunk
  model's own ``sanitize`` (expert stacking, MLA ``kv_b_proj`` split, fp8 dequantisation).
  ``shared_head.head`` and ``embed_tokens`` (copies of the trunk's, where present) are not
  loaded: the trunk's are used. Only the first of ``num_nextn_predict_layers`` layers is used.

The decoder layer is built from the trunk's own mlx-lm layer classes, chosen by structure (a
full-attention layer whose parameters are exactly the checkpoint's tensors), never by class name.

The drafter that runs the head: ``mtp``.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
from mlx_lm.models.base import create_attention_mask

from specscope.errors import SpecscopeError

from specscope.engine_adapter.model.checkpoint import (
    is_mtp_key,
    mtp_layer_index,
    mtp_naming,
    open_checkpoint,
    read_safetensors_header,
)
from specscope.engine_adapter.mlx_types import flat

QWEN_STYLES = ("qwen3_5", "qwen3_next")
DEEPSEEK_STYLE = "deepseek_v3"
# Tensors of a DeepSeek-style MTP layer that are the head's own, not its decoder layer's.
_DEEPSEEK_HEAD_PARTS = ("enorm", "hnorm", "eh_proj", "shared_head")
_DEEPSEEK_SHARED = ("embed_tokens.", "shared_head.head.")  # copies of the trunk's: not loaded


def _is_norm(name: str) -> bool:
    """RMSNorm weights: every module whose name mentions norm (norm, q_norm, pre_fc_norm_embedding...)."""
    parts = name.split(".")
    return parts[-1] == "weight" and len(parts) > 1 and "norm" in parts[-2]


def _text_args(model):
    lm = getattr(model, "language_model", model)
    return lm.args


# ---------------------------------------------------------------- the decoder layer, by structure


def _attention_of(layer):
    for n in ("self_attn", "attention", "attn", "linear_attn"):
        mod = getattr(layer, n, None)
        if isinstance(mod, nn.Module):
            return mod
    return None


def _is_full_attention(layer) -> bool:
    if getattr(layer, "is_linear", False) or isinstance(getattr(layer, "linear_attn", None), nn.Module):
        return False
    return any(isinstance(getattr(layer, n, None), nn.Module) for n in ("self_attn", "attention", "attn"))


def _construct(cls, args, layer_idx: int):
    params = [p for p in inspect.signature(cls.__init__).parameters.values() if p.name != "self"]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return cls(args, layer_idx) if len(positional) >= 2 else cls(args)


def _candidate_layers(model, own_index: int | None):
    """Full-attention decoder layers built from the trunk's own layer classes: at the MTP layer's own
    index (DeepSeek naming), then at the first index of each kind of full-attention trunk layer."""
    args = _text_args(model)
    kinds: dict = {}
    for i, layer in enumerate(model.layers):
        if _is_full_attention(layer):
            key = (type(layer), type(getattr(layer, "mlp", None)), type(_attention_of(layer)))
            kinds.setdefault(key, i)
    classes = list(dict.fromkeys(k[0] for k in kinds))
    indices = ([own_index] if own_index is not None else []) + list(kinds.values())
    for cls in classes:
        for idx in dict.fromkeys(indices):
            try:
                layer = _construct(cls, args, idx)
            except Exception:  # an index this class cannot build a layer for
                continue
            if _is_full_attention(layer):
                yield layer


def _pick_layer(candidates, names: set[str]):
    """The candidate whose parameters the checkpoint's tensors cover exactly (fewest left over);
    else the one missing fewest, so the caller can name what is missing."""
    have = {n for n in names if not n.endswith((".scales", ".biases"))}
    best, best_key = None, None
    for layer in candidates:
        want = {k for k, _ in flat(layer.parameters())}
        key = (len(want - have), len(have - want))
        if best_key is None or key < best_key:
            best, best_key = layer, key
    return best


# ---------------------------------------------------------------- heads


@dataclass(frozen=True)
class MTPInfo:
    """Where a head came from (a plain object: an nn.Module keeps dicts and tuples as parameter trees)."""

    style: str = ""
    layer: int | None = None  # the checkpoint's layer index (DeepSeek naming)
    skipped: str = ""  # the checkpoint's own copies of shared tensors, not loaded


class MTPHead(nn.Module):
    """The forward both namings share; subclasses name the parts as their checkpoints do."""

    style = ""
    chain_normed = True  # post-norm chaining feeds the normed output (False: the pre-norm one)
    info = MTPInfo()

    def parts(self):  # (norm_e, norm_h, proj, layer, norm)
        raise NotImplementedError

    def __call__(self, embeds, hidden, cache):
        norm_e, norm_h, proj, layer, norm = self.parts()
        x = proj(mx.concatenate([norm_e(embeds), norm_h(hidden)], axis=-1))
        # An explicit mask array: MLA attention (DeepSeek-V3) needs one, the others accept it.
        mask = create_attention_mask(x, cache, return_array=True)
        x = layer(x, mask=mask, cache=cache)
        return x, norm(x)


class QwenMTPHead(MTPHead):
    """Qwen3.5 / Qwen3-Next: ``mtp.{fc, pre_fc_norm_embedding, pre_fc_norm_hidden, layers.0, norm}``."""

    def __init__(self, args, layer, style: str = "qwen3_5"):
        super().__init__()
        H, eps = args.hidden_size, args.rms_norm_eps
        self.style = style
        self.pre_fc_norm_embedding = nn.RMSNorm(H, eps=eps)
        self.pre_fc_norm_hidden = nn.RMSNorm(H, eps=eps)
        self.fc = nn.Linear(2 * H, H, bias=False)
        self.layers = [layer]
        self.norm = nn.RMSNorm(H, eps=eps)

    def parts(self):
        return self.pre_fc_norm_embedding, self.pre_fc_norm_hidden, self.fc, self.layers[0], self.norm


class _SharedHead(nn.Module):
    def __init__(self, H, eps):
        super().__init__()
        self.norm = nn.RMSNorm(H, eps=eps)


class DeepSeekMTPHead(MTPHead):
    """DeepSeek-V3 / GLM-4.5: ``model.layers.{N}.{enorm, hnorm, eh_proj, <decoder layer>, shared_head.norm}``."""

    style = DEEPSEEK_STYLE
    chain_normed = False  # vLLM's DeepSeek MTP returns the pre-norm state; shared_head.norm is the logits'

    def __init__(self, args, layer):
        super().__init__()
        H, eps = args.hidden_size, args.rms_norm_eps
        self.enorm = nn.RMSNorm(H, eps=eps)
        self.hnorm = nn.RMSNorm(H, eps=eps)
        self.eh_proj = nn.Linear(2 * H, H, bias=False)
        self.mtp_block = layer
        self.shared_head = _SharedHead(H, eps)

    def parts(self):
        return self.enorm, self.hnorm, self.eh_proj, self.mtp_block, self.shared_head.norm


# ---------------------------------------------------------------- weights


def _read_mtp_tensors(path: Path, first_mtp_layer: int | None, model_type: str) -> tuple[dict, bool, str | None]:
    """All MTP tensors under ``path`` (original names), whether they are already mlx-converted, and their naming."""
    ck = open_checkpoint(path) if (path / "config.json").exists() else None
    files = ck.weight_files if ck else sorted(path.glob("*.safetensors"))
    per_file: list[tuple[Path, list[str], bool]] = []
    for f in files:
        header = read_safetensors_header(f)
        names = [k for k in header if k != "__metadata__" and is_mtp_key(k, first_mtp_layer)]
        if names:
            per_file.append((f, names, (header.get("__metadata__") or {}).get("format") == "mlx"))
    style = mtp_naming([k for _, names, _ in per_file for k in names], model_type)
    out, mlx_format = {}, True
    for f, names, is_mlx in per_file:
        # One naming only (a checkpoint with both would be odd): the one mtp_naming reported.
        names = [k for k in names if (k.startswith("mtp.") or ".mtp." in k) == (style in QWEN_STYLES)]
        if names:
            mlx_format = mlx_format and is_mlx
            arrays = mx.load(str(f))
            out.update({k: arrays[k] for k in names})
    return out, mlx_format, style


def _qwen_names(raw: dict, mlx_format: bool, n_experts: int) -> dict:  # dict: tensor name -> array
    """Qwen-style ``mtp.*`` tensors → the head module's names: the ``mtp.`` prefix dropped, experts stacked into
    ``switch_mlp``, and an original checkpoint's 1+w norms made plain."""
    named = {}
    experts: dict[str, list] = {}
    for key, v in raw.items():
        k = key[key.index("mtp.") + 4 :]
        if ".mlp.experts." in k and k.split(".mlp.experts.")[1].split(".")[0].isdigit():
            pre, rest = k.split(".mlp.experts.")
            e, proj = rest.split(".", 1)
            experts.setdefault(f"{pre}.mlp.switch_mlp.{proj}", [None] * n_experts)[int(e)] = v
        elif k.endswith(".mlp.experts.gate_up_proj"):
            pre = k[: -len(".experts.gate_up_proj")]
            mid = v.shape[-2] // 2
            named[f"{pre}.switch_mlp.gate_proj.weight"] = v[..., :mid, :]
            named[f"{pre}.switch_mlp.up_proj.weight"] = v[..., mid:, :]
        elif k.endswith(".mlp.experts.down_proj"):
            named[k.replace(".experts.down_proj", ".switch_mlp.down_proj.weight")] = v
        else:
            named[k] = v
    for k, vs in experts.items():
        if any(x is None for x in vs):
            raise SpecscopeError(f"MTP weights are missing some experts for {k}")
        named[k] = mx.stack(vs)
    if not mlx_format:  # original checkpoints store 1+w norms
        named = {k: (v + 1.0 if v.ndim == 1 and _is_norm(k) else v) for k, v in named.items()}
    return named


def _deepseek_names(model, raw: dict, first_mtp_layer: int) -> tuple[dict, int, list[str]]:
    """``model.layers.{N}.*`` → the head module's names. The tensors go through the trunk model's own
    ``sanitize`` as if they were a trunk layer's (expert stacking, MLA kv_b_proj split, fp8
    dequantisation). Returns (names, N, the shared copies skipped)."""
    indices = [i for k in raw if (i := mtp_layer_index(k, first_mtp_layer)) is not None]
    assert len(indices) == len(raw)  # DeepSeek naming: every MTP tensor is in a layer past the trunk's
    idx = min(indices)
    rel, skipped, prefix = {}, [], ""
    for k, v in raw.items():
        if mtp_layer_index(k, first_mtp_layer) != idx:
            continue  # further MTP layers (num_nextn_predict_layers > 1) are not used
        pre, rest = k.split(f"layers.{idx}.", 1)
        prefix = pre + "layers."
        if rest.startswith(_DEEPSEEK_SHARED):
            skipped.append(rest)
        else:
            rel[rest] = v
    sanitize = getattr(model, "sanitize", None)
    if rel and sanitize is not None:
        # Stand the layer in for a trunk layer: the last one (MoE layers come last), else the first
        # (should a sanitize drop the last index, as deepseek_v3's drops layers.61).
        n = _text_args(model).num_hidden_layers
        for probe in dict.fromkeys((n - 1, 0)):
            tag = f"layers.{probe}."
            try:
                out = sanitize({f"{prefix}{probe}.{k}": v for k, v in rel.items()})
            except Exception as exc:
                raise SpecscopeError(f"could not convert the MTP layer's tensors with {type(model).__module__}'s sanitize: "
                                     f"{type(exc).__name__}: {exc}") from None
            got = {k.split(tag, 1)[1]: v for k, v in out.items() if tag in k}
            if got:
                rel = got
                break
        else:
            raise SpecscopeError(f"{type(model).__module__}'s sanitize dropped the MTP layer's tensors")
    named = {(k if k.split(".")[0] in _DEEPSEEK_HEAD_PARTS else f"mtp_block.{k}"): v for k, v in rel.items()}
    return named, idx, sorted(skipped)


def build_mtp_head(target, weights_path: str | None = None) -> MTPHead:
    model = target.model
    src = Path(weights_path).expanduser() if weights_path else target.path
    if weights_path and not src.is_dir():
        raise SpecscopeError(f"--mtp-weights {src} is not a directory")
    ck = target.checkpoint
    n_layers = ck.text_config.get("num_hidden_layers")
    raw, mlx_format, style = _read_mtp_tensors(src, n_layers if isinstance(n_layers, int) else None, ck.model_type)
    if not raw:
        raise SpecscopeError(
            f"no mtp weights in {src} (neither mtp.* tensors nor a layer past the trunk's {n_layers}, "
            f"model.layers.{n_layers}.*): this checkpoint has no MTP head (converted models often drop it); "
            "pass --mtp-weights with the original checkpoint's folder, or use another drafter"
        )
    assert style is not None  # MTP tensors were found, so they have a naming
    args = _text_args(model)
    if style == DEEPSEEK_STYLE:
        named, own_index, skipped = _deepseek_names(model, raw, n_layers)
        prefix = "mtp_block."
    else:
        named, own_index, skipped = _qwen_names(raw, mlx_format, getattr(args, "num_experts", 0)), None, []
        prefix = "layers.0."
    layer = _pick_layer(_candidate_layers(model, own_index), {k[len(prefix) :] for k in named if k.startswith(prefix)})
    if layer is None:
        raise SpecscopeError(f"could not build a full-attention decoder layer for the MTP head from {type(model).__module__}'s layer classes")
    head = DeepSeekMTPHead(args, layer) if style == DEEPSEEK_STYLE else QwenMTPHead(args, layer, style)
    head.info = MTPInfo(style=style, layer=own_index, skipped=", ".join(skipped))

    expected = dict(flat(head.parameters()))
    quantized_on_disk = any(k.endswith(".scales") for k in named)
    if quantized_on_disk:
        scaled = {k[: -len(".scales")] for k in named if k.endswith(".scales")}  # not `named`: deleted below
        _quantize(head, target, only_if=lambda p: p in scaled)
        expected = dict(flat(head.parameters()))
    missing = sorted(set(expected) - set(named))
    if missing:
        raise SpecscopeError(f"MTP weights in {src} are incomplete: missing {', '.join(missing[:4])}{' …' if len(missing) > 4 else ''}")
    for k, v in expected.items():
        if tuple(named[k].shape) != tuple(v.shape):
            raise SpecscopeError(
                f"MTP weight {k} in {src} has shape {tuple(named[k].shape)}, but this model needs {tuple(v.shape)}: "
                "the weights belong to a different model"
            )
    dtype = next(v.dtype for k, v in flat(model.parameters()) if k.endswith("scales") or k.endswith("norm.weight"))
    keep = getattr(model, "cast_predicate", None) or (lambda k: True)  # e.g. DeepSeek's e_score_correction_bias stays fp32
    floats = (mx.bfloat16, mx.float16, mx.float32)
    head.load_weights([(k, named[k].astype(dtype) if named[k].dtype in floats and keep(k) else named[k]) for k in expected])
    del raw, named, expected  # only the head may keep the (still lazy) float weights alive
    if not quantized_on_disk:
        _quantize(head, target)
    head.eval()
    # Materialise one module at a time: the float copies of a module are freed before the next
    # is read, so loading peaks near the size of the largest module, not of the whole head.
    for _, mod in flat(head.leaf_modules(), is_leaf=nn.Module.is_module):
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
