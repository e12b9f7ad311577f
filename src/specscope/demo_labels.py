"""What a demo model's numbers mean, in one line: a leaf every layer (app, core, engine) may use.

``demo`` is a model config's ``specscope_demo`` dict (a session keeps it as ``model.demo``).
"""

from __future__ import annotations

TRAINED_NOTE = "tiny trained demo: acceptance is real for this model, not for yours"
SYNTHETIC_NOTE = "synthetic demo model: timings are real, text and acceptance are not meaningful"


def demo_kind(demo) -> str:
    """'trained', 'shape', 'synthetic', or '' for a real model."""
    if not demo:
        return ""
    kind = demo.get("kind") if isinstance(demo, dict) else None
    return kind if kind in ("trained", "shape") else "synthetic"


def demo_note(demo) -> str:
    """One line for the app, the summary and the reports; empty for a real model."""
    kind = demo_kind(demo)
    if kind == "trained":
        return TRAINED_NOTE
    if kind == "shape":
        return (f"random weights at {demo.get('shape')}'s released dimensions ({demo.get('layers')} layers): "
                "timings are real, text and acceptance are not meaningful")
    return SYNTHETIC_NOTE if kind else ""
