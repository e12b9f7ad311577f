"""The drafters, one table: the name a run takes, what a person reads for it, whether it is a what-if.

A shared leaf (no layer imported): the engine, the core and the app all name drafters, and none may import the
others' modules for it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DrafterKind:
    name: str              # what a run takes (--drafter NAME)
    label: str             # in a sentence: "no k wins with the MTP head"
    title: str             # in a menu: the app's setup
    what_if: bool = False  # drafts from a chance, not from a model: a what-if, never a drafter to pick
    trees: bool = False    # gives per-position distributions (a block's, or its chain's top-b a step): can draft a
                           # tree (--tree-budget)


# The drafters, one table, in the order they are offered ("auto" picks one of them when the engine opens)
DRAFTER_KINDS = (
    DrafterKind("mtp", "the MTP head", "MTP head", trees=True),
    DrafterKind("draft", "the draft model", "Draft model", trees=True),
    DrafterKind("ngram", "n-gram lookup", "N-gram (prompt lookup)"),
    DrafterKind("oracle", "the oracle (what-if)", "Oracle what-if", what_if=True),
    DrafterKind("dflash", "the DFlash drafter", "DFlash drafter (block diffusion)", trees=True),
)
DRAFTER_NAMES = tuple(d.name for d in DRAFTER_KINDS)
DRAFTER_LABELS = {d.name: d.label for d in DRAFTER_KINDS}
WHAT_IF_DRAFTERS = tuple(d.name for d in DRAFTER_KINDS if d.what_if)
TREE_DRAFTERS = tuple(d.name for d in DRAFTER_KINDS if d.trees)
# in a sentence: which drafters draft trees ("dflash (or dflash2), mtp, draft")
TREE_TEXT = ", ".join(f"{n} (or dflash2)" if n == "dflash" else n for n in TREE_DRAFTERS)
