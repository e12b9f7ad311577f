"""Engines Mac users run that cannot run behind the seam on this machine, refused with the reason found.

Checked on Linux x86_64 with MLX's CPU backend, mlx 0.32.4 and mlx-lm 0.32.2 (this project's), each wheel installed
with its dependencies in a throwaway virtual environment (the notes: /work/notes/w5s6/opened.md):

- **MTPLX** (PyPI ``mtplx`` 2.12.2, MTP for Qwen3-Next-family models; its loops ``mtplx.generation.generate_mtp1``,
  ``generate_mtpk``, ``generate_mtpa`` over an ``MTPLXRuntime`` from ``mtplx.runtime.load``): macOS only. Its
  generation module cannot be imported elsewhere: ``mtplx.route_tape`` opens ``/usr/lib/libSystem.B.dylib`` (for
  ``mach_absolute_time``) at import. Its wheel says ``Operating System :: MacOS`` and pins, on Apple silicon,
  ``mlx==0.32.2`` and ``mlx-lm>=0.31,<0.32``: it cannot share a process with this project's mlx-lm 0.32.2 either.

(mlx-vlm, checked the same way, runs here: ``engines.mlx_vlm_loop``, the ``vlm`` extra.)

A refused engine is named by ``--engine`` like any other and stops the run before any weights load, with its reason
(``specscope: error: …``, a non-zero exit), never a traceback.
"""

from __future__ import annotations

from specscope.engine_adapter.engines.seam import SpeculativeEngine
from specscope.errors import SpecscopeError

MTPLX_VERSION = "2.12.2"

MTPLX_REASON = (f"engine mtplx ({MTPLX_VERSION}, the version checked) cannot run on this machine: it is macOS-only — "
                "its generation module loads /usr/lib/libSystem.B.dylib at import (mtplx.route_tape), so its "
                "speculative loops (mtplx.generation.generate_mtpk and kin) cannot even be imported on Linux — and on "
                "a Mac it pins mlx 0.32.2 and mlx-lm <0.32, where specscope runs mlx-lm 0.32.2; run it on a Mac in its "
                "own environment")


class RefusedEngine(SpeculativeEngine):
    """An engine that cannot run here: ``refusal`` says why (``Engine.open`` raises it before loading weights)."""

    refusal = "this engine cannot run here"

    def __init__(self, target, draft, params) -> None:
        raise SpecscopeError(self.refusal)


class Mtplx(RefusedEngine):
    name = "mtplx"
    refusal = MTPLX_REASON

