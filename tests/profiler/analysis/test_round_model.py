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
