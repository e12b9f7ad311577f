"""A schema-2 session replayed as the events its run emitted (paired passes, components, probe readings): shared by
the summary tests and the tree surfaces' (``from session_events import paired_events``: tests/ is on the path, as
its conftest's folder)."""

from __future__ import annotations

import json
from pathlib import Path

from specscope.profiler.session.schema import migrate_names
from specscope.profiler.session.session import Session


def paired_events(d: dict):
    """The events of a schema-2 session as its run emitted them: paired passes, components, probe readings."""
    yield {"event": "run_started", "config": d["config"], "environment": d["environment"], "model": d["model"], "time": 1.0}
    for i, c in enumerate(d["cases"]):
        info = {k: c[k] for k in ("id", "content_class", "prompt", "prompt_tokens")}
        plain, spec = c["plain"], c["spec"]
        yield {"event": "case_started", "case": info, "index": i, "repeat": 0, "phase": "plain"}
        yield {"event": "prefill", "case": c["id"], "mode": "plain", "token": plain["tokens"][0], "ms": plain["prefill_ms"]}
        for j, (tok, ms) in enumerate(zip(plain["tokens"][1:], plain["step_ms"])):
            yield {"event": "step", "case": c["id"], "index": j + 1, "token": tok, "ms": ms}
        yield {"event": "repeat_done", "case": c["id"], "mode": "plain", "repeat": 0, "tok_s": plain["repeats_tok_s"][0]}
        yield {"event": "breakdown", "case": c["id"], "breakdown": c["breakdown"]}
        yield {"event": "components", "case": c["id"], "components": c["components"]}
        yield {"event": "case_started", "case": info, "index": i, "repeat": 0, "phase": "spec"}
        yield {"event": "prefill", "case": c["id"], "mode": "spec", "token": spec["tokens"][0], "ms": spec["prefill_ms"]}
        for j, rnd in enumerate(spec["rounds"]):
            yield {"event": "round", "case": c["id"], "index": j, **rnd}
        yield {"event": "repeat_done", "case": c["id"], "mode": "spec", "repeat": 0, "tok_s": spec["repeats_tok_s"][0],
               "instrumented_tok_s": spec["repeats_instrumented_tok_s"][0]}
        yield {"event": "case_done", "case": c["id"], "plain_text": c.get("plain_text", ""), "spec_text": c.get("spec_text", "")}
    yield {"event": "run_done", "status": d["status"], "time": 2.0}



PAIRED = Path(__file__).resolve().parent / "fixtures" / "session_demo.json"  # k = 2, three cases, components
BUDGET = 4


def tree_round(r: dict, k: int, budget: int = BUDGET) -> dict:
    """A chain round of the fixture as a tree round: ``budget`` nodes, two a level (parents: each level's first node),
    the same accepted path length; a round cut short by the output's end keeps its shorter depth limit."""
    limit = len(r["drafted"])
    depth = max(1, limit)
    widths = [budget // depth + (1 if i < budget % depth else 0) for i in range(depth)]
    parents, first = [], [0]
    for d, w in enumerate(widths):
        start = len(parents) + 1
        parents += [first[d]] * w
        first.append(start)
    path = first[1:1 + r["accepted"]]
    tokens = [(r["drafted"] + [7] * budget)[i] for i in range(budget)]
    return {**r, "drafted": tokens, "tree": {"nodes": budget, "depth": depth, "widths": widths, "parents": parents,
                                             "path": path, "budget": budget, "max_depth": limit}}


def tree_session_dict() -> dict:
    d = migrate_names(json.loads(PAIRED.read_text(encoding="utf-8")))
    d["config"]["tree_budget"] = BUDGET
    k = d["config"]["num_draft_tokens"]
    for c in d["cases"]:
        c["spec"]["rounds"] = [tree_round(r, k) for r in c["spec"]["rounds"]]
    return d


TIMES = {"1": [10.0, 12.0], "2": [14.0, 16.0], "4": [20.0, 22.0], "8": [40.0]}  # a tree what-if loop's, per case


def session_of(d: dict) -> Session:
    """A session built by replaying ``d``'s events."""
    s = Session()
    for ev in paired_events(d):
        s.apply(ev)
    return s
