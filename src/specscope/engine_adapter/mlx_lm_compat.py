"""mlx-lm's private names, held in one place, and the mlx-lm versions specscope was tested with.

specscope builds models through ``mlx_lm.utils._get_classes`` (the model and argument classes for a config: mlx-lm
has no public name for it), so a release that renames it would break the loader, the checkpoint check, the demo and
the real-shape slice at once. Every use goes through :func:`get_classes`, which turns its absence into a clear
message; pre-flight's versions check (``engine_adapter.preflight``) warns at the start of a run on a version not in
``TESTED``.
"""

from __future__ import annotations

from importlib import metadata

from specscope.errors import SpecscopeError

# the mlx-lm releases this project's suite has passed on (pyproject.toml allows >=0.28,<0.33)
TESTED = ("0.32.2",)


def version() -> str | None:
    """The installed mlx-lm's version, or None when it is not installed."""
    try:
        return metadata.version("mlx-lm")
    except metadata.PackageNotFoundError:
        return None


def untested(installed: str | None) -> str | None:
    """Why ``installed`` is not a tested mlx-lm (a sentence with the fix), or None when it is one."""
    if installed in TESTED:
        return None
    return (f"mlx-lm {installed or '(not installed)'} is not a version specscope was tested with "
            f"({', '.join(TESTED)}); if loading or rollback fails, `pip install mlx-lm=={TESTED[-1]}`")


def get_classes(config: dict):
    """(model class, model-args class) for a model config: ``mlx_lm.utils._get_classes``. Raises ``ValueError`` or
    ``ImportError`` as mlx-lm does for a ``model_type`` it has no module for; a SpecscopeError when mlx-lm itself no
    longer has the function."""
    try:
        from mlx_lm.utils import _get_classes
    except ImportError:
        raise SpecscopeError(f"the installed mlx-lm ({version()}) has no mlx_lm.utils._get_classes, which specscope "
                             f"builds models with: install a tested version (`pip install mlx-lm=={TESTED[-1]}`)") from None
    return _get_classes(config)
