"""The parts of a model as they will run, for the pre-flight's bfloat16 check (``engine_adapter.preflight``): each
part's dtype *as loaded* — from the checkpoints' headers with the loader's rules (``parts_from_checkpoints``), or from
a loaded engine (``parts_from_engine``). The MTP head is cast to the target's dtype when it loads
(``drafters.mtp_head.build_mtp_head``), so the shipped demo's bfloat16 MTP file runs in float32 like its trunk.
"""

from __future__ import annotations


_DTYPES = {"BF16": "bfloat16", "F16": "float16", "F32": "float32", "F64": "float64"}


def _compute_dtype(tensor_dtypes: dict[str, str]) -> str | None:
    """The dtype a model runs in: its quantization scales' or norm weights' (the rule ``build_mtp_head`` casts the head
    to), read off the stored tensors; None when no such tensor is there."""
    for k, v in tensor_dtypes.items():
        if (k.endswith("scales") or k.endswith("norm.weight")) and not (k.startswith("mtp.") or ".mtp." in k):
            return _DTYPES.get(v, v.lower())
    return None


def parts_from_checkpoints(target: str | None, drafter: str = "auto", draft_model: str | None = None,
                           mtp_weights: str | None = None) -> tuple[list[dict], int | None]:
    """The parts a run with these settings would load, with the dtype each runs in as loaded, read from the files'
    headers (nothing loaded), and the bytes of their files."""
    from .model.checkpoint import open_checkpoint
    from .model.inspect_model import mtp_status

    if not target:
        return [], None
    ck = open_checkpoint(target)
    dtype = _compute_dtype(ck.tensor_dtypes)
    parts = [{"part": "target", "dtype": dtype, "path": str(ck.path), "how": "as stored"}]
    total = ck.file_bytes
    name = drafter
    if name == "auto":
        name = "draft" if draft_model else ("mtp" if (mtp_weights or mtp_status(ck)["available"]) else "ngram")
    if name == "mtp":
        parts.append({"part": "MTP head", "dtype": dtype, "path": str(mtp_weights or ck.path),
                      "how": "cast to the target's dtype when the head loads"})
    if draft_model and name in ("auto", "dflash", "draft"):
        from .model.dflash_format import is_dflash_folder, read_dflash

        if is_dflash_folder(draft_model):  # its own weights, as stored; it reads the target's embedding and head
            spec = read_dflash(draft_model)
            parts.append({"part": "DFlash drafter", "dtype": _compute_dtype(spec.tensor_dtypes),
                          "path": str(spec.path), "how": "as stored"})
            total += sum(f.stat().st_size for f in spec.weight_files)
            return parts, total
    if name == "draft" and draft_model:
        dk = open_checkpoint(draft_model)
        parts.append({"part": "draft model", "dtype": _compute_dtype(dk.tensor_dtypes), "path": str(dk.path),
                      "how": "as stored"})
        total += dk.file_bytes
    return parts, total


def _loaded_dtype(model) -> str | None:
    from .mlx_types import flat

    for k, v in flat(model.parameters()):
        if k.endswith("scales") or k.endswith("norm.weight"):
            return str(v.dtype).rsplit(".", 1)[-1]
    return None


def parts_from_engine(engine) -> tuple[list[dict], int | None]:
    """The parts an opened engine holds, with the dtype each runs in as loaded (read off the loaded parameters; the MTP
    head takes the target's, as ``build_mtp_head`` casts it). An engine without models (a stand-in): no parts."""
    target = getattr(engine, "target", None)
    if target is None or not hasattr(target, "model"):
        return [], None
    dtype = _loaded_dtype(target.model)
    parts = [{"part": "target", "dtype": dtype, "path": str(target.path), "how": "as loaded"}]
    total = int(target.checkpoint.file_bytes)
    name = getattr(engine, "drafter_name", None)
    if name == "mtp":
        src = getattr(engine.params, "mtp_weights", None) or target.path
        parts.append({"part": "MTP head", "dtype": dtype, "path": str(src),
                      "how": "cast to the target's dtype when the head loads"})
    draft = getattr(engine, "draft", None)
    if name == "draft" and draft is not None:
        parts.append({"part": "draft model", "dtype": _loaded_dtype(draft.model), "path": str(draft.path), "how": "as loaded"})
        total += int(draft.checkpoint.file_bytes)
    return parts, total
