"""One word, one meaning: a case's content class is ``content_class`` and a roofline point's per-block costs are
``by_block`` ("category" meant both). Old files (the fixtures keep the old names) load with the new names; new files
carry the new names only; suites accept both spellings."""

import json
from pathlib import Path

from specscope.profiler.session.schema import SCHEMA_VERSION, migrate_names
from specscope.profiler.session.session import Session
from specscope.profiler.run.suite import load_suite, take_cases
from specscope.profiler.analysis.session_file import save_session, session_json
from specscope.profiler.analysis.summary import summarize

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _keys(obj) -> set[str]:
    """Every dict key anywhere in ``obj``."""
    if isinstance(obj, dict):
        return set(obj) | {k for v in obj.values() for k in _keys(v)}
    if isinstance(obj, list):
        return {k for v in obj for k in _keys(v)}
    return set()


def test_an_old_fixture_loads_with_the_new_names():
    raw = json.loads((FIXTURES / "session_real_shape.json").read_text(encoding="utf-8"))
    assert "category" in raw["cases"][0] and "categories" in raw["roofline"]["curve"][0]  # the evidence: old names
    s = Session.load(FIXTURES / "session_real_shape.json")
    assert s.cases[0]["content_class"] == raw["cases"][0]["category"] and "category" not in s.cases[0]
    assert s.data["roofline"]["curve"][0]["by_block"] == raw["roofline"]["curve"][0]["categories"]
    assert not {"category", "categories"} & _keys(s.data)
    assert summarize(s)["acceptance_by_content_class"] == raw["summary"]["acceptance_by_category"]  # the same numbers


def test_a_version_1_fixture_loads_with_the_new_names_and_the_same_figures():
    raw = json.loads((FIXTURES / "session_v1_demo.json").read_text(encoding="utf-8"))
    s = Session.load(FIXTURES / "session_v1_demo.json")
    assert s.data["schema_version"] == 1
    assert [c["content_class"] for c in s.cases] == [c["category"] for c in raw["cases"]]
    sm = summarize(s)
    counts = ("k", "rounds", "drafted", "accepted", "p")  # the counts (a v1 file's stored summary predates later fields)
    assert ({c: {f: a[f] for f in counts} for c, a in sm["acceptance_by_content_class"].items()}
            == {c: {f: a[f] for f in counts} for c, a in raw["summary"]["acceptance_by_category"].items()})
    assert sm["breakdown"]["block_order"] == raw["summary"]["breakdown"]["categories"]
    assert "acceptance_by_category" not in sm and "categories" not in sm["breakdown"]


def test_a_migrated_session_saves_with_the_new_names_only_and_round_trips(tmp_path):
    s = Session.load(FIXTURES / "session_real_shape.json")
    out = tmp_path / "s.json"
    save_session(s, out)
    text = out.read_text(encoding="utf-8")
    written = json.loads(text)
    assert written["schema_version"] == s.data["schema_version"] <= SCHEMA_VERSION  # no version bump
    keys = _keys(written)
    assert {"content_class", "by_block", "acceptance_by_content_class"} <= keys
    assert not {"category", "categories", "acceptance_by_category"} & keys
    again = Session.load(out)
    assert again == s and json.loads(session_json(again)) == written


def test_migrate_names_renames_in_sweep_points_and_keeps_the_new_name_when_both_are_there():
    point = {"cases": [{"id": "a", "category": "en"}], "roofline": {"curve": [{"positions": 1, "categories": {"moe": {}}}]}}
    d = {"cases": [{"id": "b", "category": "code", "content_class": "zh"}, {"id": "c", "content_class": "en"}],
         "sweep": {"points": [{"context": 0, "session": point}]}}
    assert migrate_names(d) is d
    assert d["cases"] == [{"id": "b", "content_class": "zh"}, {"id": "c", "content_class": "en"}]
    assert point["cases"] == [{"id": "a", "content_class": "en"}]
    assert point["roofline"]["curve"] == [{"positions": 1, "by_block": {"moe": {}}}]
    assert migrate_names(json.loads(json.dumps(d))) == d  # idempotent


def test_a_suite_reads_content_class_and_the_old_category(tmp_path):
    new, old, both = tmp_path / "new.json", tmp_path / "old.json", tmp_path / "both.json"
    new.write_text(json.dumps({"cases": [{"id": "a", "content_class": "code", "prompt": "x"}]}), encoding="utf-8")
    old.write_text(json.dumps({"cases": [{"id": "a", "category": "code", "prompt": "x"}]}), encoding="utf-8")
    both.write_text(json.dumps({"cases": [{"id": "a", "category": "en", "content_class": "code", "prompt": "x"}]}),
                    encoding="utf-8")
    for p in (new, old, both):
        assert load_suite(str(p))["cases"] == [{"id": "a", "content_class": "code", "prompt": "x"}], p.name
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(["just a prompt"]), encoding="utf-8")
    assert load_suite(str(bare))["cases"][0]["content_class"] == "other"


def test_the_default_suite_ships_with_content_class():
    from specscope.assets import read_text

    raw = json.loads(read_text("default_suite.json"))
    assert all("content_class" in c and "category" not in c for c in raw["cases"])
    cases = load_suite()["cases"]
    assert {c["content_class"] for c in cases} == {"zh", "en", "code"}
    assert [c["content_class"] for c in take_cases(cases, 3)] == ["zh", "en", "code"]  # round-robin across classes


def test_until_decided_cycles_the_suite_past_its_last_case_with_ids_apart():
    """``run --until decided`` may take more cases than the suite holds: the suite again in its spread order, each
    later pass named apart; without cycling the suite is the cap, as before."""
    cases = load_suite()["cases"]
    n = len(cases)
    taken = take_cases(cases, 2 * n + 3, cycle=True)
    assert len(taken) == 2 * n + 3 and len({c["id"] for c in taken}) == len(taken)
    spread = take_cases(cases, n - 1) + [c for c in cases if c not in take_cases(cases, n - 1)]
    assert [c["prompt"] for c in taken] == [c["prompt"] for c in (spread * 3)[:2 * n + 3]]
    assert taken[n]["id"] == spread[0]["id"] + "#2" and taken[2 * n]["id"] == spread[0]["id"] + "#3"
    assert [c["content_class"] for c in taken[n:n + 3]] == ["zh", "en", "code"]
    assert take_cases(cases, 2 * n) == cases and take_cases(cases, 5, cycle=True) == take_cases(cases, 5)
