"""The division and the statistics, pinned on hand-computed values."""

import pytest

from specscope.profiler.analysis import stats
from specscope.profiler.analysis.round_model import RoundModel


def test_division_k1():
    d = RoundModel(tokens_per_round=1.6, t_decode_ms=10.0, t_verify_ms=18.0, t_draft_ms=2.0)
    assert d.speedup == pytest.approx(0.8) and d.division == pytest.approx(0.8)  # nothing else timed: the same
    assert d.predicted_tok_s == pytest.approx(80.0)
    assert d.break_even_verify_ms == pytest.approx(14.0)  # (1+p)·T_decode − T_draft
    assert d.break_even_multiple == pytest.approx(1.4)
    assert d.verify_multiple == pytest.approx(1.8)


def test_two_pass_verdict_holds_for_every_p():
    # T_verify = 2·T_decode at k=1: speedup ≤ (1+p)/2 ≤ 1 whatever p is.
    for p in (0.0, 0.5, 0.99, 1.0):
        assert RoundModel(1 + p, 10, 20, 0).speedup <= 1.0


def test_acceptance_k3_uses_measured_prefixes_not_iid():
    acc = stats.acceptance_from_rounds([0, 1, 2, 3, 3], k=3)
    assert acc["per_position"] == pytest.approx([0.8, 0.6, 0.4])
    assert acc["tokens_per_round"] == pytest.approx(2.8)
    assert acc["p"] == pytest.approx(9 / 15)
    assert acc["drafted"] == 15 and acc["low_sample"]
    d = RoundModel(acc["tokens_per_round"], 10, 25, 3)
    assert d.speedup == pytest.approx(2.8 * 10 / 28)
    assert d.break_even_verify_ms == pytest.approx(25.0)


def test_wilson_interval():
    lo, hi = stats.wilson_interval(8, 10)
    assert lo == pytest.approx(0.4902, abs=1e-4) and hi == pytest.approx(0.9433, abs=1e-4)
    assert stats.wilson_interval(0, 0) == (0.0, 1.0)
    lo, hi = stats.wilson_interval(0, 50)
    assert lo == pytest.approx(0.0, abs=1e-12) and 0 < hi < 0.1


def test_iid_tokens_per_round():
    assert stats.tokens_per_round_from_p(0.5, 3) == pytest.approx(1.875)
    assert RoundModel(1.0, 10, 20, 0).curve([0.0, 1.0], 1) == pytest.approx([0.5, 1.0])


def test_match_stats():
    assert stats.match_stats([1, 2, 3], [1, 2, 3]) == {"equal": True, "match_rate": 1.0, "first_divergence": None}
    m = stats.match_stats([1, 2, 3, 4], [1, 2, 9, 4])
    assert m["first_divergence"] == 2 and m["match_rate"] == pytest.approx(0.75) and not m["equal"]


def test_alpha_for_tokens_per_round_inverts_the_geometric_e():
    from specscope.profiler.analysis.stats import alpha_for_tokens_per_round, tokens_per_round_from_p

    for k in (1, 2, 4, 7):
        for alpha in (0.0, 0.3, 0.55, 0.9):
            e = tokens_per_round_from_p(alpha, k)
            assert alpha_for_tokens_per_round(e, k) == pytest.approx(alpha, abs=1e-9)
    assert alpha_for_tokens_per_round(1.0, 3) == pytest.approx(0.0, abs=1e-9)
    assert alpha_for_tokens_per_round(9.0, 3) == pytest.approx(1.0, abs=1e-9)  # clamped to k + 1
    assert alpha_for_tokens_per_round(None, 3) is None
