"""One speedup model: the judged figure is the whole round, the seed's division stays beside it, rollback is weighted
by the run's accepted counts, and a term or count never timed is said, never taken as zero."""

import pytest

from specscope.profiler.analysis.round_model import RoundModel, expected_rollback_ms


def test_the_whole_round_is_judged_and_the_division_stays_beside_it():
    m = RoundModel(tokens_per_round=2.5, t_decode_ms=10.0, t_verify_ms=15.0, t_draft_ms=3.0, t_rollback_ms=1.0,
                   t_bookkeeping_ms=1.0)
    assert m.speedup == pytest.approx(2.5 * 10 / 20)
    assert m.division == pytest.approx(2.5 * 10 / 18)
    assert m.break_even_verify_ms == pytest.approx(25 - 3 - 1 - 1)
    assert m.what_if(t_verify_ms=5.0).speedup == pytest.approx(25 / 10)
    assert m.untimed == []
    bare = RoundModel(2.5, 10.0, 15.0, 3.0)
    assert bare.untimed == ["t_rollback_ms", "t_bookkeeping_ms"] and bare.speedup == bare.division
    with pytest.raises(ValueError):
        m.what_if(t_nonsense_ms=1.0)


def test_rollback_is_weighted_by_how_often_each_count_occurs():
    by_count = {0: [6.0, 6.0], 1: [2.0], 2: [0.0]}
    hist = {0: 1, 1: 8, 2: 1}  # the run mostly accepted one draft
    t, missing = expected_rollback_ms(by_count, hist, k=2)
    assert missing == [] and t == pytest.approx((6.0 + 8 * 2.0 + 0.0) / 10)
    unweighted = (6.0 + 2.0 + 0.0) / 3
    assert abs(t - unweighted) > 0.1  # the rule the run used before (an unweighted mean over counts) misses


def test_a_count_the_run_had_but_never_timed_is_said_not_taken_as_zero():
    t, missing = expected_rollback_ms({0: [4.0]}, {0: 3, 1: 5, 2: 2}, k=2)
    assert t is None and missing == [1]  # a full acceptance (2 = k) needs no rollback: not missing
    assert expected_rollback_ms({}, {}, k=2) == (None, [])


def _tune_inputs(session, k: int):
    """A session's own timings as tune's predict takes them: the counted rounds' accepted counts, the verify samples,
    the rollback samples by accepted count, the plain steps."""
    from specscope.profiler.analysis.prediction import measured_round_tuples

    counted = [acc for c in session.cases for (_, _, acc, ok) in measured_round_tuples(c, k) if ok]
    comps = [c["components"] for c in session.cases]
    rollback: dict[int, list[float]] = {}
    for comp in comps:
        for a, xs in comp["rollback_ms"].items():
            rollback.setdefault(int(a), []).extend(xs)
    verify = [x for comp in comps for x in comp["verify_ms"]]
    steps = [x for c in session.cases for x in c["plain"]["step_ms"]]
    return counted, verify, rollback, steps


def test_run_and_tune_give_one_prediction_for_one_input():
    """The bundled session's own timings fed through run's path (the summary) and tune's (tune_predict.predict): the
    same E, T_decode, T_verify, T_draft and rollback give the same judged figure and the same bare division. (Before the
    one model, run judged the bare division and tune the whole round: they differed by the rollback's share.)"""
    import copy
    import json
    from pathlib import Path

    from specscope.profiler.analysis.summary import summarize
    from specscope.profiler.analysis.tune_predict import predict
    from specscope.profiler.session.session import Session

    d = json.loads((Path(__file__).resolve().parents[2] / "fixtures" / "session_demo.json").read_text())
    d = copy.deepcopy(d)
    for c in d["cases"]:  # one draft cost whatever the earlier round accepted (tune weights by it, run pools)
        c["components"]["draft_ms"] = [4.0] * len(c["components"]["draft_ms"])
    s = Session.from_dict(d)
    sm = summarize(s)
    k = sm["k"]
    counted, verify, rollback, steps = _tune_inputs(s, k)
    rounds = [{"accepted": a, "draft_ms": 4.0, "verify_ms": 10.0, "rollback_ms": 0.0, "ms": 14.0} for a in counted]
    row = predict(rounds, k, {n: verify for n in range(2, k + 2)}, [], steps, draft_by_k={k: [4.0] * 9},
                  rollback_by_k={k: rollback})[k - 1]
    assert row["tokens_per_round"] == pytest.approx(sm["tokens_per_round"], rel=1e-12)
    assert row["t_decode_ms"] == pytest.approx(sm["t_decode_ms"], rel=1e-9)
    assert row["t_verify_ms"] == pytest.approx(sm["t_verify_ms"], rel=1e-12)
    assert row["t_rollback_ms"] == pytest.approx(sm["t_rollback_ms"], rel=1e-12)
    assert row["t_bookkeeping_ms"] == 0.0  # tune's K_max rounds here pay nothing beyond their parts
    assert row["predicted_speedup"] == pytest.approx(sm["predicted_speedup"], rel=1e-9)
    assert row["division_speedup"] == pytest.approx(sm["division_speedup"], rel=1e-9)


def test_run_and_tune_weight_the_draft_and_the_bookkeeping_alike():
    """Draft and bookkeeping that cost more after a longer earlier acceptance, timed apart per count (components):
    run's summary and tune's predict weight both by the same accepted counts and judge the same round."""
    import copy
    import json
    from pathlib import Path

    from specscope.profiler.analysis.prediction import measured_round_tuples
    from specscope.profiler.analysis.summary import summarize
    from specscope.profiler.analysis.tune_predict import predict
    from specscope.profiler.session.session import Session

    d = copy.deepcopy(json.loads((Path(__file__).resolve().parents[2] / "fixtures" / "session_demo.json").read_text()))
    draft_cost, book_cost = {0: 3.0, 1: 4.0, 2: 6.0}, {0: 0.1, 1: 0.2, 2: 0.4}
    k = 2
    prior = [i % (k + 1) for i in range(9)]
    for c in d["cases"]:
        c["components"].update(draft_ms=[draft_cost[a] for a in prior], prior_accepted=prior,
                               bookkeeping_ms=[book_cost[a] for a in prior])
    s = Session.from_dict(d)
    sm = summarize(s)
    assert sm["k"] == k
    counted = [acc for c in s.cases for (_, _, acc, ok) in measured_round_tuples(c, k) if ok]
    n = len(counted)
    assert sm["t_draft_ms"] == pytest.approx(sum(draft_cost[a] for a in counted) / n, rel=1e-12)
    assert sm["t_bookkeeping_ms"] == pytest.approx(sum(book_cost[a] for a in counted) / n, rel=1e-12)
    _, verify, rollback, steps = _tune_inputs(s, k)
    rounds = [{"accepted": a, "draft_ms": 4.0, "verify_ms": 10.0, "rollback_ms": 0.0, "ms": 15.0} for a in counted]
    row = predict(rounds, k, {m: verify for m in range(2, k + 2)}, [], steps,
                  draft_by_k={k: [draft_cost[a] for a in prior]}, rollback_by_k={k: rollback},
                  bookkeeping_by_k={k: [book_cost[a] for a in prior]})[k - 1]
    assert row["t_draft_ms"] == pytest.approx(sm["t_draft_ms"], rel=1e-12)
    assert row["t_bookkeeping_ms"] == pytest.approx(sm["t_bookkeeping_ms"], rel=1e-12)
    assert row["t_bookkeeping_source"] == "in_round"  # not the K_max rounds' rest (1 ms here)
    assert row["predicted_speedup"] == pytest.approx(sm["predicted_speedup"], rel=1e-9)


def test_draft_and_bookkeeping_are_weighted_by_the_runs_accepted_counts():
    """A draft caught up over a+1 positions costs more after a long acceptance; components time every earlier count
    alike (a cycles 0..k), the run accepts mostly a = 2. T_draft is each count's mean weighted by the run's histogram
    (as tune weights it and as the rollback is weighted); the plain mean of the samples (the negative control) misses."""
    from specscope.profiler.analysis.prediction import histogram_weighted

    k = 2
    cost = {0: 1.0, 1: 2.0, 2: 4.0}
    prior = [i % (k + 1) for i in range(30)]
    cases = [{"components": {"draft_ms": [cost[a] for a in prior], "prior_accepted": prior}},
             {"components": {"draft_ms": [cost[a] for a in prior[:12]], "prior_accepted": prior[:12]}}]
    hist = {0: 10, 1: 10, 2: 80}
    truth = (10 * 1.0 + 10 * 2.0 + 80 * 4.0) / 100
    per_case = histogram_weighted(cases, "draft_ms", hist, k)
    assert per_case is not None and [len(x) for x in per_case] == [30, 12]
    xs = [x for c in per_case for x in c]
    assert sum(xs) / len(xs) == pytest.approx(truth)
    plain = [x for c in cases for x in c["components"]["draft_ms"]]
    assert abs(sum(plain) / len(plain) - truth) > 0.5  # unweighted: 2.33 ms against 3.5 ms
    # a count the run had that was never timed: no reweighting can stand for it, the samples are kept as they are
    untimed = histogram_weighted(cases, "draft_ms", {0: 1, 3: 5}, 3)
    assert untimed == [c["components"]["draft_ms"] for c in cases]
    # older sessions (no recorded counts): kept as they are
    old = [{"components": {"draft_ms": [1.0, 2.0]}}]
    assert histogram_weighted(old, "draft_ms", hist, k) == [[1.0, 2.0]]
    assert histogram_weighted([{"components": {}}], "bookkeeping_ms", hist, k) is None


def test_a_disturbed_draft_difference_refuses_the_prediction_and_never_crashes():
    """T_draft is a paired difference (a round minus the verify before it): one verify spike on a busy machine can make
    its mean less than minus T_verify (CI saw -61.9 ms beside a 36.8 ms verify, and the autosave crashed). The summary
    then refuses the prediction and says why; the same session with a sane draft is priced (the negative control)."""
    import copy
    import json
    from pathlib import Path

    from specscope.profiler.analysis.summary import session_case_stats, summarize
    from specscope.profiler.session.session import Session

    d = json.loads((Path(__file__).resolve().parents[2] / "fixtures" / "session_demo.json").read_text())

    def with_draft(ms: float) -> dict:
        dd = copy.deepcopy(d)
        for c in dd["cases"]:
            comp = c["components"]
            comp["draft_ms"] = [ms - sum(comp["verify_ms"]) / len(comp["verify_ms"])] * len(comp["draft_ms"])
        s = Session.from_dict(dd)
        return {**summarize(s), "per_case": [session_case_stats(s, c) for c in s.cases]}

    sane = with_draft(4.0)  # verify + draft = 4 ms a round
    assert sane["predicted_speedup"] is not None and sane["prediction_unavailable"] is None
    assert all(c["predicted_speedup"] is not None for c in sane["per_case"])
    disturbed = with_draft(-25.0)  # verify + draft = -25 ms: no round can cost that
    assert disturbed["predicted_speedup"] is None
    assert "cannot price a round" in disturbed["prediction_unavailable"]
    assert disturbed["prediction_verdict"]["state"] is None
    assert all(c.get("predicted_speedup") is None for c in disturbed["per_case"])


def _with_tail(d: dict, tail_ms: float | None, rounds_per_case: int = 40, tail: int = 6, seed: int = 5) -> dict:
    """The bundled session's cases rebuilt as ``rounds_per_case`` full end-to-end rounds (k drafts, geometric
    acceptance) then ``tail`` shorter last rounds (one draft fewer each, as an engine near a case's end); every full
    round costs ``tail_ms`` (None: 1.0 placeholder) and every short one a quarter of it."""
    import copy

    import numpy as np

    d = copy.deepcopy(d)
    k = d["config"]["num_draft_tokens"]
    rng = np.random.default_rng(seed)
    for c in d["cases"]:
        rounds = []
        for _ in range(rounds_per_case):
            a = int(min(rng.geometric(0.4) - 1, k))
            rounds.append({"drafted": [7] * k, "accepted": a, "emitted": [7] * (a + 1), "draft_ms": None,
                           "verify_ms": None, "rollback_ms": None, "ms": tail_ms or 1.0, "kind": "end_to_end",
                           "pass": "measured"})
        for j in range(tail):
            m = max(0, k - 1 - j)
            rounds.append({"drafted": [7] * m, "accepted": 0, "emitted": [7], "draft_ms": None, "verify_ms": None,
                           "rollback_ms": None, "ms": (tail_ms or 1.0) / 4, "kind": "end_to_end", "pass": "measured"})
        c["spec"]["rounds"] = rounds
    return d


def test_the_prediction_is_judged_against_the_full_rounds_it_prices():
    """Near a case's end an engine drafts only the tokens left: shorter, cheaper rounds the round model (a round of k
    drafts) does not price. Simulated: full rounds that cost exactly the predicted round, and a cheap tail. Judged
    against the full rounds the error is zero (and the verdict says why the tail is left out); the negative control,
    the same prediction against every measured round, reads far off."""
    import json
    from pathlib import Path

    from specscope.profiler.analysis.summary import session_case_stats, summarize
    from specscope.profiler.analysis.summary_text import format_summary
    from specscope.profiler.session.session import Session

    d = json.loads((Path(__file__).resolve().parents[2] / "fixtures" / "session_demo.json").read_text())
    first = summarize(Session.from_dict(_with_tail(d, None)))
    round_ms = first["tokens_per_round"] * first["t_decode_ms"] / first["predicted_speedup"]  # what the model prices
    s = Session.from_dict(_with_tail(d, round_ms, tail=14))
    sm = summarize(s)
    assert sm["predicted_speedup"] == pytest.approx(first["predicted_speedup"], rel=1e-12)  # E and components only
    assert sm["judged_measured_speedup"] == pytest.approx(sm["predicted_speedup"], rel=1e-9)
    assert abs(sm["prediction_error"]) < 1e-9
    assert sm["tail_tokens"] == 14 * len(s.cases)
    # the negative control: against every round (the cheap tail included) the same prediction reads low
    assert sm["predicted_speedup"] / sm["measured_speedup"] - 1 < -0.05
    per_case = [session_case_stats(s, c) for c in s.cases]
    assert all(abs(c["prediction_error"] or 0.0) < 0.2 for c in per_case)
    assert all(c["judged_measured_speedup"] < c["measured_speedup"] for c in per_case)
    text = format_summary(s)
    assert "full rounds" in text and f"{sm['tail_tokens']} tokens" in text


def test_a_session_whose_rounds_are_all_full_judges_every_round():
    import json
    from pathlib import Path

    from specscope.profiler.analysis.summary import summarize
    from specscope.profiler.analysis.summary_text import format_summary
    from specscope.profiler.session.session import Session

    d = json.loads((Path(__file__).resolve().parents[2] / "fixtures" / "session_demo.json").read_text())
    s = Session.from_dict(_with_tail(d, 30.0, tail=0))
    sm = summarize(s)
    assert sm["tail_tokens"] == 0 and sm["judged_measured_speedup"] == sm["measured_speedup"]
    assert "full rounds       " not in format_summary(s)
