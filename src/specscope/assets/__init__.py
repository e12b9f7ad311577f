"""Data files shipped with specscope: the default prompt suite, the demo corpus."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def path(name: str) -> Path:
    """Filesystem path of a shipped asset."""
    return Path(str(resources.files(__name__) / name))


def read_text(name: str) -> str:
    return (resources.files(__name__) / name).read_text(encoding="utf-8")
