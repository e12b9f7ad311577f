"""What the app's live lines ask the worker, as configuration objects (``measurement.MEASURE``): ``InspectConfig`` (the
setup panel's model line, ``specscope inspect``'s description) and ``PreflightConfig`` (the pre-flight line,
``specscope preflight``'s report). Model references are taken as the CLI takes them (a folder or a cached repo id) and
resolved in the worker, fetched only with ``download``. Nothing here imports the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from specscope.drafter_kinds import DRAFTER_NAMES
from specscope.errors import SpecscopeError

DEMO_ENV = "SPECSCOPE_DEMO"  # the demo's variant for everything the worker loads (engine_adapter.model.demo_model)
DEMO_VARIANTS = ("trained", "random")


def _check_demo(model: str | None, demo: bool, variant: str | None) -> None:
    if model and demo:
        raise SpecscopeError("give a model or --demo, not both")
    if variant is not None and variant not in DEMO_VARIANTS:
        raise SpecscopeError(f"unknown demo variant {variant!r}; choose trained or random")
    if variant is not None and not demo:
        raise SpecscopeError("a demo variant needs --demo")


class _DemoEnv:
    demo_variant: str | None

    @property
    def worker_env(self) -> Mapping[str, str]:
        """What the worker is started with besides the usual (``run_process``, ``runner``): the demo's variant, in the
        environment rather than only a parameter, so every demo path the worker reads (a demo's drafter too) follows."""
        return {DEMO_ENV: self.demo_variant} if self.demo_variant else {}


@dataclass
class InspectConfig(_DemoEnv):
    """``specscope inspect``: a model's description (``engine_adapter.model.inspect_model.describe``, the record a
    run keeps as its session's ``model``), loaded in the worker."""

    model: str | None = None          # a folder or a cached repo id
    demo: bool = False
    demo_variant: str | None = None   # with demo: "trained" or "random" (None: as SPECSCOPE_DEMO says)
    allow_oversize: bool = False
    download: bool = False            # fetch a repo id missing from the cache

    def validate(self) -> None:
        if not self.model and not self.demo:
            raise SpecscopeError("give a model (a folder or a cached repo id like org/name) or --demo")
        _check_demo(self.model, self.demo, self.demo_variant)


@dataclass
class PreflightConfig(_DemoEnv):
    """``specscope preflight``: this machine's checks (``engine_adapter.preflight``), for the parts a run with this
    model and drafter would load (no model nor demo: the machine alone)."""

    model: str | None = None          # a folder or a cached repo id
    demo: bool = False
    demo_variant: str | None = None
    drafter: str = "auto"
    draft_model: str | None = None    # a draft model (with drafter dflash: a DFlash drafter)
    mtp_weights: str | None = None
    readings: str | None = None       # readings saved with --save-readings (another machine's) instead of this one's
    download: bool = False

    def validate(self) -> None:
        _check_demo(self.model, self.demo, self.demo_variant)
        if self.drafter != "auto" and self.drafter not in DRAFTER_NAMES:
            raise SpecscopeError(f"unknown drafter {self.drafter!r}; choose auto, {', '.join(DRAFTER_NAMES)}")
        if self.drafter in ("draft", "dflash") and not self.draft_model and not (self.drafter == "dflash" and self.demo):
            raise SpecscopeError(f"--drafter {self.drafter} needs --draft-model")
