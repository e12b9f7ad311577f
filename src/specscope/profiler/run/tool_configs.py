"""What ``specscope check``, ``capture`` and ``trace`` measure, as configuration objects the worker runs
(``measurement.MEASURE``), built by the CLI from its flags (model references already resolved to folders) or by the
app. Nothing here imports the engine: the checks that need no model are made here, before a worker starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from specscope.errors import SpecscopeError

CAPTURE_ENV = "MTL_CAPTURE_ENABLED"  # Metal records GPU work only in a process that had it when it started


@dataclass
class CheckConfig:
    """``specscope check``: rollback exactness, MTP and windows of a model (``engine_adapter.measure.doctor``), or with
    ``engine`` another engine's acceptance rule at temperature (``engines.audit``)."""

    model: str | None = None          # a folder (None with demo: the demo model)
    demo: bool = False
    max_k: int = 4
    no_mtp: bool = False
    drafter: str | None = None        # "dflash" (also checked), or with engine: the drafter it drafts with
    draft_model: str | None = None    # a DFlash drafter folder (None with --demo: the demo's own)
    engine: str | None = None
    temp: float | None = None         # with engine: None is 0.25
    top_p: float = 0.9
    draws: int = 100
    num_draft_tokens: int = 2
    prompt: str = "Why is the sky blue?"
    allow_oversize: bool = False
    dtype: str | None = None

    def validate(self) -> None:
        if not self.model and not self.demo:
            raise SpecscopeError("give a model (a folder or a cached repo id like org/name) or --demo")
        if self.engine:
            if (self.temp if self.temp is not None else 0.25) <= 0:
                raise SpecscopeError("check --engine tests the acceptance rule at temperature: give --temp above 0")
            return
        if self.drafter in ("draft", "auto"):
            raise SpecscopeError(f"--drafter {self.drafter} is for check --engine NAME (the drafter the engine drafts with)")
        if self.drafter == "dflash" and not self.draft_model and not self.demo:
            raise SpecscopeError("--drafter dflash needs --draft-model FOLDER (a DFlash drafter)")
        if self.draft_model and self.drafter != "dflash":
            raise SpecscopeError("--draft-model needs --drafter dflash here")


@dataclass
class CaptureConfig:
    """``specscope capture``: Metal GPU traces of one decode step and one verify forward into ``out_dir`` (a folder the
    CLI has checked and made), the worker started with ``MTL_CAPTURE_ENABLED=1`` (``worker_env``)."""

    out_dir: str
    prompt: str
    model: str | None = None          # a folder (None with demo)
    model_name: str | None = None     # what to call it (the reference the user gave)
    demo: bool = False
    k: int = 2
    prompt_id: str | None = None
    allow_oversize: bool = False
    check_only: bool = False          # only say whether this machine can capture (the app asks before a folder)
    worker_env: ClassVar[dict[str, str]] = {CAPTURE_ENV: "1"}

    @classmethod
    def probe(cls) -> "CaptureConfig":
        """Whether this machine can capture: refused in the worker (no Metal) before anything is loaded."""
        return cls(out_dir="", prompt="", check_only=True)

    def validate(self) -> None:
        if self.check_only:
            return
        if not self.demo and not self.model:
            raise SpecscopeError("no model: pass --model MODEL or --demo")
        if not 1 <= self.k <= 16:
            raise SpecscopeError(f"-k must be between 1 and 16 (got {self.k})")

@dataclass
class TraceConfig:
    """``specscope trace``: the acceptance trace A(s) of every complete case of the saved session at ``session``, drafted
    by the session's own drafter (``model``, ``draft_model``, ``mtp_weights``: where those are not at their recorded
    paths). The worker emits one ``trace`` event a case; the CLI folds them into the session it writes."""

    session: str
    k_max: int | None = None          # None: max(4, the session's k)
    draws: int = 8
    model: str | None = None
    draft_model: str | None = None
    mtp_weights: str | None = None

    def validate(self) -> None:
        if self.k_max is not None and not 1 <= self.k_max <= 16:
            raise SpecscopeError("--k-max must be between 1 and 16")
        if self.draws < 1:
            raise SpecscopeError("--draws must be at least 1")
