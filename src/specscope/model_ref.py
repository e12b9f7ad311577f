"""Model references as mlx-lm users write them: a local folder, or a repo id from the Hugging Face cache.

One resolver for every place a model is taken (CLI, app, worker) and one way to name a model:
``org/name`` (with the revision beside it) when it lives in the Hugging Face cache, the folder
name otherwise. The cache is read with huggingface_hub's own functions; the network is used only
by :func:`download`, which the user asks for with ``--download``.

This module is a leaf: no MLX, no Qt, importable from every layer.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from specscope.errors import SpecscopeError

# What --download fetches: weights, configs and tokenizers. Never code (*.py), never pickles.
DOWNLOAD_PATTERNS = ["*.json", "*.safetensors", "*.model", "*.tiktoken", "*.txt", "*.jinja"]
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
_CACHE_ENTRY = re.compile(r"^models--(.+)$")


@dataclass(frozen=True)
class ModelRef:
    """Where a model is on disk and what to call it."""

    path: str  # the folder holding config.json (a cache snapshot, or the user's folder)
    name: str  # "org/name" for a cache entry, else the folder's name
    source: str  # "hf-cache", "lmstudio" or "folder"
    repo_id: str | None = None
    revision: str | None = None  # the snapshot's commit hash, for a cache entry
    requested: str | None = None  # what the user typed

    @property
    def label(self) -> str:
        """The name with its revision, for headings: ``org/name @ 0123abc``."""
        return f"{self.name} @ {self.revision[:7]}" if self.revision else self.name


def hub_cache_dir() -> Path:
    """The Hugging Face hub cache, read from the environment now (HF_HUB_CACHE, then HF_HOME)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def split_revision(spec: str) -> tuple[str, str | None]:
    """``org/name@rev`` → (``org/name``, ``rev``)."""
    if "@" in spec:
        repo, rev = spec.rsplit("@", 1)
        return repo, (rev or None)
    return spec, None


def looks_like_repo_id(spec: str) -> bool:
    repo, _ = split_revision(spec)
    return bool(_REPO_ID.match(repo)) and not repo.startswith((".", "~")) and ".." not in repo


def _lmstudio_roots() -> list[Path]:
    home = Path.home()
    return [home / ".lmstudio" / "models", home / ".cache" / "lm-studio" / "models"]


def ref_for_folder(folder: str | os.PathLike, requested: str | None = None) -> ModelRef:
    """Name a local model folder: a cache snapshot by its repo id, an LM Studio folder by publisher/model."""
    p = Path(folder).expanduser()
    try:
        p = p.resolve()
    except OSError:
        pass
    # .../models--org--name/snapshots/<commit>
    if p.parent.name == "snapshots":
        m = _CACHE_ENTRY.match(p.parent.parent.name)
        if m:
            repo_id = m.group(1).replace("--", "/")
            return ModelRef(str(p), repo_id, "hf-cache", repo_id, p.name, requested)
    for root in _lmstudio_roots():
        try:
            rel = p.relative_to(root.resolve())
        except (ValueError, OSError):
            continue
        if len(rel.parts) == 2:
            return ModelRef(str(p), rel.as_posix(), "lmstudio", None, None, requested)
    name = p.name if p.name not in ("", ".") else str(p)
    return ModelRef(str(p), name, "folder", None, None, requested)


def _from_cache_entry(entry: Path, requested: str) -> ModelRef:
    """A ``models--org--name`` folder given as a path: its refs/main snapshot (else the newest one)."""
    m = _CACHE_ENTRY.match(entry.name)
    repo_id = m.group(1).replace("--", "/") if m else None
    if repo_id:
        found = _find_in_cache(repo_id, None, entry.parent)
        if found:
            return ref_for_folder(found, requested)
    snaps = entry / "snapshots"
    cands = sorted((s for s in snaps.iterdir() if (s / "config.json").exists()), key=lambda s: s.stat().st_mtime)
    if not cands:
        raise SpecscopeError(f"{entry} is a Hugging Face cache entry with no complete snapshot (no config.json)")
    return ref_for_folder(cands[-1], requested)


def _find_in_cache(repo_id: str, revision: str | None, cache_dir: Path) -> Path | None:
    from huggingface_hub import try_to_load_from_cache

    try:
        hit = try_to_load_from_cache(repo_id, "config.json", cache_dir=str(cache_dir), revision=revision)
    except Exception:  # a malformed id or cache: treated as "not there"
        return None
    return Path(hit).parent if isinstance(hit, str) else None


def resolve_model(spec: str | os.PathLike, download: bool = False, what: str = "model") -> ModelRef:
    """A local folder, a cache entry folder, or a repo id (``org/name[@revision]``) → a ModelRef.

    A repo id is looked up in the local cache only; with ``download=True`` a missing one is fetched
    (safetensors, configs and tokenizer files only). Errors say what to do next.
    """
    spec = str(spec).strip()
    if not spec:
        raise SpecscopeError(f"no {what} given")
    p = Path(spec).expanduser()
    if p.exists():
        if not p.is_dir():
            raise SpecscopeError(f"{what} path is not a directory: {p} (point at the folder that holds config.json)")
        if (p / "config.json").exists():
            return ref_for_folder(p, spec)
        if (p / "snapshots").is_dir():
            return _from_cache_entry(p, spec)
        raise SpecscopeError(f"no config.json in {p}: this does not look like an mlx-lm model folder")
    if not looks_like_repo_id(spec):
        raise SpecscopeError(f"{what} path does not exist: {p}")
    repo_id, revision = split_revision(spec)
    cache = hub_cache_dir()
    found = _find_in_cache(repo_id, revision, cache)
    if found is not None:
        return ref_for_folder(found, spec)
    if download:
        return ref_for_folder(download_model(repo_id, revision, cache), spec)
    looked = f"revision {revision!r} of " if revision else ""
    raise SpecscopeError(
        f"{what} {spec!r} is neither a folder here nor in the local Hugging Face cache ({looked}{repo_id} not found in "
        f"{cache}); to fetch it, add --download (or run `hf download {repo_id}`{' --revision ' + revision if revision else ''})"
    )


def download_model(repo_id: str, revision: str | None, cache: Path) -> Path:
    """Fetch a model into the cache with huggingface_hub (progress bars on stderr); never code files."""
    from huggingface_hub import constants, snapshot_download

    flags = [v for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE") if os.environ.get(v, "").lower() in ("1", "true", "yes", "on")]
    if constants.HF_HUB_OFFLINE or flags:
        raise SpecscopeError(f"cannot download {repo_id}: offline mode is on ({' and '.join(flags) or 'HF_HUB_OFFLINE'} "
                             "set); unset it to download")
    try:
        path = snapshot_download(repo_id, revision=revision, cache_dir=str(cache), allow_patterns=DOWNLOAD_PATTERNS)
    except Exception as exc:  # network, auth, missing repo: one clear line, never a traceback
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SpecscopeError(f"could not download {repo_id}{'@' + revision if revision else ''}: {reason}") from None
    if not (Path(path) / "config.json").exists():
        raise SpecscopeError(f"downloaded {repo_id}, but it has no config.json: not an mlx-lm model")
    return Path(path)


def cached_models() -> list[ModelRef]:
    """Every model in the local Hugging Face cache (its refs/main snapshot, else the newest), by repo id."""
    cache = hub_cache_dir()
    if not cache.is_dir():
        return []  # without importing the scanner (and the HTTP client under it): the app opens sooner
    from huggingface_hub import scan_cache_dir

    try:
        info = scan_cache_dir(cache)
    except Exception:
        return []
    out = []
    for repo in sorted(info.repos, key=lambda r: r.repo_id):
        if repo.repo_type != "model":
            continue
        revs = [r for r in repo.revisions if (Path(r.snapshot_path) / "config.json").exists()]
        if not revs:
            continue
        main = [r for r in revs if "main" in r.refs]
        best = main[0] if main else max(revs, key=lambda r: r.last_modified)
        out.append(ref_for_folder(best.snapshot_path, repo.repo_id))
    return out


def lmstudio_models() -> list[ModelRef]:
    out: list[ModelRef] = []
    for root in _lmstudio_roots():
        try:
            pubs = sorted(p for p in root.iterdir() if p.is_dir())
        except OSError:
            continue
        for pub in pubs:
            try:
                models = sorted(m for m in pub.iterdir() if (m / "config.json").exists())
            except OSError:
                continue
            out.extend(ref_for_folder(m) for m in models)
    return out
