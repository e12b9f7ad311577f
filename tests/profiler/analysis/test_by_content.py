"""The seed's content table (``by_content``): each class is its own summary; sessions for another target or regime are
refused; and the claim "two classes differ" is simulated: it finds a real difference (power), stays quiet when the
classes are alike (the null), and a rule that reads point estimates instead of intervals fails the null (the negative
control)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from specscope.errors import SpecscopeError
from specscope.profiler.analysis import by_content
from specscope.profiler.analysis.by_content import class_session, content_table
from specscope.profiler.analysis.summary import summarize
from specscope.profiler.session.session import Session

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "session_demo.json"  # 3 cases: code, en, zh; MTP, k = 2
K = 2


@pytest.fixture(scope="module")
def demo() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_each_class_is_the_summary_of_its_own_cases(demo):
    s = Session.from_dict(copy.deepcopy(demo))
    table = content_table([s], ["mtp run"])
    assert table["classes"] == ["code", "en", "zh"] and len(table["rows"]) == 3
    for row in table["rows"]:
        alone = summarize(class_session(s, row["content_class"]))
        assert row["cases"] == 1 and row["drafted"] == alone["drafted"]
        assert row["tokens_per_round"] == alone["tokens_per_round"]
        assert row["predicted_speedup"] == alone["predicted_speedup"] and row["predicted_speedup"] is not None
        assert row["drafter_label"] == "mtp" and row["drafter"] == "mtp run"
        assert row["verdict"] == alone["prediction_verdict"]["state"] and row["verdict"] is not None
    drafted = sum(r["drafted"] for r in table["rows"])
    assert drafted == summarize(s)["drafted"]  # the classes partition the run's rounds


def test_sessions_for_another_target_or_regime_or_without_cases_are_refused(demo):
    a = Session.from_dict(copy.deepcopy(demo))
    other = copy.deepcopy(demo)
    other["model"]["name"] = "another-model"
    with pytest.raises(SpecscopeError, match="must draft for one target"):
        content_table([a, Session.from_dict(other)], ["a", "b"])
    sampled = copy.deepcopy(demo)
    sampled["config"]["sampling"] = {**sampled["config"].get("sampling", {}), "temp": 0.7}
    sampled["config"]["temp"] = 0.7
    b = Session.from_dict(sampled)
    if b.regime != a.regime:
        with pytest.raises(SpecscopeError, match="one sampling regime"):
            content_table([a, b], ["a", "b"])
    empty = copy.deepcopy(demo)
    empty["cases"] = []
    with pytest.raises(SpecscopeError, match="no cases"):
        content_table([Session.from_dict(empty)], ["empty"])
    with pytest.raises(SpecscopeError):
        content_table([], [])


# -- the claim "these classes differ", simulated ---------------------------------------------------------------------

CASES, ROUNDS = 6, 24  # six cases a class: the case is the interval's unit, as on the default suite


def _simulated(demo: dict, alphas: dict[str, float], rng) -> Session:
    """The fixture's first case as a template, CASES cases per class, each round's accepted count drawn with a
    per-position acceptance ``alphas[class]`` (geometric, up to k)."""
    d = copy.deepcopy(demo)
    template = d["cases"][0]
    cases = []
    for cls, alpha in alphas.items():
        for i in range(CASES):
            c = copy.deepcopy(template)
            c["id"], c["content_class"] = f"{cls}-{i}", cls
            rounds = []
            for r in range(ROUNDS):
                a = 0
                while a < K and rng.random() < alpha:
                    a += 1
                rounds.append({"drafted": [1, 2], "accepted": a, "emitted": list(range(a + 1)), "draft_ms": None,
                               "verify_ms": None, "rollback_ms": None, "ms": 50.0, "kind": "end_to_end",
                               "pass": "measured"})
            c["spec"]["rounds"] = rounds
            cases.append(c)
    d["cases"] = cases
    return Session.from_dict(d)


def _differ_rate(demo, alphas, sims: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(sims):
        table = content_table([_simulated(demo, alphas, rng)], ["sim"])
        hits += bool(table["drafters"][0]["differ"])
    return hits / sims


SIMS = 20  # ~1 s a test; at 40 simulations: power 1.0, null 0.0, the control 1.0


def test_a_real_difference_between_classes_is_found(demo):
    assert _differ_rate(demo, {"code": 0.8, "zh": 0.3}, SIMS, seed=1) >= 0.9


def test_alike_classes_are_not_called_different(demo):
    assert _differ_rate(demo, {"code": 0.5, "zh": 0.5}, SIMS, seed=2) <= 0.05


def test_negative_control_a_rule_reading_point_estimates_calls_alike_classes_different(demo, monkeypatch):
    """The null test above has power against a broken rule: intervals shrunk to their midpoints (point estimates
    compared) call most alike pairs different, and the null's bound fails."""
    real = by_content._apart
    monkeypatch.setattr(by_content, "_apart", lambda a, b: bool(a and b) and real([sum(a) / 2] * 2, [sum(b) / 2] * 2))
    assert _differ_rate(demo, {"code": 0.5, "zh": 0.5}, SIMS, seed=2) > 0.05
