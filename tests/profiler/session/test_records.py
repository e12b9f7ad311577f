"""The typed records say what a session really holds: every key the fixture sessions (real runs: one rank, two
ranks, a real model's shape, a schema-1 file) and their figures carry is declared in ``session/records.py``, every
required key is there, and the figures' records list exactly what ``summarize`` and ``case_stats`` return."""

from __future__ import annotations

from pathlib import Path

import pytest

from specscope.profiler.analysis.summary import session_case_stats, summarize
from specscope.profiler.session import measured, records
from specscope.profiler.session.session import Session

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SESSIONS = sorted(p.name for p in FIXTURES.glob("session_*.json"))


def keys_fit(record, d: dict, where: str) -> None:
    declared = set(record.__annotations__)
    extra = set(d) - declared
    assert not extra, f"{where}: keys {sorted(extra)} are not in records.{record.__name__}"
    missing = set(record.__required_keys__) - set(d)
    assert not missing, f"{where}: required keys {sorted(missing)} of records.{record.__name__} are absent"


@pytest.mark.parametrize("name", SESSIONS)
def test_the_records_declare_every_key_a_session_holds(name):
    assert len(SESSIONS) >= 4
    s = Session.load(FIXTURES / name)
    keys_fit(records.SessionData, s.data, name)
    assert s.cases
    n_rounds = 0
    for c in s.cases:
        keys_fit(records.Case, c, f"{name} case {c['id']}")
        keys_fit(records.PlainSide, c["plain"], f"{name} {c['id']} plain")
        keys_fit(records.SpecSide, c["spec"], f"{name} {c['id']} spec")
        for r in c["spec"]["rounds"]:
            keys_fit(records.Round, r, f"{name} {c['id']} round")
            n_rounds += 1
        if c["breakdown"]:
            keys_fit(records.Breakdown, c["breakdown"], f"{name} {c['id']} breakdown")
            for phase in ("decode", "verify"):
                keys_fit(records.PhaseBreakdown, c["breakdown"][phase], f"{name} {c['id']} {phase}")
        if c.get("components"):
            keys_fit(records.Components, c["components"], f"{name} {c['id']} components")
        if c.get("divergence"):
            keys_fit(records.Divergence, c["divergence"], f"{name} {c['id']} divergence")
    for p in s.data.get("probe", []):
        keys_fit(records.ProbeReading, p, f"{name} probe")
    assert n_rounds


@pytest.mark.parametrize("name", SESSIONS)
def test_the_figure_records_list_exactly_what_the_analysis_returns(name):
    s = Session.load(FIXTURES / name)
    assert set(summarize(s)) == set(records.Summary.__annotations__)
    for c in s.cases:
        assert set(session_case_stats(s, c)) == set(records.CaseStats.__annotations__)


def test_a_key_the_records_lack_is_caught():
    """The check above can fail: a round with a key its record does not declare."""
    with pytest.raises(AssertionError, match="not in records.Round"):
        keys_fit(records.Round, {**dict.fromkeys(records.ROUND_FIELDS), "verfiy_ms": 1.0}, "planted")
    with pytest.raises(AssertionError, match="required keys"):
        keys_fit(records.Case, {"id": "x"}, "planted")


def test_the_key_lists_the_fold_walks_are_the_records():
    # every field a round has, and the ones it may have (a tree round's ``tree``), which the fold keeps when present
    assert set(records.ROUND_FIELDS) == set(records.Round.__required_keys__) | set(records.RoundCore.__optional_keys__)
    assert records.DIVERGENCE_FIELDS == tuple(records.Divergence.__annotations__)
    assert records.CONTEXT_FACTS == tuple(records.ContextFacts.__annotations__)
    assert records.PROBE_FIELDS == tuple(records.ProbeReading.__annotations__)
    assert set(records.SWEEP_FIELDS) | {"points"} == set(records.Sweep.__annotations__)


# -- the measurements a session keeps beside its cases (session/measured.py) -------------------------------------------

def roofline_fits(roof: dict, where: str) -> None:
    """A whole roofline, its curve's rows and their blocks, against ``RooflineRun``."""
    keys_fit(measured.RooflineRun, roof, where)
    assert roof["curve"]
    for row in roof["curve"]:
        keys_fit(measured.RooflineRow, row, f"{where} n={row['positions']}")
        for name, block in row["by_block"].items():
            keys_fit(measured.RooflineBlock, block, f"{where} n={row['positions']} {name}")


def tune_fits(tune: dict, where: str) -> None:
    keys_fit(measured.TuneResult, tune, where)
    assert tune["rows"]
    for row in tune["rows"]:
        keys_fit(measured.TuneRow, row, f"{where} {row['drafter']} k={row['k']}")
    for name, d in tune["drafters"].items():
        keys_fit(measured.TuneDrafter, d, f"{where} drafter {name}")
    if tune["recommendation"]:
        keys_fit(measured.Recommendation, tune["recommendation"], f"{where} recommendation")


def test_a_stored_roofline_is_the_record():
    s = Session.load(FIXTURES / "session_real_shape.json")
    roofline_fits(s.data["roofline"], "session_real_shape roofline")


def test_what_the_fold_keeps_of_cooldowns_sensors_thermal_and_a_partial_roofline_is_the_record():
    s = Session()
    s.apply({"event": "cooldown", "case": "c1", "waited_s": 3.0, "reached": True, "probe_ms": 1.0, "best_ms": 0.98})
    s.apply({"event": "sensors", "case": "c1", "mode": "spec", "repeat": 0, "tokens": 24, "t": 1.5, "seconds": 0.4,
             "gpu_freq_mhz": 1300.0, "gpu_power_w": 9.0, "package_power_w": 12.0, "gpu_temp_c": 50.0, "joules": 4.8})
    s.apply({"event": "thermal", "case": "c1", "when": "before", "text": "No thermal warning", "limits": {},
             "warnings": []})
    s.apply({"event": "roofline", "partial": True,
             "roofline": {"curve": [{"positions": 1, "whole_ms": 2.0, "whole_ms_min": 1.9, "whole_ms_max": 2.2}],
                          "partial": True}})
    (cool,), (window,), (therm,) = s.data["cooldowns"], s.data["sensors"], s.data["thermal"]
    keys_fit(measured.Cooldown, cool, "cooldown")
    from specscope.profiler.session.records import COOLDOWN_FIELDS  # the fold's fields (off the event's record)
    assert set(COOLDOWN_FIELDS) == set(measured.Cooldown.__annotations__)  # the session's record says what it keeps
    keys_fit(measured.SensorReading, window, "sensors")
    keys_fit(measured.ThermalRecord, therm, "thermal")
    keys_fit(measured.RooflinePartial, s.data["roofline"], "partial roofline")
    keys_fit(measured.CurveTimes, s.data["roofline"]["curve"][0], "partial roofline's point")
    assert measured.whole_roofline(s.data["roofline"]) is None  # the curve so far is not a roofline yet
