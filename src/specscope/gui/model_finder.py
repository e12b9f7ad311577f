"""Models already on disk: Hugging Face cache, LM Studio folders, recent paths. Portable paths only."""

from __future__ import annotations

import os
from pathlib import Path


def _hf_hub() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]) / "hub"
    return Path.home() / ".cache" / "huggingface" / "hub"


def _hf_models() -> list[tuple[str, str]]:
    out = []
    hub = _hf_hub()
    try:
        entries = sorted(hub.glob("models--*"))
    except OSError:
        return out
    for e in entries:
        snaps = e / "snapshots"
        try:
            cands = sorted((s for s in snaps.iterdir() if (s / "config.json").exists()), key=lambda s: s.stat().st_mtime, reverse=True)
        except OSError:
            continue
        if cands:
            name = e.name[len("models--"):].replace("--", "/")
            out.append((f"{name}  (Hugging Face cache)", str(cands[0])))
    return out


def _lmstudio_models() -> list[tuple[str, str]]:
    out = []
    roots = [Path.home() / ".lmstudio" / "models", Path.home() / ".cache" / "lm-studio" / "models"]
    for root in roots:
        try:
            pubs = sorted(p for p in root.iterdir() if p.is_dir())
        except OSError:
            continue
        for pub in pubs:
            try:
                models = sorted(m for m in pub.iterdir() if (m / "config.json").exists())
            except OSError:
                continue
            for m in models:
                out.append((f"{pub.name}/{m.name}  (LM Studio)", str(m)))
    return out


def find_models(recent: list[str] | None = None) -> list[tuple[str, str]]:
    """(label, path) for every model folder found, recent paths first (deduplicated)."""
    seen, out = set(), []
    for p in recent or []:
        if p and p not in seen and Path(p).exists():
            seen.add(p)
            out.append((f"{Path(p).name}  (recent: {p})", p))
    for label, p in _hf_models() + _lmstudio_models():
        if p not in seen:
            seen.add(p)
            out.append((label, p))
    return out


def looks_like_model(path: str) -> bool:
    p = Path(path)
    return p.is_dir() and (p / "config.json").exists()
