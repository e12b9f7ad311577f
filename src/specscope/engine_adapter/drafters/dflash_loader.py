"""A DFlash-family drafter folder, loaded as what its architecture says: DFlash (``drafters.dflash``) or DFlash2
(``drafters.dflash2``: DFlash's round with DFlash2's network and the selector's walk). The one place that knows both,
so ``--drafter dflash`` (or ``auto`` with a DFlash-family ``--draft-model``), ``check`` and the engine take either."""

from __future__ import annotations

from typing import Any

from specscope.engine_adapter.drafters.dflash import DFlashDrafter, DFlashModel, load_dflash_model
from specscope.engine_adapter.drafters.dflash2 import DFlash2Drafter
from specscope.engine_adapter.drafters.dflash2_model import load_dflash2_model
from specscope.engine_adapter.model.dflash2_format import DFlash2Spec
from specscope.engine_adapter.model.dflash_format import DFlashSpec, check_fits, read_dflash


def drafter_class(spec: DFlashSpec) -> type[DFlashDrafter]:
    """The drafter for a folder ``read_dflash`` read."""
    return DFlash2Drafter if isinstance(spec, DFlash2Spec) else DFlashDrafter


def load_model(spec: DFlashSpec, dtype: str | None = None) -> DFlashModel:
    """The drafter's network with its weights (cast to the run's ``dtype``, as the target's)."""
    return load_dflash2_model(spec, dtype) if isinstance(spec, DFlash2Spec) else load_dflash_model(spec, dtype)


def load_dflash_drafter(target, path, sampling: Any = None) -> DFlashDrafter:
    """Read, check against ``target`` (refusing a misfit before anything runs) and load a DFlash or DFlash2 drafter
    folder."""
    spec = read_dflash(path)
    check_fits(spec, target.checkpoint.text_config, target.path.name)
    return drafter_class(spec)(target, load_model(spec, dtype=getattr(target, "compute_dtype", None)), spec, sampling)
