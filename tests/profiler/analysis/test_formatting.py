"""One "format or dash" rule: a dash means not measured; zero is a measurement."""

from specscope.profiler.analysis.formatting import DASH, fmt, scaled


def test_zero_is_a_number_not_a_dash():
    assert fmt(scaled(0.0, 100), "+.1f", "%") == "+0.0%"  # a prediction error of exactly 0 (was shown as a dash)
    assert fmt(scaled(None, 100), "+.1f", "%") == DASH
    assert fmt(0, ".2f", " ms") == "0.00 ms"
    assert fmt(1.23456, ".2f") == "1.23"
