"""The one verdict rule: "agrees" only when the error's whole 95% interval lies within ±5%, "off" only when it lies
wholly beyond, else "too little data to judge" with how much more data would decide it; boundaries at ±4.9% / ±5.1%."""

import pytest

from specscope.profiler.analysis.verdict_rule import AGREE, AGREES, OFF, UNDECIDED, decide


def test_the_tolerance_is_five_percent():
    assert AGREE == 0.05


@pytest.mark.parametrize("interval, state", [
    ([-0.049, 0.049], AGREES),      # ends at ±4.9%: inside
    ([-0.02, 0.049], AGREES),
    ([-0.049, 0.02], AGREES),
    ([-0.02, 0.051], UNDECIDED),    # ends at +5.1%: crosses the boundary
    ([-0.051, 0.02], UNDECIDED),
    ([0.051, 0.09], OFF),           # starts at +5.1%: wholly beyond
    ([-0.09, -0.051], OFF),
    ([0.049, 0.09], UNDECIDED),     # starts at +4.9%: crosses
    ([-0.09, -0.049], UNDECIDED),
    ([-0.2, 0.2], UNDECIDED),       # wide: holds zero, but that decides nothing
])
def test_the_boundaries(interval, state):
    err = sum(interval) / 2
    assert decide(err, interval)["state"] == state


def test_a_point_estimate_alone_never_decides():
    # +0.6% with an interval of -17.5%..+21.2% (tune's old rule printed "agrees within 5%" for this)
    v = decide(0.006, [-0.175, 0.212])
    assert v["state"] == UNDECIDED and "crosses ±5%" in v["text"]
    assert decide(0.001, None)["state"] == UNDECIDED
    # +22.6% with +14.6%..+31.2%: 15 points from zero, wider than ±5% — and plainly off (the old rule called it
    # "too little data" because the interval was wide)
    assert decide(0.226, [0.146, 0.312])["state"] == OFF


def test_no_interval_is_stretched_to_hold_the_point():
    v = decide(0.08, [0.01, 0.04])  # an interval that misses its own point is reported as it is
    assert v["state"] == AGREES and v["interval"] == [0.01, 0.04]


def test_too_few_units_decide_nothing_and_the_data_needed_is_said():
    assert decide(0.0, [-0.01, 0.01], units=3, min_units=8)["state"] == UNDECIDED
    v = decide(0.02, [-0.04, 0.08])  # half-width 6%, 3% of room inside ±5%: (6/3)^2 = 4x the data
    assert v["state"] == UNDECIDED and v["data_needed"] == pytest.approx(4.0) and "4.0× the data" in v["text"]
    v = decide(0.05, [0.0, 0.10])
    assert v["state"] == UNDECIDED and v["data_needed"] is None and "no amount of data" in v["text"]
    assert decide(None, [0, 0])["state"] is None
