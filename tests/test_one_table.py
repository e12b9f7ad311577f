"""Meaning-level copies the duplicate finder cannot see: the drafters and the content classes are each one table."""

from __future__ import annotations

import re
from pathlib import Path

import specscope

SRC = Path(specscope.__file__).resolve().parent
NAMES = r'"(?:mtp|draft|ngram|oracle|dflash)"'


def _sources():
    return [(p, p.read_text(encoding="utf-8")) for p in SRC.rglob("*.py")]


def test_the_drafters_are_one_table():
    from specscope.drafter_kinds import DRAFTER_LABELS, DRAFTER_NAMES, WHAT_IF_DRAFTERS
    from specscope.engine_adapter import tune_runs
    from specscope.profiler.analysis import tune
    from specscope.profiler.run.config import DRAFTERS

    assert DRAFTERS == ("auto", *DRAFTER_NAMES)
    assert tune.LABELS is DRAFTER_LABELS and tune.WHAT_IF == set(WHAT_IF_DRAFTERS)
    assert set(tune_runs.REAL_DRAFTERS) == set(DRAFTER_NAMES) - set(WHAT_IF_DRAFTERS)
    # no second spelling: no literal lists three drafter names side by side
    listed = [p.relative_to(SRC).as_posix() for p, text in _sources()
              if re.search(rf"{NAMES},\s*{NAMES},\s*{NAMES}", text)]
    assert listed == [], listed
    labelled = [p.relative_to(SRC).as_posix() for p, text in _sources() if '"the MTP head"' in text]
    assert labelled == ["drafter_kinds.py"]


def test_the_content_classes_are_one_table():
    from specscope.profiler.run.suite import CONTENT_CLASS_NAMES

    held = [p.relative_to(SRC).as_posix() for p, text in _sources() if re.search(r'"zh":\s*"Chinese"', text)]
    assert held == ["profiler/run/suite.py"] and set(CONTENT_CLASS_NAMES) == {"zh", "en", "code"}


def test_the_apps_drafter_menu_offers_every_drafter_the_run_takes():
    from specscope.gui.setup_panel import DRAFTERS as MENU
    from specscope.profiler.run.config import DRAFTER_ALIASES, DRAFTERS

    assert tuple(name for name, _ in MENU) == DRAFTERS + DRAFTER_ALIASES
