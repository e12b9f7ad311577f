"""profiler.analysis.summary: the reference summary, and LiveSummary equal to it at every event of a growing session."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from specscope.profiler.analysis import stats
from specscope.profiler.session.schema import migrate_names
from specscope.profiler.session.session import Session
from specscope.profiler.analysis.session_file import save_session, session_json
from specscope.profiler.analysis.summary import ExactSum, LiveSummary, case_stats, summarize
from specscope.profiler.analysis.summary import session_case_stats

from session_events import paired_events  # the paired session replayed as events (tests/session_events.py)

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "session_v1_demo.json"  # a schema-1 session: no passes
PAIRED = Path(__file__).resolve().parents[2] / "fixtures" / "session_demo.json"  # schema 2: paired passes, components


def replay_events(d: dict):
    """The worker events that build the session ``d`` again, in the protocol's order.

    The first case is run twice (repeats): its first pass stops half-way; the second pass's steps and
    rounds are appended to it (every repeat is kept). The second case gets a divergence record (a near-tie). The
    third alternates instrumented and end-to-end rounds (no separate timings), as the protocol does.
    """
    yield {"event": "run_started", "config": d["config"], "environment": d["environment"], "model": d["model"], "time": 1.0}
    for i, c in enumerate(d["cases"]):
        info = {k: c[k] for k in ("id", "content_class", "prompt", "prompt_tokens")}
        plain, spec = c["plain"], c["spec"]
        passes = [0.5, 1.0] if i == 0 else [1.0]
        yield {"event": "probe", "case": c["id"], "repeat": 0, "when": "before", "ms": 10.0 + i,
               "reps_ms": [9.9 + i, 10.0 + i, 10.2 + i], "t": 10.0 * i}
        for r, share in enumerate(passes):
            n_steps = int(len(plain["step_ms"]) * share)
            n_rounds = int(len(spec["rounds"]) * share)
            yield {"event": "case_started", "case": info, "index": i, "repeat": r, "phase": "plain"}
            yield {"event": "prefill", "case": c["id"], "mode": "plain", "token": plain["tokens"][0], "ms": plain["prefill_ms"]}
            for j, (tok, ms) in enumerate(zip(plain["tokens"][1:n_steps + 1], plain["step_ms"][:n_steps])):
                yield {"event": "step", "case": c["id"], "index": j + 1, "token": tok, "ms": ms}
            for x in plain["repeats_tok_s"][:1] if r == len(passes) - 1 else [plain["repeats_tok_s"][0] * 0.9]:
                yield {"event": "repeat_done", "case": c["id"], "mode": "plain", "repeat": r, "tok_s": x}
            if r == 0 and c.get("breakdown"):
                yield {"event": "breakdown", "case": c["id"], "breakdown": c["breakdown"]}
            if r == 0 and i < 2:  # components timed apart for two of the three cases (the third predicts from theirs)
                timed = [x for x in spec["rounds"] if x.get("verify_ms") is not None]
                yield {"event": "components", "case": c["id"], "components": {
                    "k": d["config"]["num_draft_tokens"], "reps": 1, "verify_ms": [x["verify_ms"] * 0.9 for x in timed],
                    "draft_ms": [x["draft_ms"] for x in timed[:3]], "rollback_ms": {"0": [1.0], "1": [0.5], "2": [0.0]}}}
            yield {"event": "case_started", "case": info, "index": i, "repeat": r, "phase": "spec"}
            yield {"event": "prefill", "case": c["id"], "mode": "spec", "token": spec["tokens"][0], "ms": spec["prefill_ms"]}
            for j, rnd in enumerate(spec["rounds"][:n_rounds]):
                if i == 2 and j % 2:
                    rnd = {**rnd, "kind": "end_to_end", "draft_ms": None, "verify_ms": None, "rollback_ms": None}
                yield {"event": "round", "case": c["id"], "index": j, **rnd}
            for x in spec["repeats_tok_s"][:1] if r == len(passes) - 1 else [spec["repeats_tok_s"][0] * 1.1]:
                yield {"event": "repeat_done", "case": c["id"], "mode": "spec", "repeat": r, "tok_s": x,
                       **({"instrumented_tok_s": x * 0.97} if i == 2 else {})}
        yield {"event": "probe", "case": c["id"], "repeat": len(passes) - 1, "when": "after", "ms": 10.5 + i,
               "reps_ms": [10.4 + i, 10.5 + i, 10.6 + i], "t": 10.0 * i + 5}
        yield {"event": "sensors", "case": c["id"], "mode": "spec", "repeat": 0, "tokens": 24, "t": 10.0 * i + 4,
               "seconds": 3.0, "gpu_freq_mhz": 1300 + i, "gpu_power_w": 9.0, "package_power_w": 11.0, "gpu_temp_c": 60.0,
               "joules": 33.0, "energy_j": {"package": 33.0, "gpu": 27.0}, "counter_j": {"package": 40.0 * (i + 1),
                                                                                        "gpu": 30.0 * (i + 1)}}
        if i == 1:
            yield {"event": "divergence", "case": c["id"], "position": 3, "plain_token": 1, "spec_token": 2,
                   "plain_lead": 1e-5, "verify_lead": 2e-5, "tolerance": 1e-3, "dtype": "float32"}
        yield {"event": "case_done", "case": c["id"], "plain_text": c.get("plain_text", ""), "spec_text": c.get("spec_text", ""),
               "plain_pieces": c.get("plain_pieces"), "spec_pieces": c.get("spec_pieces")}
        yield {"event": "memory", "peak_bytes": 123}
    yield {"event": "run_done", "status": d["status"], "time": 2.0}


def fixture_dict() -> dict:
    return migrate_names(json.loads(FIXTURE.read_text(encoding="utf-8")))  # the fixture keeps the old names


def test_live_summary_equals_reference_on_a_paired_session_and_both_equal_the_stored_one():
    d = migrate_names(json.loads(PAIRED.read_text(encoding="utf-8")))
    s = Session()
    live = LiveSummary(s)
    for ev in paired_events(d):
        s.apply(ev)
        assert live.summary() == summarize(s), ev["event"]
    stored = Session.load(PAIRED)
    assert [c["spec"]["tokens"] for c in s.cases] == [c["spec"]["tokens"] for c in stored.cases]
    mine, ref = summarize(s), summarize(stored)
    for key in ("predicted_speedup", "ledger_speedup", "measured_speedup", "prediction_error", "prediction_error_ci",
                "p", "p_ci95", "tokens_per_round", "t_verify_ms", "t_draft_ms"):
        assert mine[key] == ref[key], key
    # acceptance counts the measured pass only: the ledger pass repeats its drafts
    measured = [r for c in stored.cases for r in c["spec"]["rounds"] if r["pass"] == "measured" and len(r["drafted"]) == stored.k]
    assert ref["drafted"] == stored.k * len(measured)


def test_live_summary_equals_full_recomputation_at_every_event():
    s = Session()
    live = LiveSummary(s)
    n = 0
    for ev in replay_events(fixture_dict()):
        s.apply(ev)
        assert live.summary() == summarize(s), ev["event"]
        for c in s.cases:
            assert live.case_stats(c) == session_case_stats(s, c)
        n += 1
    assert n > 100
    final = live.summary()
    assert final["cases_measured"] == 3 and final["p"] is not None and final["breakdown"] is not None
    assert final["prediction_source"] == "components" and final["prediction_error_ci"] is not None
    assert final["divergences"] and final["divergences"][0]["verdict"] == "rounding"
    assert final["spec_instrumented_tok_s"] is not None  # the third case's end-to-end rounds
    assert final["probe"]["readings"] == 6 and final["energy"]["spec"]["joules_per_token"] == pytest.approx(33.0 / 24)
    # the replayed session is the fixture again (plus the divergence record, round kinds, and the first case's
    # half-way first repeat, kept before its second)
    ref = Session.load(FIXTURE)
    half = len(ref.cases[0]["spec"]["rounds"]) // 2
    assert [len(c["spec"]["rounds"]) for c in s.cases] == [len(c["spec"]["rounds"]) + (half if i == 0 else 0)
                                                           for i, c in enumerate(ref.cases)]
    first, second = s.cases[0]["spec"]["rounds"][:half], s.cases[0]["spec"]["rounds"][half:]
    assert [{k: v for k, v in r.items() if k != "repeat"} for r in second] == ref.cases[0]["spec"]["rounds"]
    assert all(r["repeat"] == 1 for r in second) and not any("repeat" in r for r in first)
    assert s.cases[0]["spec"]["repeat_starts"] == [[0, 0], [1, half]]
    assert len(s.cases[0]["plain"]["step_ms"]) == len(ref.cases[0]["plain"]["step_ms"]) * 3 // 2
    # acceptance counts the first repeat's rounds only (a repeat drafts the same tokens again)
    k = s.k
    counted = [r for i, c in enumerate(ref.cases) for r in (c["spec"]["rounds"][:half] if i == 0 else c["spec"]["rounds"])
               if len(r["drafted"]) == k]
    assert final["drafted"] == len(counted) * k and final["accepted"] == sum(r["accepted"] for r in counted)


def test_live_summary_on_a_loaded_session_and_a_new_k():
    s = Session.load(FIXTURE)
    live = LiveSummary(s)
    assert live.summary() == summarize(s)
    s.data["config"]["num_draft_tokens"] = 3  # every round is now a short one: nothing is "full"
    assert live.summary() == summarize(s)
    assert live.summary()["p"] is None


def test_summary_is_cached_per_case_until_the_case_changes():
    s = Session()
    live = LiveSummary(s)
    evs = list(replay_events(fixture_dict()))
    for ev in evs[:-40]:
        s.apply(ev)
    live.summary()
    first = s.cases[0]
    before = live.case_stats(first)
    assert live._fold(first).stats() is live._fold(first).stats()  # untouched case: not recomputed
    for ev in evs[-40:]:
        s.apply(ev)
    assert live.case_stats(first) == before  # later cases do not disturb the first one
    assert live.summary() == summarize(s)


def test_exact_sum_equals_fsum_in_any_order():
    rng = random.Random(7)
    xs = [rng.uniform(0, 2000) * 10 ** rng.randint(-6, 3) for _ in range(2000)] + [0.1] * 50 + [1e-300, 3]
    for _ in range(3):
        rng.shuffle(xs)
        acc = ExactSum()
        for x in xs:
            acc.add(x)
        assert acc.value() == math.fsum(xs)
        assert acc.mean() == stats.mean(xs)
    parts = [ExactSum() for _ in range(4)]
    for i, x in enumerate(xs):
        parts[i % 4].add(x)
    assert ExactSum.mean_of(parts) == stats.mean(xs)
    none = ExactSum()
    none.add(None)
    assert none.mean() is None and ExactSum.mean_of([none]) is None
    inf = ExactSum()
    for x in (1.0, math.inf):
        inf.add(x)
    assert inf.value() == math.inf and inf.n == 2


def test_acceptance_from_histogram_matches_rounds():
    counts = [0, 2, 1, 2, 2, 0, 1]
    from collections import Counter

    assert stats.acceptance_from_histogram(Counter(counts), 2) == stats.acceptance_from_rounds(counts, 2)
    assert stats.acceptance_from_rounds([], 3)["p"] is None


def test_session_delegates_to_summary_module():
    s = Session.load(FIXTURE)
    assert summarize(s) == summarize(s)
    assert session_case_stats(s, s.cases[0]) == {**case_stats(s.cases[0], s.k), "regime": s.regime}
    # one tok/s helper for the core, used by the protocol and the summary
    from specscope.profiler.run import protocol
    from specscope.profiler.analysis import summary

    assert protocol.tok_s is stats.tok_s is summary.tok_s
    assert stats.tok_s(0, 10.0) is None and stats.tok_s(5, 0.0) is None and stats.tok_s(5, 500.0) == pytest.approx(10.0)


def test_compact_autosave_text_is_the_same_session(tmp_path):
    s = Session()
    for ev in replay_events(fixture_dict()):
        s.apply(ev)
    live = LiveSummary(s)
    compact = session_json(s, live=live, compact=True)
    assert "\n" not in compact
    assert json.loads(compact) == json.loads(session_json(s))
    save_session(s, tmp_path / "a.json", live=live, compact=True)
    assert summarize(Session.load(tmp_path / "a.json")) == summarize(s)
    s.cases[0]["plain"]["step_ms"].append(float("nan"))  # NaN is written as null either way
    assert json.loads(session_json(s, live=live, compact=True)) == json.loads(session_json(s))
