"""The field lists a fold copies are read off their records: a field added to the record reaches the session."""

from __future__ import annotations

import json
import subprocess
import sys

# A fresh interpreter adds a field to each event's record before the session's modules are imported (as a field
# written into the class would be), then folds an event that carries it.
ADD_A_FIELD = """
import json
from specscope import events

events.CooldownEvent.__annotations__["ambient_c"] = float
events.SweepStartedEvent.__annotations__["seed"] = int
from specscope.profiler.session import session

s = session.Session()
s.apply({"event": "cooldown", "case": "a", "waited_s": 1.5, "reached": True, "probe_ms": 2.0, "best_ms": 1.9,
         "ambient_c": 21.5})
s.apply({"event": "sweep_started", "contexts": [0, 64], "order": [0, 64], "passes": 1, "kind": "synthetic",
         "file": None, "seed": 7})
print(json.dumps({"cooldown": s.data["cooldowns"][0], "sweep": {k: v for k, v in s.data["sweep"].items() if k != "points"}}))
"""


def test_a_field_added_to_a_record_reaches_the_fold():
    r = subprocess.run([sys.executable, "-c", ADD_A_FIELD], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["cooldown"] == {"case": "a", "waited_s": 1.5, "reached": True, "probe_ms": 2.0, "best_ms": 1.9,
                               "ambient_c": 21.5}
    assert got["sweep"] == {"contexts": [0, 64], "order": [0, 64], "passes": 1, "kind": "synthetic", "file": None,
                            "seed": 7}


def test_the_lists_are_the_records_fields():
    from specscope.events import CooldownEvent, SweepStartedEvent
    from specscope.profiler.session.records import COOLDOWN_FIELDS, SWEEP_FIELDS, Sweep

    assert set(SWEEP_FIELDS) == (SweepStartedEvent.__required_keys__ | SweepStartedEvent.__optional_keys__) - {"event"}
    # the session's record keeps every field the event carries, and the points it folds
    assert set(SWEEP_FIELDS) | {"points"} == Sweep.__required_keys__ | Sweep.__optional_keys__
    assert set(COOLDOWN_FIELDS) == (CooldownEvent.__required_keys__ | CooldownEvent.__optional_keys__) - {"event"}
