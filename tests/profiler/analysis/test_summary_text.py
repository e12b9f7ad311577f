"""The plain-text summary ``specscope run`` prints, over the session fixture and edited copies of it."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from specscope.profiler.session.session import Session
from specscope.profiler.analysis.summary import BLOCK_LABELS
from specscope.profiler.analysis.summary_text import format_summary
from specscope.profiler.analysis.verdict import SAMPLED_NOTE, verdict
from specscope.profiler.analysis.summary import summarize

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "session_demo.json"


@pytest.fixture(scope="module")
def session():
    return Session.load(FIXTURE)


def _line(text: str, start: str) -> str:
    found = [ln for ln in text.splitlines() if ln.strip().startswith(start)]
    assert len(found) == 1, (start, text)
    return found[0]


def _numbers(line: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", line)]


def test_header_names_model_drafter_and_regime(session):
    text = format_summary(session)
    s, cfg, env = summarize(session), session.config, session.data["environment"]
    lines = text.splitlines()
    assert lines[0].startswith(f"specscope — {session.data['model']['name']} on {env['device_name']}")
    assert f"mlx {env['mlx']}" in lines[0]
    assert lines[1] == (f"drafter {cfg['drafter']['name']}, k={s['k']}, {s['regime']}, "
                        f"{s['cases_measured']} cases × {cfg['max_tokens']} tokens, status {session.status}")
    assert lines[2] == "synthetic demo model: timings are real; text and acceptance are not meaningful"
    assert verdict(s) in lines


def test_figures_are_the_summary_figures(session):
    text = format_summary(session)
    s = summarize(session)
    assert _numbers(_line(text, "plain "))[:2] == [round(s["plain_tok_s"], 1), round(s["t_decode_ms"], 2)]
    spec = _numbers(_line(text, "speculative "))
    assert spec == [round(s["spec_tok_s"], 1), round(s["t_verify_ms"], 2), round(s["t_draft_ms"], 2),
                    round(s["t_rollback_ms"], 3)]
    tpr = _numbers(_line(text, "tokens per round"))
    assert tpr == [round(s["tokens_per_round"], 3)] + [round(a, 2) for a in s["per_position"]]
    speed = _numbers(_line(text, "speedup"))
    lo, hi = s["prediction_error_ci"]  # the error carries its interval, and the verdict the same interval's ends
    v = s["prediction_verdict"]
    assert v["interval"] == [lo, hi]
    judged = [round(s["judged_measured_speedup"], 3)] if s["tail_tokens"] else []  # what the error is against
    # each interval says its level: the error's "95% CI", the verdict's own level (95% here: no sequential looks)
    assert speed == [round(s["predicted_speedup"], 3), round(s["measured_speedup"], 3), *judged,
                     round(s["prediction_error"] * 100, 1), 95, round(lo * 100, 1), round(hi * 100, 1),
                     95, round(lo * 100), round(hi * 100)]  # never "±" for an interval that is not symmetric
    # each interval says its level (and the run's its method): the error's 95% interval, the judged one's level
    assert "(95% bootstrap interval " in _line(text, "speedup") or "(95% delta-method interval " in _line(text, "speedup")
    # 3 cases × 24 tokens: far too little to judge, and the verdict says so instead of "within noise"
    assert v["state"] == "too_little_data" and "too little data to judge" in _line(text, "speedup")
    assert "Too little data to judge the prediction" in text and "more cases" in text
    be = _numbers(_line(text, "break-even"))
    assert be == [round(s["break_even_verify_ms"], 2), round(s["break_even_multiple"], 2)]
    assert _numbers(_line(text, "greedy match")) == [round(s["match_rate"] * 100, 1)]
    assert _line(text, "by content")  # then a line per class: its own summary's p and E, and its rounds
    for cat, a in s["acceptance_by_content_class"].items():
        row = next(ln for ln in text.splitlines() if ln.strip().startswith(f"{cat} ") and " p " in ln)
        assert f"p {a['p'] * 100:.1f}%" in row and f"E {a['tokens_per_round']:.2f}" in row, row
        assert f"{a['drafted']} drafted over" in row


def test_breakdown_table_has_every_block_and_both_rulers(session):
    text = format_summary(session)
    bd = summarize(session)["breakdown"]
    assert f"verify ({bd['verify']['positions']} pos)" in text
    for c in bd["block_order"]:
        row = _line(text, bd["labels"].get(c) or BLOCK_LABELS[c])
        label = bd["labels"].get(c) or BLOCK_LABELS[c]
        nums = _numbers(row.split(label, 1)[1])  # each time is followed by its spread over reps [lo–hi]
        assert nums[0] == round(bd["decode"]["blocks"][c], 2) and nums[3] == round(bd["verify"]["blocks"][c], 2)
    for start in ("sum of blocks", "whole graph", "inter-block overhead", "barrier distortion"):
        _line(text, start)
    assert "a block-sum T_decode would give" in text and "(wrong ruler)" in text and "(the prediction)" in text


def test_a_whole_graph_of_zero_ms_prints_a_dash_for_the_barrier_distortion(session):
    """aggregate_breakdown leaves the distortion None where the whole graph timed 0 ms: a dash, not a crash."""
    def zero_whole(d):
        for c in d["cases"]:
            if c.get("breakdown"):
                c["breakdown"]["decode"]["whole_ms"] = 0.0

    s = _edited(session, zero_whole)
    assert summarize(s)["breakdown"]["decode"]["barrier_distortion"] is None, "the edit must leave no distortion"
    row = _line(format_summary(s), "barrier distortion")
    assert row.split(")", 1)[1].split()[0] == "—" and row.rstrip().endswith("%")


def test_a_runs_interval_is_labelled_as_the_runs_own(session):
    """The error's interval resamples the run's cases: the summary says an offset they all share is not in it, and
    where several runs are judged together; a session with no interval says nothing of it."""
    assert summarize(session)["prediction_error_ci"], "the fixture must have an interval"
    assert "specscope verdict" in _line(format_summary(session), "one run")
    assert "one run " not in format_summary(Session())


def _edited(session, edit) -> Session:
    d = copy.deepcopy(session.data)
    edit(d)
    return Session.from_dict(d)


def test_sampled_run_shows_no_greedy_match(session):
    def sampled(d):
        d["config"]["sampling"] = {"temp": 0.7, "top_p": 1.0, "seed": 0, "regime": "temperature 0.7"}
        d["config"]["temp"] = 0.7

    s = _edited(session, sampled)
    text = format_summary(s)
    assert summarize(s)["regime"] != "greedy", "the edit must change the regime"
    assert "greedy match" not in text and f"output check      {SAMPLED_NOTE}" in text


def test_no_breakdown_and_not_a_demo(session):
    def plain_run(d):
        d["model"].pop("demo", None)
        for c in d["cases"]:
            c["breakdown"] = None

    text = format_summary(_edited(session, plain_run))
    assert "synthetic demo model" not in text
    assert "where time goes" not in text and "wrong ruler" not in text


def test_empty_session_prints_dashes_not_errors():
    text = format_summary(Session())
    assert "status empty" in text
    assert _line(text, "plain ").split()[1] == "—"
