"""The typed records say what a session really holds: every key the fixture sessions (real runs: one rank, two
ranks, a real model's shape, a schema-1 file) and their figures carry is declared in ``session/records.py``, every
required key is there, and the figures' records list exactly what ``summarize`` and ``case_stats`` return."""

from __future__ import annotations

from pathlib import Path

import pytest

from specscope.profiler.analysis.summary import session_case_stats, summarize
from specscope.profiler.session import records
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
    assert set(records.ROUND_FIELDS) == set(records.Round.__required_keys__)
    assert records.DIVERGENCE_FIELDS == tuple(records.Divergence.__annotations__)
    assert records.CONTEXT_FACTS == tuple(records.ContextFacts.__annotations__)
    assert records.PROBE_FIELDS == tuple(records.ProbeReading.__annotations__)
    assert set(records.SWEEP_FIELDS) | {"points"} == set(records.Sweep.__annotations__)
