"""A draft in parts (DFlash2's forward and selector walk, timed alone by the components) through the summary and its
text, and the drafter's label naming the variant."""

from specscope.profiler.analysis.draft_parts import draft_parts
from specscope.profiler.analysis.summary_text import draft_parts_text
from specscope.profiler.session.components_fold import fold_components
from specscope.profiler.session.records import drafter_label


def _case(forward, walk):
    return {"components": {"draft_alone_ms": [f + w + 0.1 for f, w in zip(forward, walk)],
                           "draft_forward_ms": forward, "draft_walk_ms": walk}}


def test_the_parts_are_the_mean_over_every_call_of_every_case():
    comp = fold_components(_case([1.0], [0.5])["components"], _case([3.0], [1.5])["components"])
    assert comp["draft_forward_ms"] == [1.0, 3.0] and comp["draft_walk_ms"] == [0.5, 1.5]  # the fold keeps every call
    parts = draft_parts([{"components": comp}, _case([5.0], [3.0])])
    assert parts == {"forward": 3.0, "walk": 5.0 / 3}
    text = draft_parts_text(parts)
    assert "forward 3.000 ms + selector walk 1.667 ms (36% of the draft)" in text


def test_a_drafter_without_parts_or_a_session_without_components_has_none():
    assert draft_parts([{"components": {"draft_alone_ms": [1.0]}}, {}]) is None


def test_the_label_names_a_dflash2_folder_and_leaves_other_drafters_as_they_are():
    assert drafter_label({"drafter": {"name": "dflash", "kind": "dflash", "variant": "dflash2"}}) == "dflash (DFlash2)"
    assert drafter_label({"drafter": {"name": "dflash", "kind": "dflash", "variant": "dflash"}}) == "dflash"
    assert drafter_label({"drafter": {"name": "mtp", "kind": "mtp"}}) == "mtp"
    assert drafter_label({"drafter": "draft"}) == "draft" and drafter_label({}) == "?"
