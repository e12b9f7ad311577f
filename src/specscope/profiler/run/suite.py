"""Prompt suites: the default 18-case suite in assets/, or a user's JSON file.

Format (JSON, UTF-8)::

    {"name": "my suite",
     "cases": [{"id": "en-01", "content_class": "en", "prompt": "..."}, ...]}

``id`` and ``content_class`` (the prompt's content class: code, en, zh, ...) are optional (defaults: ``case-N``
and ``other``); ``category``, the old name of ``content_class``, is read too (``content_class`` wins when both
are given). A bare list of cases, or a list of prompt strings, is accepted too.
"""

from __future__ import annotations

import json
from itertools import zip_longest
from pathlib import Path

from specscope.errors import SpecscopeError
from specscope.profiler.run.records import Suite, SuiteCase

# The shipped suite's content classes and what a person reads for them, in the order they are shown; a suite's own
# classes show as they are named
CONTENT_CLASS_NAMES = {"zh": "Chinese", "en": "English", "code": "Code"}


def load_suite(path: str | None = None) -> Suite:
    if path is None:
        from specscope.assets import read_text

        raw, name = read_text("default_suite.json"), "default"
    else:
        p = Path(path).expanduser()
        try:
            data = p.read_bytes()
        except OSError as exc:
            raise SpecscopeError(f"cannot read suite {p}: {exc.strerror or exc}") from None
        try:
            raw = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SpecscopeError(f"suite {p} is not UTF-8 text (bad byte at offset {exc.start})") from None
        name = p.stem
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise SpecscopeError(f"suite {path} is not valid JSON: {exc.msg} at line {exc.lineno}") from None
    cases = doc.get("cases") if isinstance(doc, dict) else doc
    if not isinstance(cases, list) or not cases:
        raise SpecscopeError(f"suite {path} has no cases (expected a \"cases\" list)")
    out: list[SuiteCase] = []
    seen = set()
    for i, c in enumerate(cases):
        if isinstance(c, str):
            c = {"prompt": c}
        if not isinstance(c, dict):
            raise SpecscopeError(f"suite {path}: case {i + 1} is not an object")
        prompt = c.get("prompt")
        if not isinstance(prompt, str):
            raise SpecscopeError(f"suite {path}: case {i + 1} has no \"prompt\" string")
        if not prompt.strip():
            raise SpecscopeError(f"suite {path}: case {i + 1} has an empty prompt")
        cid = str(c.get("id") or f"case-{i + 1:02d}")
        if cid in seen:
            raise SpecscopeError(f"suite {path}: duplicate case id {cid!r}")
        seen.add(cid)
        out.append({"id": cid, "content_class": str(c.get("content_class") or c.get("category") or "other"), "prompt": prompt})
    return {"name": doc.get("name", name) if isinstance(doc, dict) else name, "cases": out}


def take_cases(cases: list[SuiteCase], n: int | None, cycle: bool = False) -> list[SuiteCase]:
    """The first ``n`` cases, spread across content classes (round-robin), in suite order within each. ``cycle``
    (``run --until decided``): more than the suite holds are its cases again, in the same spread order, each pass
    after the first named apart (``en-01#2``), so a run that stops early has every class and ids stay unique."""
    if n is not None and n <= 0:
        raise SpecscopeError("--cases must be at least 1")
    if n is None or (n >= len(cases) and not cycle):
        return list(cases)
    groups: dict[str, list[SuiteCase]] = {}
    for c in cases:
        groups.setdefault(c["content_class"], []).append(c)
    spread: list[SuiteCase] = []
    for row in zip_longest(*groups.values()):
        spread.extend(c for c in row if c is not None)
    picked: list[SuiteCase] = []
    for i in range(n):
        c = spread[i % len(spread)]
        picked.append(c if i < len(spread) else SuiteCase(id=f"{c['id']}#{i // len(spread) + 1}",
                                                           content_class=c["content_class"], prompt=c["prompt"]))
    return picked
