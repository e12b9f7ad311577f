"""``specscope capture``, measured: ``capture_data(cfg)`` loads the model and records Metal GPU traces of one decode
step and one verify forward (``engine_adapter.measure.gpu_trace.run``), in the worker (``measurement``), which the CLI
and the app start with ``MTL_CAPTURE_ENABLED=1`` (``CaptureConfig.worker_env``)."""

from __future__ import annotations

from specscope.profiler.session.records import CaptureResult
from specscope.profiler.run.tool_configs import CaptureConfig


def capture_data(cfg: CaptureConfig, say=lambda m, *a, **k: None, partial=None, metal=None) -> CaptureResult | None:
    """What was captured (``capture.json``'s content) and where; ``metal``: ``mx.metal`` unless a test passes a fake.
    ``cfg.check_only``: refuse where Metal is missing, capture nothing (None)."""
    from specscope.engine_adapter.measure.gpu_trace import require_metal, run

    cfg.validate()
    if cfg.check_only:
        require_metal(metal)
        return None
    spec = {"demo": cfg.demo, "model_path": cfg.model, "model_name": cfg.model_name, "k": cfg.k, "out_dir": cfg.out_dir,
            "prompt": cfg.prompt, "prompt_id": cfg.prompt_id, "allow_oversize": cfg.allow_oversize}
    return {"description": dict(run(spec, metal=metal, log=say)), "out_dir": cfg.out_dir}
