"""Models already on disk for the setup panel: recent paths, the Hugging Face cache, LM Studio folders.

Names come from the same resolver the command line uses (``specscope.model_ref``), so a cached
model is called ``org/name`` in the app, in ``specscope inspect`` and in every report.
"""

from __future__ import annotations

from pathlib import Path

from specscope.model_ref import cached_models, lmstudio_models, ref_for_folder

SOURCE_LABELS = {"hf-cache": "Hugging Face cache", "lmstudio": "LM Studio", "folder": "folder"}


def label_for(path: str, recent: bool = False) -> str:
    ref = ref_for_folder(path)
    where = "recent" if recent else SOURCE_LABELS[ref.source]
    return f"{ref.label}  ({where})"


def find_models(recent: list[str] | None = None) -> list[tuple[str, str]]:
    """(label, path) for every model folder found, recent paths first (deduplicated)."""
    seen, out = set(), []
    for p in recent or []:
        if p and p not in seen and Path(p).exists():
            seen.add(p)
            out.append((label_for(p, recent=True), p))
    for ref in cached_models() + lmstudio_models():
        if ref.path not in seen:
            seen.add(ref.path)
            out.append((label_for(ref.path), ref.path))
    return out


def looks_like_model(path: str) -> bool:
    p = Path(path)
    return p.is_dir() and (p / "config.json").exists()
